// Package words splits text into words by the one set of rules that /ask's
// index and MCP's search_articles share, so a question and an article meet
// on the same words (docs/decisions.md, "MCP search words" and "ask"):
//
//   - a word is a run of Unicode letters, digits and nonspacing marks; "."
//     and "," between two digits stay inside it (versions such as 3.0.2,
//     amounts such as 800,000), and so does an apostrophe (' or ’) between
//     two letters;
//   - words are lowercased and their diacritics dropped after canonical
//     decomposition (eRačun is eracun); a possessive "'s" is dropped, other
//     apostrophes and the commas of numbers are removed (800,000 is 800000);
//   - words joined by hyphens (-, U+2010, U+2011) are reported one by one
//     and then joined, so "e-invoicing" and "einvoicing" meet; an en dash is
//     a range ("2026–2028") and separates words;
//   - a word is cut at MaxBytes, so hostile input (base64, URLs without
//     separators) cannot make one huge word.
//
// Stemming, stop words and matching are the callers' business.
package words

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// MaxBytes bounds one word, and the joined form of a compound.
const MaxBytes = 64

// Word is one word of a text as Scan reports it.
type Word struct {
	// Norm is the word lowercased, folded and without apostrophes.
	Norm string
	// Raw is the word as written (cut at MaxBytes), for case-sensitive
	// checks such as country codes; for a joined compound it is Norm.
	Raw string
	// Part is true for one of the words of a hyphenated compound.
	Part bool
	// Joined is true for the concatenation of a compound's parts, which
	// Scan reports after them.
	Joined bool
}

// Scan calls fn for each word of text, in order, until fn returns false.
// The parts of a hyphenated compound come first, then the joined form.
func Scan(text string, fn func(w Word) bool) { ScanWith(text, Normalize, fn) }

// ScanWith is Scan with the normalisation of a word as written done by
// normalize, which must return what Normalize returns: a caller that sees
// the same words again and again (the /ask index build) remembers them and
// skips Normalize's work and allocations.
func ScanWith(text string, normalize func(raw string) string, fn func(w Word) bool) {
	var parts []string
	n := len(text)
	i := 0
	for i < n {
		if c := text[i]; c < utf8.RuneSelf && !asciiWord[c] {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !IsWordRune(r) {
			i += size
			continue
		}
		parts = parts[:0]
		inCompound := false
		for {
			start := i
			i = End(text, i)
			raw := TruncateUTF8(text[start:i], MaxBytes)
			// A hyphen between two word characters joins a compound.
			next := -1
			if i < n && isHyphen(text, i) {
				_, hs := utf8.DecodeRuneInString(text[i:])
				if i+hs < n {
					if nr, _ := utf8.DecodeRuneInString(text[i+hs:]); IsWordRune(nr) {
						next = i + hs
					}
				}
			}
			if nw := normalize(raw); nw != "" {
				if !fn(Word{Norm: nw, Raw: raw, Part: inCompound || next >= 0}) {
					return
				}
				parts = append(parts, nw)
			}
			if next < 0 {
				break
			}
			i, inCompound = next, true
		}
		if len(parts) > 1 {
			joined := TruncateUTF8(strings.Join(parts, ""), MaxBytes)
			if !fn(Word{Norm: joined, Raw: joined, Joined: true}) {
				return
			}
		}
	}
}

// End returns the end of the word that starts at i.
func End(text string, i int) int {
	n := len(text)
	var prev rune
	for i < n {
		// Letters and digits in ASCII, most of an archive's text, are
		// skipped without decoding.
		if c := text[i]; c < utf8.RuneSelf && asciiWord[c] {
			prev = rune(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if IsWordRune(r) {
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

// asciiWord tells the ASCII letters and digits, the bytes IsWordRune
// accepts below utf8.RuneSelf.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = IsWordRune(rune(c))
	}
	return t
}()

// IsWordRune reports whether r belongs to a word: a letter, a digit or a
// nonspacing mark.
func IsWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// isHyphen reports whether text[i:] starts with a hyphen (ASCII, or the
// Unicode hyphen and non-breaking hyphen). The en dash marks ranges
// ("RM1m–5m", "2028–2030") and does not join.
func isHyphen(text string, i int) bool {
	if text[i] == '-' {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return r == '\u2010' || r == '\u2011'
}

// diacriticFolders hands out transformers that remove combining marks after
// canonical decomposition. A transform chain keeps state between calls and
// is not safe for concurrent use; the /ask index analyzes articles on
// several goroutines at once, and one shared chain panicked there (slice
// bounds out of range in transform.String) once archives reached 10,000
// articles.
var diacriticFolders = sync.Pool{New: func() any {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}}

// foldDiacritics removes the combining marks of s, or returns s unchanged if
// the transform fails.
func foldDiacritics(s string) string {
	t := diacriticFolders.Get().(transform.Transformer)
	defer diacriticFolders.Put(t)
	if folded, _, err := transform.String(t, s); err == nil {
		return folded
	}
	return s
}

// Normalize lowercases a word as written, folds its diacritics, drops a
// possessive "'s" and removes apostrophes and digit-group commas. It
// returns "" when nothing of a letter or digit is left (a lone combining
// mark).
func Normalize(raw string) string {
	ascii, plain := true, true
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= utf8.RuneSelf {
			ascii, plain = false, false
			break
		}
		if ('A' <= c && c <= 'Z') || c == '\'' || c == ',' {
			plain = false
		}
	}
	if plain {
		// The common case: lower-case ASCII letters and digits (the scanner
		// guarantees one of them), possibly with dots between digits.
		return raw
	}
	// Lowercase before folding: some capitals lowercase to a letter and a
	// combining mark (İ is i and U+0307), which the fold then drops.
	s := strings.ToLower(raw)
	if !ascii {
		s = foldDiacritics(s)
		s = strings.ReplaceAll(s, "’", "'")
	}
	s = strings.TrimSuffix(s, "'s")
	if strings.ContainsAny(s, "',") {
		s = strings.Map(func(r rune) rune {
			if r == '\'' || r == ',' {
				return -1
			}
			return r
		}, s)
	}
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return s
}

// TruncateUTF8 cuts s to at most max bytes without splitting a character.
func TruncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
