package ask

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// The analyzer turns text into index terms. The same code analyses articles
// and questions, so a question matches exactly what indexing produced:
//
//   - a word is a run of letters and digits; "." and "," between two digits
//     stay inside it (versions such as 3.0.2, amounts such as 800,000, which
//     is normalised to 800000), and so does an apostrophe between letters;
//   - words joined by hyphens are indexed one by one and also joined, so
//     "e-invoicing" and "einvoicing" meet; an en dash is a range, not a join;
//   - words are lowercased and their diacritics dropped (eRačun → eracun);
//   - a possessive "'s" is dropped, English stop words are skipped, and so
//     are single letters;
//   - words made only of letters are stemmed with the Snowball English
//     stemmer (github.com/blevesearch/snowballstem); words with digits (b2b,
//     as4, 1.3.16) are kept as they are.

// maxWordBytes bounds one word: longer runs (base64, URLs without
// separators) are cut, so a hostile question cannot make one huge term.
const maxWordBytes = 64

// word is one word of text as the scanner sees it.
type word struct {
	// norm is the word lowercased, folded and without apostrophes.
	norm string
	// raw is the word as written, for case-sensitive checks (country codes).
	raw string
	// joined is true for the concatenation of a hyphenated compound; such a
	// word is indexed but never a stop word and never part of a phrase.
	joined bool
}

// scanWords calls fn for each word of text, in order. Parts of a hyphenated
// compound come first, then the joined form.
func scanWords(text string, fn func(w word)) { scanWordsWith(text, normalize, fn) }

// scanWordsWith is scanWords with the normalisation of a word as written
// done by norm, which must return what normalize returns: the index build
// remembers the words it has normalised (most words of an archive are
// words it has seen), which skips normalize's work and its allocations.
// norm is called for each word as written just before fn is told of it.
func scanWordsWith(text string, norm func(raw string) string, fn func(w word)) {
	var parts []string
	n := len(text)
	i := 0
	for i < n {
		if c := text[i]; c < utf8.RuneSelf && !asciiWord[c] {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		parts = parts[:0]
		for {
			start := i
			i = wordEnd(text, i)
			raw := text[start:i]
			if len(raw) > maxWordBytes {
				raw = truncateUTF8(raw, maxWordBytes)
			}
			nw := norm(raw)
			if nw != "" {
				fn(word{norm: nw, raw: raw})
				parts = append(parts, nw)
			}
			// A hyphen between two word characters joins a compound.
			if i < n && isHyphen(text, i) {
				_, hs := utf8.DecodeRuneInString(text[i:])
				if i+hs < n {
					if nr, _ := utf8.DecodeRuneInString(text[i+hs:]); isWordRune(nr) {
						i += hs
						continue
					}
				}
			}
			break
		}
		if len(parts) > 1 {
			joined := strings.Join(parts, "")
			if len(joined) > maxWordBytes {
				joined = truncateUTF8(joined, maxWordBytes)
			}
			fn(word{norm: joined, raw: joined, joined: true})
		}
	}
}

// wordEnd returns the end of the word that starts at i.
func wordEnd(text string, i int) int {
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

// asciiWord tells the ASCII letters and digits, the bytes isWordRune
// accepts below utf8.RuneSelf.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = isWordRune(rune(c))
	}
	return t
}()

func isWordRune(r rune) bool {
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
// is not safe for concurrent use; the index analyzes articles on several
// goroutines at once, and one shared chain panicked there (slice bounds out
// of range in transform.String) once archives reached 10,000 articles.
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

// normalize lowercases a raw word, drops a possessive and apostrophes, folds
// diacritics and removes the digit-group commas of numbers.
func normalize(raw string) string {
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
	s := raw
	if !ascii {
		s = foldDiacritics(s)
		s = strings.ReplaceAll(s, "’", "'")
	}
	s = strings.ToLower(s)
	s = strings.TrimSuffix(s, "'s")
	if strings.ContainsAny(s, "',") {
		s = strings.Map(func(r rune) rune {
			if r == '\'' || r == ',' {
				return -1
			}
			return r
		}, s)
	}
	// Folding may leave runes that are not letters or digits (a lone
	// combining mark); keep the word only if something is left.
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return s
}

func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// stopWords are English function words that carry no topic. The list is
// the Snowball English stop list without the contractions.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
been before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other ought our ours ourselves out over
own same shall she should so some such than that the their theirs them themselves then there these they
this those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves also might must`) {
		m[w] = true
	}
	return m
}()

// termOf returns the index term of a normalised word, or "" when the word is
// not indexed (a stop word or a single letter).
func termOf(w word, stem func(string) string) string {
	s := w.norm
	if !w.joined && stopWords[s] {
		return ""
	}
	if utf8.RuneCountInString(s) < 2 && !isDigit(rune(s[0])) {
		return ""
	}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return s
		}
	}
	return stem(s)
}

// stemmer stems English words, remembering the words it has seen. It is not
// safe for concurrent use; each build and each query uses its own.
type stemmer struct {
	env   *snowballstem.Env
	cache map[string]string
}

func newStemmer() *stemmer {
	return &stemmer{env: snowballstem.NewEnv(""), cache: map[string]string{}}
}

func (s *stemmer) stem(w string) string {
	if t, ok := s.cache[w]; ok {
		return t
	}
	s.env.SetCurrent(w)
	english.Stem(s.env)
	t := s.env.Current()
	if len(s.cache) < 1<<16 {
		s.cache[w] = t
	}
	return t
}

// Terms returns the index terms of text in order, as the index sees them.
// It is exported for tests and tools (a fuzz target checks its invariants);
// the engine itself calls the same code.
func Terms(text string) []string {
	st := newStemmer()
	var out []string
	scanWords(text, func(w word) {
		if t := termOf(w, st.stem); t != "" {
			out = append(out, t)
		}
	})
	return out
}
