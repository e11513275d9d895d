package ask

import (
	"context"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

func TestClassify(t *testing.T) {
	testCases := []struct {
		desc, question string
		want           questionKind
	}{
		{desc: "when", question: "When does Belgium require B2B e-invoices?", want: askWhen},
		{desc: "from what date", question: "From what date must Belgian companies exchange structured bills?", want: askWhen},
		{desc: "until when", question: "Until when are late adopters spared?", want: askWhen},
		{desc: "by when", question: "By when must Emirati firms pick a provider?", want: askWhen},
		{desc: "which year", question: "By which year must national systems be harmonised?", want: askWhen},
		{desc: "what year", question: "From what year are Polish firms punished?", want: askWhen},
		{desc: "on what date", question: "On what date did Norwegian lawmakers pass the amendments?", want: askWhen},
		{desc: "how much", question: "How much are the Belgian e-invoicing penalties?", want: askAmount},
		{desc: "how many", question: "How many providers were registered?", want: askAmount},
		{desc: "above what threshold", question: "Above what yearly revenue must a German company send structured bills?", want: askAmount},
		{desc: "below what", question: "Below what annual turnover are Malaysian firms exempt?", want: askAmount},
		{desc: "what share", question: "What share of electronic bills must agencies settle quickly?", want: askAmount},
		{desc: "what is the fine", question: "What is the fine for not e-invoicing in Greece?", want: askAmount},
		{desc: "which version", question: "Which XRechnung version is current?", want: askAmount},
		{desc: "who", question: "Who runs the French public directory?", want: askName},
		{desc: "which authority", question: "Which authority receives the tax data?", want: askName},
		{desc: "what is it called", question: "What is the free Croatian app called?", want: askName},
		{desc: "yes-no", question: "Does the United States have an e-invoicing mandate?", want: askYesNo},
		{desc: "yes-no with is", question: "Is XRechnung the same as Peppol BIS Billing?", want: askYesNo},
		{desc: "why", question: "Why did Denmark cancel OIOUBL 3?", want: askReason},
		{desc: "how", question: "How does the SML lookup work?", want: askReason},
		{desc: "what is", question: "What is the FA(3) invoice schema?", want: askWhat},
		{desc: "keywords", question: "Peppol G2 certificates retired", want: askWhat},
		{desc: "follow-up", question: "and when?", want: askWhen},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := classify(tc.question); got != tc.want {
				t.Errorf("classify(%q) = %s, want %s", tc.question, got, tc.want)
			}
		})
	}
}

