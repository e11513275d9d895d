package ask

import (
	"strings"
	"testing"
)

// TestListItems checks how the items of a list are quoted: an item that
// continues its list's lead-in ("The draft order would:") is quoted with
// that lead-in beside it, never as a sentence of its own; an item that is
// not a sentence and has no lead-in is not quoted; a list of sentences is a
// list of sentences.
func TestListItems(t *testing.T) {
	testCases := []struct {
		desc, body string
		// item is the item's text; wantLead its lead-in ("" for none);
		// wantQuotable whether it may be quoted at all.
		item, wantLead string
		wantQuotable   bool
	}{
		{desc: "an item continuing a lead-in with a colon",
			body: "The draft order would:\n\n- start the clock on 1 October 2026;\n- bring all other businesses in on 1 October 2028.\n",
			item: "bring all other businesses in on 1 October 2028.", wantLead: "The draft order would:", wantQuotable: true},
		{desc: "the first item of such a list",
			body: "The draft order would:\n\n- start the clock on 1 October 2026;\n- bring all other businesses in on 1 October 2028.\n",
			item: "start the clock on 1 October 2026;", wantLead: "The draft order would:", wantQuotable: true},
		{desc: "the lead-in is the last sentence of its paragraph",
			body: "The cabinet met in March. Its letter sets out:\n\n- a domestic B2B start on 1 January 2030;\n- a Peppol-based model.\n",
			item: "a domestic B2B start on 1 January 2030;", wantLead: "Its letter sets out:", wantQuotable: true},
		{desc: "a fragment with no lead-in is not quoted",
			body: "The cabinet met in March.\n\n- a domestic B2B start on 1 January 2030;\n- a Peppol-based model.\n",
			item: "a domestic B2B start on 1 January 2030;"},
		{desc: "a list of sentences is quoted as sentences",
			body: "The rules in brief:\n\n- Large companies start on 1 March 2027.\n- All other companies start on 1 October 2027.\n",
			item: "All other companies start on 1 October 2027.", wantQuotable: true},
		{desc: "the second sentence of an item stands alone",
			body: "The draft order would:\n\n- start the clock on 1 October 2026. The date may move.\n- bring all other businesses in later\n",
			item: "The date may move.", wantQuotable: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			ss := articleSentences("", tc.body)
			for _, s := range ss {
				if s.text != tc.item {
					continue
				}
				lead := ""
				if s.lead >= 0 {
					lead = ss[s.lead].text
				}
				if lead != tc.wantLead || s.quotable() != tc.wantQuotable {
					t.Errorf("lead-in %q, quotable %v; want %q, %v", lead, s.quotable(), tc.wantLead, tc.wantQuotable)
				}
				if s.whole() != (tc.wantQuotable && tc.wantLead == "") {
					t.Errorf("whole %v: only a quotable item without a lead-in reads alone", s.whole())
				}
				return
			}
			t.Fatalf("no sentence %q in %+v", tc.item, ss)
		})
	}
}

// TestListItemQuotedWithLeadIn checks a summary quoting a list item: the
// quote is the item, verbatim, with its lead-in in LeadIn, and the
// summary's text reads the lead-in before it.
func TestListItemQuotedWithLeadIn(t *testing.T) {
	const slug = "zephyr-relay-draft-order"
	e := engineWithArticle(t, 503, slug, "Zephyr relay signing: the draft order",
		"The steering group published a draft order on Zephyr relay signing.",
		"The draft order on Zephyr relay signing would:\n\n"+
			"- start the signing obligation for large Zephyr relay operators on 1 March 2027;\n"+
			"- bring all other Zephyr relay operators in two years later, on 1 March 2029.\n\n"+
			"The steering group will read the comments before it decides.\n")
	testCases := []struct {
		desc, question, wantItem string
	}{
		{desc: "the last item", question: "When must the other Zephyr relay operators start signing?", wantItem: "bring all other Zephyr relay operators in two years later, on 1 March 2029."},
		{desc: "the first item", question: "When must large Zephyr relay operators start signing?", wantItem: "start the signing obligation for large Zephyr relay operators on 1 March 2027;"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			s := askSummary(t, e, tc.question, slug)
			for _, q := range s.Sentences {
				if q.Text != tc.wantItem {
					if strings.HasPrefix(q.Text, "bring ") || strings.HasPrefix(q.Text, "start ") {
						if q.LeadIn == "" {
							t.Errorf("the item %q is quoted without its lead-in", q.Text)
						}
					}
					continue
				}
				if q.LeadIn != "The draft order on Zephyr relay signing would:" {
					t.Errorf("lead_in %q, want the sentence the list continues", q.LeadIn)
				}
				if !strings.Contains(s.Text, q.LeadIn+" "+q.Text) {
					t.Errorf("the summary text does not read the lead-in before the item: %q", s.Text)
				}
				return
			}
			t.Errorf("the item %q is not quoted: %+v", tc.wantItem, s.Sentences)
		})
	}
}
