package ask

import (
	"context"
	"strings"
	"testing"
)

// TestQuotesAreVerbatim answers every eval question and checks that each
// summary sentence and each description is the article's own text: summary
// sentences whole, descriptions whole or clipped with an ellipsis.
func TestQuotesAreVerbatim(t *testing.T) {
	e, err := realEngine()
	if err != nil {
		t.Fatal(err)
	}
	c := realCorpus(t)
	text := map[string]string{} // URL → the article's plain text
	for _, a := range c.Articles {
		var b strings.Builder
		for _, s := range articleSentences(a.Dek, a.Body) {
			b.WriteString(s.text + "\n")
		}
		text[testSiteRoot+a.Path()+"/"] = b.String()
	}
	summaries := 0
	for _, q := range loadEval(t, evalFirst).Questions {
		ans, err := e.Ask(context.Background(), Request{Query: q.Query})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ans.Results {
			d := strings.TrimSuffix(r.Description, "…")
			if d == "" || !strings.Contains(text[r.URL], d) {
				t.Errorf("%s: the description of %s is not from the article: %q", q.ID, r.Slug, r.Description)
			}
		}
		s := ans.Summary
		if s == nil {
			continue
		}
		summaries++
		if n := len(s.Sentences); n < summaryMin || n > summaryMax {
			t.Errorf("%s: %d summary sentences", q.ID, n)
		}
		var joined []string
		for _, sent := range s.Sentences {
			// A list item reads after its lead-in, verbatim too.
			if sent.LeadIn != "" {
				joined = append(joined, sent.LeadIn)
				if !strings.Contains(text[sent.URL], sent.LeadIn) {
					t.Errorf("%s: lead-in %q is not in %s", q.ID, sent.LeadIn, sent.URL)
				}
			}
			joined = append(joined, sent.Text)
			if !strings.Contains(text[sent.URL], sent.Text) {
				t.Errorf("%s: %q is not in %s", q.ID, sent.Text, sent.URL)
			}
			if !containsString(s.Citations, sent.URL) {
				t.Errorf("%s: %s is quoted but not cited", q.ID, sent.URL)
			}
		}
		if s.Text != strings.Join(joined, " ") || s.Type != "SearchSummary" {
			t.Errorf("%s: summary text %q is not its sentences", q.ID, s.Text)
		}
	}
	if summaries < 10 {
		t.Errorf("only %d questions got a summary", summaries)
	}
}

// TestNoSummaryWhenWeak: a vague question, a question about something the
// articles never mention (whose other words they do use: "go out" is a
// synonym of "go live") and a question nothing answers get no summary; the
// last gets no results either.
func TestNoSummaryWhenWeak(t *testing.T) {
	e, err := realEngine()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"invoice", "e-invoicing news", "What is the weather in Paris?", "the and of",
		"When did the podcast go out?", "When will the cafeteria go live?", "Who won the football match?"} {
		ans, err := e.Ask(context.Background(), Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if ans.Summary != nil {
			t.Errorf("%q got a summary: %q", q, ans.Summary.Text)
		}
		for _, r := range ans.Results {
			if r.Score >= summaryMinScore {
				t.Errorf("%q: %s scores %d", q, r.Slug, r.Score)
			}
		}
	}
	ans, _ := e.Ask(context.Background(), Request{Query: "quantum chromodynamics"})
	if len(ans.Results) != 0 || ans.Summary != nil || len(ans.Items()) != 0 {
		t.Errorf("an unanswerable question got %d results", len(ans.Results))
	}
}
