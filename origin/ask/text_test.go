package ask

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
)

func TestSplitSentences(t *testing.T) {
	testCases := []struct {
		desc string
		text string
		want []string
	}{
		{desc: "two sentences", text: "It starts in 2026. Fines follow.", want: []string{"It starts in 2026.", "Fines follow."}},
		{desc: "versions and decimals do not split", text: "Version 3.0.2 applies. Rates are 0.9% and 0.1%.", want: []string{"Version 3.0.2 applies.", "Rates are 0.9% and 0.1%."}},
		{desc: "abbreviation", text: "Several codes, e.g. TD29, are new. Check them.", want: []string{"Several codes, e.g. TD29, are new.", "Check them."}},
		{desc: "lower case after a full stop does not split", text: "See art. 5 of the law. Done.", want: []string{"See art. 5 of the law.", "Done."}},
		{desc: "question and quote", text: `Is it "ready?" Nobody knows! Maybe.`, want: []string{`Is it "ready?"`, "Nobody knows!", "Maybe."}},
		{desc: "digit starts a sentence", text: "The list grew. 101 providers are on it.", want: []string{"The list grew.", "101 providers are on it."}},
		{desc: "initial", text: "Written by J. Smith. Read it.", want: []string{"Written by J. Smith.", "Read it."}},
		{desc: "no terminal punctuation", text: "A heading", want: []string{"A heading"}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := splitSentences(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMarkdownBlocks(t *testing.T) {
	md := "First **bold** line\ncontinues [a link](https://example.com/x) here.\n\n" +
		"## A heading\n\n" +
		"- **1 January 2027:** issuing starts.\n  It continues.\n- Second item.\n" +
		"1. Numbered item.\n\n" +
		"| From | Who |\n|---|---|\n| 1 February 2026 | All taxpayers |\n\n" +
		"> A quote.\n"
	want := []block{
		{text: "First bold line continues a link here.", kind: kindPara},
		{text: "A heading", kind: kindHeading},
		{text: "1 January 2027: issuing starts. It continues.", kind: kindItem},
		{text: "Second item.", kind: kindItem},
		{text: "Numbered item.", kind: kindItem},
		{text: "From | Who", kind: kindTableHead},
		{text: "1 February 2026 | All taxpayers", kind: kindTable},
		{text: "A quote.", kind: kindPara},
	}
	if got := markdownBlocks(md); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestArticleSentences(t *testing.T) {
	got := articleSentences("One. Two.", "Body **here**. More.\n\n## H\n\n| From | Who |\n|---|---|\n| 1 April 2026 | **All** other  taxpayers |\n\nAfter.")
	want := []sentence{
		{text: "One.", kind: kindDek, head: -1, lead: -1}, {text: "Two.", kind: kindDek, head: -1, lead: -1},
		{text: "Body here.", kind: kindPara, head: -1, lead: -1}, {text: "More.", kind: kindPara, head: -1, lead: -1},
		{text: "H", kind: kindHeading, head: -1, lead: -1},
		{text: "From | Who", kind: kindTableHead, head: -1, lead: -1},
		// A row points at its header; its text is verbatim in the
		// article's plain text (cells as written, " | " between).
		{text: "1 April 2026 | All other taxpayers", kind: kindTable, head: 5, lead: -1},
		{text: "After.", kind: kindPara, head: -1, lead: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got[4].quotable() || !got[0].quotable() || got[5].quotable() || got[6].quotable() {
		t.Error("a heading or a table row is quotable as a sentence, or the dek is not")
	}
}

func TestClip(t *testing.T) {
	s := strings.Repeat("word ", 100)
	got := clip(s, maxSnippet)
	if len(got) > maxSnippet || !strings.HasSuffix(got, "…") || strings.Contains(got, "wor…") {
		t.Errorf("clip gave %d bytes: %q", len(got), got)
	}
	if got := clip("short", maxSnippet); got != "short" {
		t.Errorf("clip changed a short text: %q", got)
	}
}

func TestEntities(t *testing.T) {
	countries := []*content.Country{
		{Code: "be", Name: "Belgium", Aliases: []string{"Belgian"}}, {Code: "no", Name: "Norway"}, {Code: "it", Name: "Italy"},
		{Code: "au", Name: "Australia"}, {Code: "nz", Name: "New Zealand", Aliases: []string{"Kiwi"}},
		{Code: "ae", Name: "United Arab Emirates", Aliases: []string{"UAE", "Emirati"}},
		{Code: "us", Name: "United States", Aliases: []string{"US", "American"}}, {Code: "gb", Name: "United Kingdom", Aliases: []string{"UK", "Britain"}},
		{Code: "nl", Name: "Netherlands", Aliases: []string{"Dutch", "Holland"}},
		{Code: "mx", Name: "Mexico", Aliases: []string{"SAT"}},
	}
	specs := []*content.Spec{
		{Slug: "peppol-pint", Name: "Peppol International Invoice (PINT)"},
		{Slug: "pint-ae", Name: "PINT AE (United Arab Emirates)"},
		{Slug: "pint-anz", Name: "PINT A-NZ (Australia and New Zealand)"},
		{Slug: "peppol-bis-billing-3", Name: "Peppol BIS Billing 3.0"},
		{Slug: "ksef-fa3", Name: "KSeF FA(3)"},
		{Slug: "zugferd-facturx", Name: "ZUGFeRD / Factur-X"},
		{Slug: "peppol-directory", Name: "Peppol Directory"},
		{Slug: "xrechnung", Name: "XRechnung", Aliases: []string{"German federal CIUS"}},
	}
	m := newEntityMatcher(countries, specs)
	testCases := []struct {
		desc string
		text string
		want []string
	}{
		{desc: "country name", text: "When does Belgium start?", want: []string{"cc:be"}},
		{desc: "demonym", text: "Belgian companies", want: []string{"cc:be"}},
		{desc: "code in capitals", text: "rules in BE and NO", want: []string{"cc:be", "cc:no"}},
		{desc: "code-like English words in lower case", text: "be it no us", want: nil},
		{desc: "alias", text: "the UK and the UAE", want: []string{"cc:gb", "cc:ae"}},
		{desc: "informal names and demonyms from aliases.yaml", text: "Dutch firms in Holland, Kiwi agencies", want: []string{"cc:nl", "cc:nz"}},
		{desc: "a short abbreviation counts only as written", text: "the SAT checks what US firms sat on; tell us", want: []string{"cc:mx", "cc:us"}},
		{desc: "spec alias from aliases.yaml", text: "the German federal CIUS", want: []string{"spec:xrechnung"}},
		{desc: "multi-word name", text: "in the United Arab Emirates", want: []string{"cc:ae", "spec:pint-ae"}},
		{desc: "longer spec alias wins over the shorter one", text: "PINT AE fields", want: []string{"spec:pint-ae", "cc:ae"}},
		{desc: "spec parenthesis keeps the countries", text: "Australia and New Zealand", want: []string{"spec:pint-anz", "cc:au", "cc:nz"}},
		{desc: "name without Peppol", text: "BIS Billing 3.0 release", want: []string{"spec:peppol-bis-billing-3"}},
		{desc: "a bare digit is no alias", text: "3 things", want: nil},
		{desc: "slash alternatives", text: "Factur-X invoices", want: []string{"spec:zugferd-facturx"}},
		{desc: "Peppol alone names no spec", text: "directory of Peppol", want: nil},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var seq, raw []string
			scanWords(tc.text, func(w word) {
				if !w.joined {
					seq, raw = append(seq, w.norm), append(raw, w.raw)
				}
			})
			got := m.match(seq, raw)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("match(%q) = %q, want %q", tc.text, got, want)
			}
		})
	}
}
