package mcp

import (
	"slices"
	"testing"
)

// TestWordMatch checks that search_articles matches whole words, by the
// rules of words.go: a query word never matches inside a longer word.
func TestWordMatch(t *testing.T) {
	testCases := []struct {
		query, text string
		want        bool
	}{
		{"ai", "The authority said it will maintain the portal.", false},
		{"ai", "AI agents read the invoices.", true},
		{"ai", "AI-driven validation", true},
		{"ai", "The AI's answer", true},
		{"EU", "A queue of invoices in Europe", false},
		{"EU", "The EU's VAT in the Digital Age package", true},
		{"eu vida", "The EU adopted ViDA.", true},
		{"eu vida", "The EU adopted the directive.", false},
		{"peppol", "OpenPeppol publishes the specifications.", false},
		{"peppol", "Peppol's network grows.", true},
		{"peppol", "the suppliers’ Peppol IDs", true},
		{"suppliers", "the suppliers’ Peppol IDs", true},
		{"invoicing", "Mandatory e-invoicing starts in 2026.", true},
		{"einvoicing", "Mandatory e-invoicing starts in 2026.", true},
		{"E-Invoicing", "Mandatory einvoicing starts in 2026.", true},
		{"e-invoicing", "Mandatory e-invoicing starts in 2026.", true},
		{"e-invoicing", "an e-reporting and invoicing scheme", false},
		{"invoic", "Mandatory e-invoicing starts in 2026.", false},
		{"invoice", "Two invoices were sent.", false},
		{"eracun", "Croatia's eRačun system", true},
		{"eRačun", "Croatia's eracun system", true},
		{"facture électronique", "la facture electronique", true},
		{"ÉLECTRONIQUE", "la facture électronique", true},
		{"croatia", "Croatia's eRačun system", true},
		{"3.0", "Peppol BIS Billing 3.0.20 is out.", false},
		{"3.0.20", "Peppol BIS Billing 3.0.20 is out.", true},
		{"3.0", "Peppol BIS Billing 3.0 is out.", true},
		{"800000", "more than 800,000 businesses", true},
		{"2027", "between 2026–2027", true},
		{"ksef", "Poland’s KSeF", true},
		{"poland", "Poland’s KSeF", true},
		{"b2b", "B2B invoices", true},
		{"b", "B2B invoices", false},
	}
	for _, tc := range testCases {
		if got := newWordMatcher(queryWords(tc.query)).matchAll(tc.text); got != tc.want {
			t.Errorf("query %q in %q: %v, want %v", tc.query, tc.text, got, tc.want)
		}
	}
}

func TestQueryWords(t *testing.T) {
	for q, want := range map[string][]string{
		"  Peppol  peppol PEPPOL ": {"peppol"},
		"e-invoicing in the EU":    {"einvoicing", "in", "the", "eu"},
		"!!! ---":                  nil,
		"eRačun's":                 {"eracun"},
	} {
		if got := queryWords(q); !slices.Equal(got, want) {
			t.Errorf("queryWords(%q) = %q, want %q", q, got, want)
		}
	}
}
