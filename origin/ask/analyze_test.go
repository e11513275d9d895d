package ask

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

func TestTerms(t *testing.T) {
	testCases := []struct {
		desc string
		text string
		want []string
	}{
		{desc: "stemming and stop words", text: "When does Belgium require invoices?", want: []string{"belgium", "requir", "invoic"}},
		{desc: "hyphenated compound: parts and joined form", text: "e-invoicing", want: []string{"invoic", "einvoic"}},
		{desc: "compound with digits", text: "b2b-mandate", want: []string{"b2b", "mandat", "b2bmandate"}},
		{desc: "version numbers stay whole", text: "XRechnung 3.0.2 and artefacts 1.3.16.", want: []string{"xrechnung", "3.0.2", "artefact", "1.3.16"}},
		{desc: "digit groups are joined", text: "above €800,000", want: []string{"800000"}},
		{desc: "diacritics are folded", text: "eRačun", want: []string{"eracun"}},
		{desc: "possessive is dropped", text: "Poland's KSeF", want: []string{"poland", "ksef"}},
		{desc: "curly possessive too", text: "Peppol’s network", want: []string{"peppol", "network"}},
		{desc: "en dash separates a range", text: "RM1m–5m", want: []string{"rm1m", "5m"}},
		{desc: "brackets split", text: "KSeF FA(3)", want: []string{"ksef", "fa", "3"}},
		{desc: "single letters are dropped", text: "a b c G3", want: []string{"g3"}},
		{desc: "May the month is not a stop word", text: "May 2026 release", want: []string{"may", "2026", "releas"}},
		{desc: "only stop words", text: "what is the", want: nil},
		{desc: "us is a stop word, as me is", text: "Tell us about it, tell me", want: []string{"tell", "tell"}},
		{desc: "US in capitals too: the country is an entity term", text: "e-invoicing in the US", want: []string{"invoic", "einvoic"}},
		{desc: "empty", text: "", want: nil},
		{desc: "punctuation only", text: "?!—…", want: nil},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := Terms(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Terms(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestLongWordIsCut(t *testing.T) {
	got := Terms(strings.Repeat("a", 1000) + " " + strings.Repeat("é", 100))
	for _, term := range got {
		if len(term) > maxWordBytes {
			t.Errorf("term of %d bytes", len(term))
		}
	}
}

// fuzzIndex is a small index for FuzzTerms to parse questions against.
var fuzzIndex = sync.OnceValue(func() *Index {
	c := contenttest.Corpus(20)
	return buildIndex(Corpus{Articles: c.Articles, Countries: c.Countries, Specs: c.Specs, Synonyms: c.Synonyms}, "http://localhost:8080")
})

// FuzzTerms checks the analyzer's invariants on any input: it never panics,
// its terms are non-empty valid UTF-8, lower case, without spaces and of
// bounded length, it is deterministic, and parsing the same text as a
// question (with entity detection) never panics either.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{
		"When does Belgium require B2B e-invoices?", "e-invoicing", "3.0.2", "800,000", "eRačun", "Poland's",
		"PINT A-NZ", "Peppol BIS Billing 3.0", "UAE", "BE IT NO US", "a-", "-a", "--", "a--b", "1.", ".1", "1,,2",
		"'s", "x's's", "\u0301", "e\u0301", "\xff\xfe", "İstanbul", "ǅ", "ß", strings.Repeat("x-", 100),
	} {
		f.Add(s)
	}
	ix := fuzzIndex()
	f.Fuzz(func(t *testing.T, s string) {
		terms := Terms(s)
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) || len(term) > maxWordBytes {
				t.Fatalf("bad term %q from %q", term, s)
			}
			if strings.ToLower(term) != term || strings.IndexFunc(term, unicode.IsSpace) >= 0 {
				t.Fatalf("term %q from %q is not lower case or has a space", term, s)
			}
		}
		if again := Terms(s); !reflect.DeepEqual(terms, again) {
			t.Fatalf("Terms(%q) is not deterministic: %q then %q", s, terms, again)
		}
		q := ix.parse(s)
		for _, qt := range q.terms {
			if qt.text == "" || qt.idf < 0 {
				t.Fatalf("bad query term %+v from %q", qt, s)
			}
		}
	})
}

// The index analyzes articles on several goroutines; words with diacritics
// must fold the same on all of them at once. A shared transform chain
// corrupted its own buffers here (run under -race, it reports the race).
func TestNormalizeConcurrent(t *testing.T) {
	words := []string{"Škoda", "façturé", "Ελληνικά", "Zürich", "naïve", "Ålesund", "Łódź", "São"}
	want := make([]string, len(words))
	for i, w := range words {
		want[i] = normalize(w)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 2000; n++ {
				i := n % len(words)
				if got := normalize(words[i]); got != want[i] {
					t.Errorf("normalize(%q) = %q, want %q", words[i], got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestUsIsNotTheUnitedStates asks the real corpus questions that say "us"
// and the same questions with "me": the pronoun must not find the article
// about the United States, which "US" in capitals still names.
func TestUsIsNotTheUnitedStates(t *testing.T) {
	c := realCorpus(t)
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(c)
	const usArticle = "united-states-dbnalliance-explained"
	testCases := []struct {
		desc, question string
		// same is the question "us" must answer as; "" when the best
		// result must be usArticle instead.
		same string
	}{
		{desc: "tell us", question: "Tell us about Peppol access points", same: "Tell me about Peppol access points"},
		{desc: "for us", question: "What does ViDA mean for us?", same: "What does ViDA mean for me?"},
		{desc: "the country in capitals", question: "How does e-invoicing work in the US?"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got := slugs(t, e, tc.question)
			if tc.same == "" {
				if len(got) == 0 || got[0] != usArticle {
					t.Errorf("%q: results %v, want %s first", tc.question, got, usArticle)
				}
				return
			}
			if want := slugs(t, e, tc.same); !reflect.DeepEqual(got, want) {
				t.Errorf("%q: results %v, want those of %q: %v", tc.question, got, tc.same, want)
			}
		})
	}
}
