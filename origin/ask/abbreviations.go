package ask

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Abbreviations an article defines. Articles name a thing in full once and
// by its short form after that: "test certificates of the third-generation
// Peppol PKI (G3)", then "G3 production certificates available". A reader
// asks in the long words ("the third-generation PKI"), so in the sentences
// of that article the short form says them. Only definitions written in the
// article count, each for that article: no list of abbreviations is kept,
// and the same letters may stand for other things elsewhere.

// shortForm is a short form an article defines, with the positions of
// the question's terms that its long form says.
type shortForm struct {
	short string
	pos   []int
}

// shortFormDef matches a parenthesised short form: a capital, then up to
// seven letters, digits or hyphens, with a second capital or a digit
// ("(G3)", "(VID)", "(SBDH)"; not "(Meldesystem)", a name, or "(2019)").
var shortFormDef = regexp.MustCompile(`\(([A-Z][A-Za-z0-9-]{1,7})\)`)

// longFormStop ends a long form, read backwards from its short form: the
// words that open a noun phrase or join it to the rest of the sentence.
var longFormStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the a an of to for by in on at and or with under from its their this that these those is are was were as into over between`) {
		m[w] = true
	}
	return m
}()

// longFormWords is the most words a long form is read back.
const longFormWords = 6

// abbreviations returns the short forms that the sentences of d define
// and whose long forms say words of the question, with those words'
// positions in q.terms.
func (ix *Index) abbreviations(q *query, d *doc, dst []shortForm) []shortForm {
	dst = dst[:0]
	for i := range d.sentenceCount() {
		text := d.sentence(i).text
		if !strings.Contains(text, "(") {
			continue
		}
		for _, m := range shortFormDef.FindAllStringSubmatchIndex(text, -1) {
			short := text[m[2]:m[3]]
			if !abbreviationLike(short) {
				continue
			}
			var pos []int
			scanWords(longForm(short, text[:m[0]]), func(w word) {
				if id, ok := ix.surfaceID(w.norm); ok && id >= 0 {
					if p, asked := q.pos[id]; asked && !containsInt(pos, q.standsFor(p)) {
						pos = append(pos, q.standsFor(p))
					}
				}
			})
			if len(pos) > 0 && !definedAlready(dst, short) {
				dst = append(dst, shortForm{short: short, pos: pos})
			}
		}
	}
	return dst
}

// abbreviationLike reports whether s looks like a short form rather than a
// name: a second capital or a digit after the first.
func abbreviationLike(s string) bool {
	for _, r := range s[1:] {
		if unicode.IsUpper(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// longForm returns the words just before a short form's parenthesis that
// it stands for, or "" when none fits: read back to the word that opens
// the noun phrase, a comma or longFormWords words, the long form is the
// shortest run of those words ending at the parenthesis whose first word
// starts with the short form's first letter and which holds the short
// form's other letters in order (Schwartz and Hearst's rule, 2003; digits
// are not matched, "G3" is the third generation). A hyphenated compound
// counts as a whole: "third-generation Peppol PKI" for "G3". "Council
// Directive (EU) 2025/516" defines nothing.
func longForm(short, before string) string {
	before = strings.TrimRight(before, " ")
	if i := strings.LastIndexAny(before, ",;:()"); i >= 0 {
		before = before[i+1:]
	}
	words := strings.Fields(before)
	first := len(words)
	for first > 0 && len(words)-first < longFormWords && !longFormStop[strings.ToLower(words[first-1])] {
		first--
	}
	var letters []rune
	for _, r := range strings.ToLower(short) {
		if unicode.IsLetter(r) {
			letters = append(letters, r)
		}
	}
	if len(letters) == 0 {
		return ""
	}
	for start := len(words) - 1; start >= first; start-- {
		// The parts of the start word: "third-generation" may start
		// the long form at "generation".
		parts := strings.FieldsFunc(strings.ToLower(words[start]), func(r rune) bool { return r == '-' || r == '/' })
		for k, part := range parts {
			r, _ := utf8.DecodeRuneInString(part)
			if r != letters[0] {
				continue
			}
			rest := strings.Join(parts[k:], "-") + " " + strings.ToLower(strings.Join(words[start+1:], " "))
			if inOrder(letters[1:], rest[len(part):]) {
				return strings.Join(words[start:], " ")
			}
		}
	}
	return ""
}

// inOrder reports whether letters occur in s in that order.
func inOrder(letters []rune, s string) bool {
	for _, r := range s {
		if len(letters) > 0 && r == letters[0] {
			letters = letters[1:]
		}
	}
	return len(letters) == 0
}

func definedAlready(abbrs []shortForm, short string) bool {
	for _, a := range abbrs {
		if a.short == short {
			return true
		}
	}
	return false
}

// shortFormsIn appends to words the question words that the short forms
// of abbrs say in text, at the offsets where text writes them as whole
// words; a sentence that defines a short form says its long form already.
func shortFormsIn(abbrs []shortForm, text string, words []sentenceWord) []sentenceWord {
	for _, a := range abbrs {
		if strings.Contains(text, "("+a.short+")") {
			continue
		}
		for i := 0; ; {
			j := strings.Index(text[i:], a.short)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(a.short)
			before, _ := utf8.DecodeLastRuneInString(text[:start])
			after, _ := utf8.DecodeRuneInString(text[end:])
			if (start == 0 || !isWordRune(before)) && (end == len(text) || !isWordRune(after)) {
				for _, p := range a.pos {
					words = append(words, sentenceWord{pos: p, at: start})
				}
			}
			i = end
		}
	}
	return words
}
