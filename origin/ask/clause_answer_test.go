package ask

import (
	"context"
	"testing"
)

// TestAnswerSpanReadsItsClause checks that of two dates (or names, or
// amounts) of one sentence, the answer span is the one tied to what the
// question asks: the date of its event ("applies from", "published on",
// "due to report by"), not one a change replaced, the phase it names; and
// that no span is given when the words do not settle which of two spans
// answers, unless they are listed together.
//
// The words of this article are in no other, so they weigh more than a
// real article's; TestReviewerAnswerSpans asks the real corpus.
func TestAnswerSpanReadsItsClause(t *testing.T) {
	const slug = "zephyr-relay-rulebook-dates"
	e := engineWithArticle(t, 504, slug, "Zephyr relay rulebook dates",
		"The Zephyr steering group has set its dates.",
		"The Zephyr courier rulebook 4.2 was published on 3 March 2027 and applies from 1 June 2027, the steering group said.\n\n"+
			"The steering group moved the start of signed relay logging from 2 February to 2 March 2028.\n\n"+
			"The first wave of Zephyr relay operators joins on 1 May 2028; the second wave stays on 1 October 2028.\n\n"+
			"Domestic Zephyr relaying starts on 1 January 2030, ahead of cross-border relaying on 1 July 2030.\n\n"+
			"Zephyr relay audits were held on 4 May 2026 and on 9 June 2026.\n\n"+
			"Zephyr relay inspections took place on 12 March 2026, Zephyr relay certifications on 20 April 2026.\n\n"+
			"Fines for unsigned Zephyr relay logs are €1,500, €3,000 and €5,000.\n")
	testCases := []struct {
		desc, question string
		// answer is the span wanted, "" for none.
		answer string
	}{
		{desc: "applies, not published", question: "When does the Zephyr courier rulebook 4.2 apply?", answer: "1 June 2027"},
		{desc: "published, not applies", question: "When was the Zephyr courier rulebook 4.2 published?", answer: "3 March 2027"},
		{desc: "the new date of a moved start", question: "When does signed relay logging start?", answer: "2 March 2028"},
		{desc: "the second wave", question: "When does the second wave of Zephyr relay operators join?", answer: "1 October 2028"},
		{desc: "the first wave", question: "When does the first wave of Zephyr relay operators join?", answer: "1 May 2028"},
		{desc: "cross-border, not domestic", question: "When does cross-border Zephyr relaying start?", answer: "1 July 2030"},
		{desc: "dates listed together", question: "When were Zephyr relay audits held?", answer: "4 May 2026 and on 9 June 2026"},
		{desc: "two dates nothing tells apart: none", question: "When did Zephyr relay inspections and certifications take place?", answer: ""},
		{desc: "amounts listed together", question: "How much are the fines for unsigned Zephyr relay logs?", answer: "€1,500, €3,000 and €5,000"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			s := askSummary(t, e, tc.question, slug)
			switch {
			case tc.answer == "" && s.Answer != nil:
				t.Errorf("answer span %q in %q, want none", s.Answer.Text, s.Answer.Sentence)
			case tc.answer != "" && s.Answer == nil:
				t.Errorf("no answer span, want %q (first sentence %q)", tc.answer, s.Sentences[0].Text)
			case tc.answer != "" && s.Answer.Text != tc.answer:
				t.Errorf("answer span %q in %q, want %q", s.Answer.Text, s.Answer.Sentence, tc.answer)
			}
		})
	}
}

// TestReviewerAnswerSpans asks the real corpus the questions on which a
// review found the answer span wrong (another date of the same sentence,
// the publication date for "apply", another wave's date, a country's
// demonym) and checks the span now given, or that none is when the
// words do not settle it.
func TestReviewerAnswerSpans(t *testing.T) {
	c := realCorpus(t)
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(c)
	testCases := []struct {
		question string
		prev     []string
		// answer is the span wanted; "" for none.
		answer string
	}{
		{question: "When is the Swedish B2B inquiry report due?", answer: "30 November 2027"},
		{question: "When did FatturaPA 1.9 apply?", answer: "1 April 2025"},
		{question: "When does the UK e-invoicing mandate start?", answer: "April 2029"},
		{question: "When did Greece's first B2B wave start?", answer: "2 March 2026"},
		{question: "When does Greece's second wave start?", answer: "1 October 2026"},
		{question: "When does Slovakia's e-invoicing start?", answer: "1 January 2027"},
		{question: "When did Croatia's Fiscalization 2.0 go live?", answer: "1 January 2026"},
		{question: "When does intra-EU B2B e-invoicing start under ViDA?", answer: "1 July 2030"},
		{question: "When must other Polish taxpayers issue invoices in KSeF?", answer: "1 April 2026"},
		// 1 January 2027 for turnover above €800,000, 1 January 2028 for
		// all: nothing in the question settles which.
		{question: "When must German companies issue e-invoices?", answer: ""},
	}
	for _, tc := range testCases {
		t.Run(tc.question, func(t *testing.T) {
			checkAnswerSpan(t, e, tc.question, tc.prev, tc.answer)
		})
	}
}

// TestAnswerSpanOnTheSubject asks the real corpus about fines and
// penalties in countries whose articles never speak of them: the summary
// may still quote the country's articles, but it gives no answer span (a
// turnover threshold is not a fine, the obligation's start is not when
// penalties apply). A country whose articles do state a fine still gets
// it.
func TestAnswerSpanOnTheSubject(t *testing.T) {
	c := realCorpus(t)
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(c)
	testCases := []struct {
		desc, question string
		prev           []string
		// answer is the span wanted; "" for none.
		answer string
	}{
		{desc: "an amount, no article of the country speaks of fines", question: "How much is the fine in Spain?"},
		{desc: "a date, no article of the country speaks of penalties", question: "When do penalties apply in Spain?"},
		{desc: "a date, another country without fines", question: "When do fines apply in Lithuania?"},
		{desc: "a follow-up about penalties", question: "what about penalties?", prev: []string{"When must Spanish companies start exchanging e-invoices?"}},
		{desc: "the country's articles state the fine", question: "How much is the fine in Greece?", answer: "50%"},
		{desc: "the subject in a synonym", question: "How much are the sanctions in Greece?", answer: "50%"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			checkAnswerSpan(t, e, tc.question, tc.prev, tc.answer)
		})
	}
}

// checkAnswerSpan asks question (after prev) and checks its summary's
// answer span: want, or none when want is "".
func checkAnswerSpan(t *testing.T, e *Engine, question string, prev []string, want string) {
	t.Helper()
	ans, err := e.Ask(context.Background(), Request{Query: question, Prev: prev})
	if err != nil {
		t.Fatal(err)
	}
	s := ans.Summary
	if s == nil {
		t.Fatal("no summary")
	}
	switch {
	case want == "" && s.Answer != nil:
		t.Errorf("answer span %q in %q, want none", s.Answer.Text, s.Answer.Sentence)
	case want != "" && s.Answer == nil:
		t.Errorf("no answer span, want %q (first sentence %q)", want, s.Sentences[0].Text)
	case want != "" && s.Answer.Text != want:
		t.Errorf("answer span %q in %q, want %q", s.Answer.Text, s.Answer.Sentence, want)
	}
}
