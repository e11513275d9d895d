package mcp

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// The words of a search_articles query are matched as whole words of the
// article (its title, dek, tags and text), never as parts of longer words:
// "ai" does not find "maintain", "EU" does not find "queue". Query and
// article are split into words by the same rules (docs/decisions.md, MCP
// search words):
//
//   - a word is a run of Unicode letters, digits and combining marks; "."
//     and "," between two digits stay inside it (3.0.2, 800,000), and so
//     does an apostrophe (' or ’) between two letters;
//   - case and diacritics do not count: words are lowercased and their
//     combining marks dropped after canonical decomposition, so "eracun"
//     finds "eRačun" and "facture electronique" finds "facture électronique";
//   - a possessive "'s" is dropped ("Peppol's" is the word "peppol"), other
//     apostrophes and the commas of numbers are removed (800,000 is
//     800000);
//   - words joined by hyphens (-, U+2010, U+2011) are words one by one and
//     also joined: "invoicing" and "einvoicing" both find "e-invoicing". A
//     hyphenated word of the query stands for the joined form, so
//     "e-invoicing" finds "e-invoicing", "E-Invoicing" and "einvoicing".
//     An en dash (a range, "2026–2028") separates words;
//   - there is no stemming: "invoice" does not find "invoices".

// wordForm is one word as the scanner reports it.
type wordForm struct {
	norm string
	// part is true for a part of a hyphenated compound; the compound's
	// joined form follows its parts, with part false and joined true.
	part, joined bool
}

// scanWords calls fn for each word of text, in order, until fn returns
// false. The parts of a hyphenated compound come first, then the joined
// form. text should already be lowercased (normalizeWord lowercases what
// it must change anyway, but a lowercase ASCII word is then returned as a
// substring of text, without allocating).
func scanWords(text string, fn func(w wordForm) bool) {
	var parts []string
	n := len(text)
	i := 0
	for i < n {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		parts = parts[:0]
		for {
			start := i
			i = wordEnd(text, i)
			if w := normalizeWord(text[start:i]); w != "" {
				parts = append(parts, w)
			}
			// A hyphen between two word characters joins a compound.
			if i < n {
				if hr, hs := utf8.DecodeRuneInString(text[i:]); isHyphen(hr) && i+hs < n {
					if nr, _ := utf8.DecodeRuneInString(text[i+hs:]); isWordRune(nr) {
						i += hs
						continue
					}
				}
			}
			break
		}
		if len(parts) == 1 {
			if !fn(wordForm{norm: parts[0]}) {
				return
			}
			continue
		}
		for _, p := range parts {
			if !fn(wordForm{norm: p, part: true}) {
				return
			}
		}
		if len(parts) > 1 && !fn(wordForm{norm: strings.Join(parts, ""), joined: true}) {
			return
		}
	}
}

// wordEnd returns the end of the word that starts at i.
func wordEnd(text string, i int) int {
	n := len(text)
	var prev rune
	for i < n {
		r, size := utf8.DecodeRuneInString(text[i:])
		if isWordRune(r) {
			prev = r
			i += size
			continue
		}
		if i+size < n {
			next, _ := utf8.DecodeRuneInString(text[i+size:])
			switch {
			case (r == '.' || r == ',') && isDigit(prev) && isDigit(next):
				prev = r
				i += size
				continue
			case (r == '\'' || r == '’') && unicode.IsLetter(prev) && unicode.IsLetter(next):
				prev = r
				i += size
				continue
			}
		}
		break
	}
	return i
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

// isHyphen reports whether r joins the words of a compound: the ASCII
// hyphen-minus, the Unicode hyphen and the non-breaking hyphen.
func isHyphen(r rune) bool { return r == '-' || r == '\u2010' || r == '\u2011' }

// diacriticFolders hands out transformers that remove combining marks after
// canonical decomposition; a transform chain keeps state between calls, so
// concurrent searches each take their own.
var diacriticFolders = sync.Pool{New: func() any {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}}

func foldDiacritics(s string) string {
	t := diacriticFolders.Get().(transform.Transformer)
	defer diacriticFolders.Put(t)
	if folded, _, err := transform.String(t, s); err == nil {
		return folded
	}
	return s
}

// normalizeWord lowercases a word as written, folds its diacritics, drops a
// possessive "'s" and removes apostrophes and digit-group commas. It
// returns "" when nothing of a letter or digit is left (a lone combining
// mark).
func normalizeWord(raw string) string {
	plain := true
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') || c == '\'' || c == ',' {
			plain = false
			break
		}
	}
	if plain {
		return raw // lowercase ASCII letters and digits, maybe dots between digits
	}
	s := strings.ToLower(foldDiacritics(raw))
	s = strings.ReplaceAll(s, "’", "'")
	s = strings.TrimSuffix(s, "'s")
	if strings.ContainsAny(s, "',") {
		s = strings.Map(func(r rune) rune {
			if r == '\'' || r == ',' {
				return -1
			}
			return r
		}, s)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return s
}

// queryWords returns the distinct words of a query: its plain words, and
// the joined form of each hyphenated compound.
func queryWords(query string) []string {
	var out []string
	scanWords(strings.ToLower(query), func(w wordForm) bool {
		if !w.part && !containsString(out, w.norm) {
			out = append(out, w.norm)
		}
		return true
	})
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// wordMatcher tells whether a text holds every word of a query.
type wordMatcher struct {
	words []string
	index map[string]int
}

func newWordMatcher(words []string) *wordMatcher {
	m := &wordMatcher{words: words, index: make(map[string]int, len(words))}
	for i, w := range words {
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
	scanWords(strings.ToLower(text), func(w wordForm) bool {
		if i, ok := m.index[w.norm]; ok && !found[i] {
			found[i] = true
			left--
		}
		return left > 0
	})
	return left == 0
}