func TestAnswerSpans(t *testing.T) {
	testCases := []struct {
		desc     string
		kind     questionKind
		sentence string
		want     []string
	}{
		{desc: "full date", kind: askWhen, sentence: "The obligation itself still starts on 1 January 2026.", want: []string{"1 January 2026"}},
		{desc: "month and year, bare year", kind: askWhen, sentence: "Issuing follows from April 2029, reporting in 2032.", want: []string{"April 2029", "2032"}},
		{desc: "euro amounts", kind: askAmount, sentence: "The penalties are set in three tiers: €1,500, €3,000 and €5,000.", want: []string{"€1,500", "€3,000", "€5,000"}},
		{desc: "currency codes and shares", kind: askAmount, sentence: "Sales above PLN 200m, or 95% of invoices.", want: []string{"PLN 200m", "95%"}},
		{desc: "counts with units", kind: askAmount, sentence: "Identifiers of up to 130 characters are allowed.", want: []string{"130 characters"}},
		{desc: "versions", kind: askAmount, sentence: "XRechnung 3.0.2 remains the current version.", want: []string{"3.0.2"}},
		{desc: "names, not the first word alone", kind: askName, sentence: "Invoices are reported to the Federal Tax Authority by EHF providers.", want: []string{"Federal Tax Authority", "EHF"}},
		{desc: "yes-no: a plain no", kind: askYesNo, sentence: "The final order has not been published.", want: []string{"not"}},
		{desc: "yes-no: what the sources do not show is no no", kind: askYesNo, sentence: "Whether the final order was published with those dates is not something our sources show.", want: nil},
		{desc: "yes-no: not confirmed is no no", kind: askYesNo, sentence: "The date has not been confirmed by the ministry.", want: nil},
		{desc: "yes-no: could not confirm is no no", kind: askYesNo, sentence: "We could not confirm whether Congress had validated it.", want: nil},
		{desc: "yes-no: unconfirmed is itself the answer", kind: askYesNo, sentence: "The final order remains unconfirmed.", want: []string{"unconfirmed"}},
		{desc: "yes-no: a no beside what is unknown", kind: askYesNo, sentence: "No date is set, and the rest is not yet confirmed.", want: []string{"No"}},
		{desc: "no span for what", kind: askWhat, sentence: "The obligation itself still starts on 1 January 2026.", want: nil},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var got []string
			for _, sp := range answerSpans(question{kind: tc.kind}, tc.sentence) {
				got = append(got, tc.sentence[sp.start:sp.end])
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("spans %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSummaryLeadsWithTheAnswer asks questions of the real corpus whose
// answer sits in a sentence that is not the best match of the question's
// words, and checks that the summary's first sentence states it, that the
// answer span is verbatim in that sentence, and that every sentence is
// quoted verbatim from the article it cites.
func TestSummaryLeadsWithTheAnswer(t *testing.T) {
	c := realCorpus(t)
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(c)
	bodies := map[string]string{}
	for _, a := range c.Articles {
		bodies[a.Slug] = strings.ReplaceAll(a.Dek+"\n"+a.Body, "**", "")
	}
	testCases := []struct {
		desc, question, answer string
		// row: the answer is a table row, quoted with its header.
		row bool
	}{
		{desc: "when: the date, not the topic sentence", question: "When does Belgium require B2B e-invoices?", answer: "1 January 2026"},
		{desc: "how much: the amounts", question: "How much are the Belgian e-invoicing penalties?", answer: "€1,500"},
		{desc: "threshold", question: "Above what turnover must German businesses issue e-invoices from 2027?", answer: "€800,000"},
		{desc: "when for the smaller group, not the larger", question: "When do French SMEs have to issue e-invoices?", answer: "1 September 2027"},
		{desc: "a table row, by its column's header", question: "When do UAE businesses with AED 50m revenue or more go live?", answer: "1 January 2027", row: true},
		{desc: "the date in full, not its month alone", question: "When do the smallest existing GST-registered businesses in Singapore join InvoiceNow?", answer: "1 April 2028"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			ans, err := e.Ask(context.Background(), Request{Query: tc.question})
			if err != nil {
				t.Fatal(err)
			}
			s := ans.Summary
			if s == nil {
				t.Fatalf("no summary")
			}
			if !strings.Contains(s.Sentences[0].Text, tc.answer) {
				t.Errorf("first sentence %q does not state %s", s.Sentences[0].Text, tc.answer)
			}
			if s.Answer == nil || s.Answer.Sentence != s.Sentences[0].Text || !strings.Contains(s.Answer.Sentence, s.Answer.Text) || s.Answer.URL != s.Sentences[0].URL {
				t.Errorf("answer span %+v is not a span of the first sentence", s.Answer)
			}
			if tc.row && s.Sentences[0].Header == "" {
				t.Errorf("first sentence %q has no table header", s.Sentences[0].Text)
			}
			for _, q := range s.Sentences {
				slug := strings.TrimSuffix(q.URL[strings.LastIndex(strings.TrimSuffix(q.URL, "/"), "/")+1:], "/")
				body := strings.Join(strings.Fields(bodies[slug]), " ")
				if !strings.Contains(body, q.Text) || !strings.Contains(body, q.Header) {
					t.Errorf("%q (header %q) is not verbatim in %s", q.Text, q.Header, slug)
				}
			}
		})
	}
}

func TestDateCompletes(t *testing.T) {
	testCases := []struct {
		desc, full, partial string
		want                bool
	}{
		{desc: "the day added", full: "1 April 2028", partial: "April 2028", want: true},
		{desc: "the year added", full: "24 August 2026", partial: "24 August", want: true},
		{desc: "another day", full: "2 April 2028", partial: "1 April", want: false},
		{desc: "another year", full: "1 April 2029", partial: "April 2028", want: false},
		{desc: "nothing added", full: "1 April 2028", partial: "1 April 2028", want: false},
		{desc: "no year, so not full", full: "24 August", partial: "August", want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			f, ok1 := parseDate(tc.full)
			p, ok2 := parseDate(tc.partial)
			if !ok1 || !ok2 {
				t.Fatalf("parseDate(%q) %v, parseDate(%q) %v", tc.full, ok1, tc.partial, ok2)
			}
			if got := f.completes(p); got != tc.want {
				t.Errorf("%q completes %q = %v, want %v", tc.full, tc.partial, got, tc.want)
			}
		})
	}
}

// engineWithArticle returns an engine over the real corpus and one more
// article, filed under no country or spec, whose words no other article
// uses.
func engineWithArticle(t *testing.T, n int, slug, title, dek, body string) *Engine {
	t.Helper()
	c := realCorpus(t)
	a := contenttest.Article(n)
	a.Slug, a.Title, a.Dek, a.Body = slug, title, dek, body
	a.Countries, a.Specs = nil, nil
	c.Articles = append(c.Articles, a)
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(c)
	return e
}

// askSummary asks question of e and returns its summary, failing when the
// article slug is not the best result or there is no summary.
func askSummary(t *testing.T, e *Engine, question, slug string) *Summary {
	t.Helper()
	ans, err := e.Ask(context.Background(), Request{Query: question})
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Results) == 0 || ans.Results[0].Slug != slug {
		t.Fatalf("%s is not the best result: %+v", slug, ans.Results)
	}
	if ans.Summary == nil {
		t.Fatal("no summary")
	}
	return ans.Summary
}

// TestSentenceFramedByItsArticle checks that a sentence which names only
// the thing asked about ("The current version is 7.4.2") may state the
// answer when its article says the question's other words: the reader's
// question is matched by the article as a whole. Without the article's
// words the sentence covers too little of the question to be quoted, and
// the summary misses the answer.
func TestSentenceFramedByItsArticle(t *testing.T) {
	const slug = "zephyr-courier-envelope-explained"
	e := engineWithArticle(t, 500, slug, "The Zephyr courier envelope explained",
		"Every message between Zephyr relay nodes travels in the courier envelope, which the relay operators' steering group maintains.",
		"The Zephyr courier envelope carries every message between relay nodes and checks its signature before delivery.\n\n"+
			"Relay operators publish their endpoints in a shared register, and each relay node verifies the sender's key with the courier envelope.\n\n"+
			"## Versions\n\n"+
			"The current version is 7.4.2, dated 3 March 2025.\n\n"+
			"Senders that exceed the limit of 64 kilobytes per message are refused, and the operators count 4,800 relay nodes today.\n\n"+
			"Older copies are kept for reference on the group's website, next to the test suite.\n")
	testCases := []struct {
		desc, question, answer string
	}{
		{desc: "which version: the sentence names only the version", question: "Which version of the Zephyr courier envelope do relay nodes use?", answer: "7.4.2"},
		{desc: "when: the sentence names only the date", question: "Since when has the Zephyr courier envelope version in force applied to relay nodes?", answer: "3 March 2025"},
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

// TestGroupAnsweredByItsThreshold checks that a question about which
// parties a rule covers is answered by the threshold that delimits them
// ("more than 4,800 messages a day"), not by another figure of the same
// sentence.
func TestGroupAnsweredByItsThreshold(t *testing.T) {
	const slug = "zephyr-relay-logging-rule"
	e := engineWithArticle(t, 502, slug, "Zephyr relays must keep signed logs",
		"The steering group's logging rule applies to the busiest relays from next year.",
		"From 1 March 2027, Zephyr relay companies that forward more than 4,800 messages a day must keep signed logs and answer 95% of audit requests within ten days.\n\n"+
			"Smaller relays may keep logs voluntarily, and the steering group publishes a reference tool for them.\n")
	testCases := []struct {
		desc, question, answer string
	}{
		{desc: "which companies: the threshold, not the share", question: "Which Zephyr relay companies are covered by the signed logging rule?", answer: "4,800"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			s := askSummary(t, e, tc.question, slug)
			if s.Answer == nil || !strings.HasPrefix(s.Answer.Text, tc.answer) {
				t.Errorf("answer span %+v, want %q", s.Answer, tc.answer)
			}
		})
	}
}

func TestSizeClass(t *testing.T) {
	testCases := []struct {
		desc, text string
		want       int
	}{
		{desc: "large", text: "Large taxpayers: issuing starts on 1 February.", want: sizeLarge},
		{desc: "all other", text: "1 April 2026 | All other taxpayers | Issue invoices through KSeF", want: sizeSmall},
		{desc: "remaining", text: "When did the remaining Polish companies begin?", want: sizeSmall},
		{desc: "SMEs", text: "SMEs follow on 1 September 2027.", want: sizeSmall},
		{desc: "both", text: "Large companies start in 2026, smaller ones in 2027.", want: 0},
		{desc: "neither", text: "Everyone: receiving starts on 1 February too.", want: 0},
		{desc: "a word that only contains one", text: "Microsoft and Bigcommerce publish connectors.", want: 0},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := sizeClass(tc.text); got != tc.want {
				t.Errorf("sizeClass(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
}

// TestAnswerForTheAskedSizeClass checks that a question about the small or
// the remaining businesses is answered by their own date, not by the large
// businesses' date that a sentence with more of the question's words gives,
// and the reverse.
func TestAnswerForTheAskedSizeClass(t *testing.T) {
	const slug = "zephyr-relay-signing-phases"
	e := engineWithArticle(t, 503, slug, "Zephyr relays phase in signed logs",
		"The steering group phases in signed logging by relay size.",
		"Large Zephyr relay companies must start signing their logs on 1 March 2027, the steering group decided.\n\n"+
			"The timetable in brief:\n\n"+
			"- All other relay companies: 1 October 2027.\n")
	testCases := []struct {
		desc, question, answer string
	}{
		{desc: "the remaining ones", question: "When must the remaining Zephyr relay companies start signing their logs?", answer: "1 October 2027"},
		{desc: "the large ones", question: "When must the largest Zephyr relay companies start signing their logs?", answer: "1 March 2027"},
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

// TestUnknownIsNoAnswer asks the real corpus a yes-no question whose
// article says the answer is not known: the "not" of "is not something our
// sources show" must not be given as the answer "no" (a wrong span is worse
// than none), while the summary still quotes the sentence.
func TestUnknownIsNoAnswer(t *testing.T) {
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(realCorpus(t))
	s := askSummary(t, e, "Has Spain published the ministerial order that starts B2B e-invoicing?", "spain-b2b-ministerial-order-what-is-confirmed")
	if s.Answer != nil {
		t.Fatalf("answer %q from %q; want none", s.Answer.Text, s.Answer.Sentence)
	}
	if !strings.Contains(s.Text, "is not something our sources show") {
		t.Fatalf("summary %q does not quote what the sources do not show", s.Text)
	}
}
