package mcp

import (
	"slices"

	"github.com/invoicewire/invoicewire/internal/words"
)

// The words of a search_articles query are matched as whole words of the
// article (its title, dek, tags and text), never as parts of longer words:
// "ai" does not find "maintain", "EU" does not find "queue". Query and
// article are split into words by package internal/words, the rules /ask's
// index uses too (docs/decisions.md, MCP search words): case and
// diacritics do not count ("eracun" finds "eRačun"), a possessive is
// dropped, and a hyphenated compound is its parts and its joined form, so
// "invoicing" and "einvoicing" both find "e-invoicing". A hyphenated word
// of the query stands for the joined form, so "e-invoicing" finds
// "e-invoicing", "E-Invoicing" and "einvoicing". There is no stemming:
// "invoice" does not find "invoices".

// queryWords returns the distinct words of a query: its plain words, and
// the joined form of each hyphenated compound.
func queryWords(query string) []string {
	var out []string
	words.Scan(query, func(w words.Word) bool {
		if !w.Part && !slices.Contains(out, w.Norm) {
			out = append(out, w.Norm)
		}
		return true
	})
	return out
}

// wordMatcher tells whether a text holds every word of a query.
type wordMatcher struct {
	words []string
	index map[string]int
}

func newWordMatcher(query []string) *wordMatcher {
	m := &wordMatcher{words: query, index: make(map[string]int, len(query))}
	for i, w := range query {
		m.index[w] = i
	}
	return m
}

// matchAll reports whether every word of the query is a word of text
// (parts and joined forms of its compounds included).
func (m *wordMatcher) matchAll(text string) bool {
	if len(m.words) == 0 {
		return true
	}
	found := make([]bool, len(m.words))
	left := len(m.words)
	words.Scan(text, func(w words.Word) bool {
		if i, ok := m.index[w.Norm]; ok && !found[i] {
			found[i] = true
			left--
		}
		return left > 0
	})
	return left == 0
}
