package ask

import (
	"testing"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

// TestRelativeToWriting checks which words place something in time from
// the day they were written.
func TestRelativeToWriting(t *testing.T) {
	testCases := []struct {
		desc, text string
		want       bool
	}{
		{desc: "next year", text: "The obligation starts in January next year.", want: true},
		{desc: "last month", text: "The ministry published the draft last month.", want: true},
		{desc: "in six weeks", text: "Poland's KSeF becomes mandatory in six weeks.", want: true},
		{desc: "two months ago", text: "The consultation closed two months ago.", want: true},
		{desc: "today", text: "The new schema applies from today.", want: true},
		{desc: "a dated sentence", text: "The obligation starts on 1 January 2027.", want: false},
		{desc: "a rule's period, not the writer's", text: "Companies must register within six months of incorporation.", want: false},
		{desc: "a period after an event", text: "Invoices must be issued within 14 days after delivery.", want: false},
		{desc: "a fiscal year is no relative time", text: "The threshold applies to the last financial year's turnover.", want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := relativeToWriting(tc.text); got != tc.want {
				t.Errorf("relativeToWriting(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

// TestRelativeQuoteCarriesItsDate checks that a summary quoting a sentence
// in relative time ("next year") gives its article's date with it, on the
// quote and on the answer, and that a dated sentence carries none.
func TestRelativeQuoteCarriesItsDate(t *testing.T) {
	testCases := []struct {
		desc, slug, body, question string
		wantDated                  bool
	}{
		{desc: "next year", slug: "zephyr-relay-signing-next-year",
			body:     "Zephyr relay operators must start signing their logs in March next year, the steering group said.\n\nThe steering group will publish the technical rules in the spring.\n",
			question: "When must Zephyr relay operators start signing their logs?", wantDated: true},
		{desc: "last month", slug: "zephyr-relay-signing-last-month",
			body:     "The steering group approved signed Zephyr relay logs last month, with a start on 1 March 2027.\n\nThe steering group will publish the technical rules in the spring.\n",
			question: "When must Zephyr relay operators start signing their logs?", wantDated: true},
		{desc: "a dated sentence carries no date", slug: "zephyr-relay-signing-dated",
			body:     "Zephyr relay operators must start signing their logs on 1 March 2027, the steering group said.\n\nThe steering group will publish the technical rules in the spring.\n",
			question: "When must Zephyr relay operators start signing their logs?"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			e := engineWithArticle(t, 503, tc.slug, "Zephyr relays to sign their logs", "The steering group decided on signed Zephyr relay logs.", tc.body)
			s := askSummary(t, e, tc.question, tc.slug)
			published := contenttest.Article(503).PublishedAt
			lead := s.Sentences[0]
			if got := lead.DatePublished != nil; got != tc.wantDated {
				t.Fatalf("quote %q carries a date: %v, want %v", lead.Text, got, tc.wantDated)
			}
			if !tc.wantDated {
				return
			}
			if !lead.DatePublished.Equal(published) {
				t.Errorf("quote dated %v, want its article's %v", lead.DatePublished, published)
			}
			if s.Answer != nil && (s.Answer.DatePublished == nil || !s.Answer.DatePublished.Equal(published)) {
				t.Errorf("the answer %q does not carry its sentence's date", s.Answer.Text)
			}
		})
	}
}
