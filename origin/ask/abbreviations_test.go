package ask

import (
	"strings"
	"testing"
)

func TestLongForm(t *testing.T) {
	testCases := []struct {
		desc, short, before, want string
	}{
		{desc: "a compound starts it", short: "G3", before: "test certificates of the third-generation Peppol PKI ", want: "third-generation Peppol PKI"},
		{desc: "initials", short: "SBDH", before: "wrapped in an envelope, the Standard Business Document Header ", want: "Standard Business Document Header"},
		{desc: "the shortest that fits", short: "PKI", before: "a move to the Peppol Public Key Infrastructure ", want: "Public Key Infrastructure"},
		{desc: "a legal citation defines nothing", short: "EU", before: "It consists of Council Directive ", want: ""},
		{desc: "letters not in the words", short: "BMF", before: "Germany's Federal Ministry of Finance ", want: ""},
		{desc: "not past a comma", short: "SR", before: "the Revenue, State ", want: ""},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := longForm(tc.short, tc.before); got != tc.want {
				t.Errorf("longForm(%q, %q) = %q, want %q", tc.short, tc.before, got, tc.want)
			}
		})
	}
}

// TestAnswerThroughShortForm checks that a sentence which states the answer
// with a short form its article defines ("QZ2 production keys") answers a
// question asked in the long form's words, and that a short form defined
// in another article does not.
func TestAnswerThroughShortForm(t *testing.T) {
	const slug = "zephyr-keyring-rollover"
	e := engineWithArticle(t, 501, slug, "Zephyr relays start the keyring rollover",
		"Relay operators get new signing keys this year and must switch before the old keyring is revoked.",
		"Under the operators' rollover plan, test keys of the quantum-resistant Zephyr keyring (QZ2) became available on 4 May 2026.\n\n"+
			"## The dates in the plan\n\n"+
			"- 4 May 2026: test keys available for every relay.\n"+
			"- 9 September 2026: QZ2 production keys available.\n"+
			"- 1 December 2026: the old keyring is revoked and relays without new keys stop.\n")
	testCases := []struct {
		desc, question, answer string
	}{
		{desc: "the short form says the long form's words", question: "When can operators fetch production keys for the quantum-resistant keyring?", answer: "9 September 2026"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			s := askSummary(t, e, tc.question, slug)
			if !strings.Contains(s.Sentences[0].Text, tc.answer) {
				t.Errorf("first sentence %q does not state %s (summary %q)", s.Sentences[0].Text, tc.answer, s.Text)
			}
		})
	}
}
