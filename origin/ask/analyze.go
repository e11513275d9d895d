package ask

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"

	"github.com/invoicewire/invoicewire/internal/words"
)

// The analyzer turns text into index terms. The same code analyses articles
// and questions, so a question matches exactly what indexing produced:
//
//   - words are split and normalised by package internal/words (the rules
//     MCP's search shares): letters and digits, versions and amounts kept
//     whole, hyphenated compounds one by one and joined, lowercased and
//     without diacritics or possessives;
//   - English stop words are skipped, and so are single letters;
//   - words made only of letters are stemmed with the Snowball English
//     stemmer (github.com/blevesearch/snowballstem); words with digits (b2b,
//     as4, 1.3.16) are kept as they are.

// maxWordBytes bounds one word: longer runs (base64, URLs without
// separators) are cut, so a hostile question cannot make one huge term.
const maxWordBytes = words.MaxBytes

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
func scanWords(text string, fn func(w word)) { scanWordsWith(text, words.Normalize, fn) }

// scanWordsWith is scanWords with the normalisation of a word as written
// done by norm, which must return what normalize returns: the index build
// remembers the words it has normalised (most words of an archive are
// words it has seen), which skips normalize's work and its allocations.
func scanWordsWith(text string, norm func(raw string) string, fn func(w word)) {
	words.ScanWith(text, norm, func(w words.Word) bool {
		fn(word{norm: w.Norm, raw: w.Raw, joined: w.Joined})
		return true
	})
}

// wordEnd returns the end of the word that starts at i.
func wordEnd(text string, i int) int { return words.End(text, i) }

func isWordRune(r rune) bool { return words.IsWordRune(r) }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// normalize lowercases a raw word, drops a possessive and apostrophes, folds
// diacritics and removes the digit-group commas of numbers.
func normalize(raw string) string { return words.Normalize(raw) }

func truncateUTF8(s string, max int) string { return words.TruncateUTF8(s, max) }

// stopWords are English function words that carry no topic. The list is
// the Snowball English stop list without the contractions, and "us",
// which it lacks: lowercased, "Tell us about…" matched every article that
// writes "US" for the United States. The country is still found in a
// question that writes "US" in capitals, by its code (entities.go), as "it"
// and "no" are.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
been before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other ought our ours ourselves out over
own same shall she should so some such than that the their theirs them themselves then there these they
this those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves also might must us`) {
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
