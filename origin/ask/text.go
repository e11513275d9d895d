package ask

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Snippets and summaries quote articles verbatim, so they are cut from the
// article's own text: the markdown body reduced to plain text (emphasis
// markers and link targets dropped, words untouched) and split into
// sentences. Headings and table rows are kept apart: a heading is a label,
// never quoted; a table row is quoted only as the answer to a question of
// its cells' kind, with the table's header row beside it (summary.go).
// A row's text is its cells as the article writes them, joined by " | ",
// so that it is verbatim in the article's plain text.

// Kinds of sentence, by the markdown block they come from.
const (
	kindDek       uint8 = iota // the standfirst
	kindPara                   // a paragraph
	kindItem                   // a list item
	kindHeading                // a heading: never quoted
	kindTable                  // a table row: quoted only as an answer
	kindTableHead              // a table's header row: never quoted
)

// sentence is one sentence of an article, in plain text. Once indexed,
// start and end delimit its term ids in its doc's ids.
type sentence struct {
	text       string
	kind       uint8
	start, end uint32
	// head is, for a table row, the index of its table's header row among
	// the article's sentences, or -1.
	head int32
	// lead is, for the first sentence of a list item that continues the
	// sentence before its list (a lead-in ending with a colon: "The draft
	// order would:"), that sentence's index among the article's
	// sentences, or -1. Such an item is quoted with its lead-in beside it
	// (Quote.LeadIn), as a row with its header.
	lead int32
	// fragment is set on a list item that is not a sentence and has no
	// lead-in to complete it ("a domestic B2B start on 1 January 2030;"
	// after a paragraph that does not introduce it): never quoted.
	fragment bool
	// refersBack is set on a quotable sentence that opens by referring to
	// the one before (the refersBack pattern): it is matched once when the
	// article is analysed, not for every answer that reads it.
	refersBack bool
}

// quotable reports whether s may appear in a summary: a sentence, or a list
// item quoted with its lead-in.
func (s sentence) quotable() bool { return s.kind <= kindItem && !s.fragment }

// whole reports whether s reads as a sentence on its own: quotable and not
// a list item that needs its lead-in. Snippets and a summary's context
// sentences are whole.
func (s sentence) whole() bool { return s.quotable() && s.lead < 0 }

// articleSentences returns the sentences of the dek and of a markdown body
// in reading order.
//
// A list whose items continue the sentence before it ("The draft order
// would: - start the clock on 1 October 2026; - bring all other businesses
// in two years later, on 1 October 2028.") is not a list of sentences: an
// item quoted alone reads as a statement it is not ("bring all other
// businesses in…" is what a draft would do). When the sentence before such
// a list ends with a colon, each item's first sentence keeps that lead-in
// (sentence.lead) and is quoted with it; an item that is not a sentence and
// has no such lead-in is a fragment, never quoted. A list continues its
// lead-in when one of its items is not a sentence: it opens in lower case,
// or ends without a full stop, a question or an exclamation mark.
func articleSentences(dek, body string) []sentence {
	var out []sentence
	for _, s := range splitSentences(strings.TrimSpace(dek)) {
		out = append(out, sentence{text: s, kind: kindDek, head: -1, lead: -1})
	}
	head := int32(-1)
	blocks := markdownBlocks(body)
	lead, continues := int32(-1), false // the list's lead-in, while in a list
	for i, b := range blocks {
		if b.kind == kindItem {
			if i == 0 || blocks[i-1].kind != kindItem {
				continues = listContinues(blocks[i:])
				lead = -1
				if continues && i > 0 && blocks[i-1].kind == kindPara && strings.HasSuffix(out[len(out)-1].text, ":") {
					lead = int32(len(out) - 1)
				}
			}
			for k, s := range splitSentences(b.text) {
				sen := sentence{text: s, kind: kindItem, head: -1, lead: -1}
				if k == 0 && continues {
					sen.lead = lead
					sen.fragment = lead < 0 && notSentence(b.text)
				}
				out = append(out, sen)
			}
			continue
		}
		switch b.kind {
		case kindTableHead:
			head = int32(len(out))
			out = append(out, sentence{text: b.text, kind: b.kind, head: -1, lead: -1})
			continue
		case kindTable:
			out = append(out, sentence{text: b.text, kind: b.kind, head: head, lead: -1})
			continue
		}
		head = -1
		if b.kind == kindHeading {
			out = append(out, sentence{text: b.text, kind: b.kind, head: -1, lead: -1})
			continue
		}
		for _, s := range splitSentences(b.text) {
			out = append(out, sentence{text: s, kind: b.kind, head: -1, lead: -1})
		}
	}
	return out
}

// listContinues reports whether the list that opens blocks continues the
// sentence before it: one of its items is not a sentence.
func listContinues(blocks []block) bool {
	for _, b := range blocks {
		if b.kind != kindItem {
			return false
		}
		if notSentence(b.text) {
			return true
		}
	}
	return false
}

// notSentence reports whether a list item's text is not a sentence: it
// opens with a lower-case letter, or does not end with a full stop, a
// question mark or an exclamation mark.
func notSentence(text string) bool {
	r, _ := utf8.DecodeRuneInString(text)
	end := strings.TrimRight(text, `"')]”’`)
	return unicode.IsLower(r) || !(strings.HasSuffix(end, ".") || strings.HasSuffix(end, "?") || strings.HasSuffix(end, "!"))
}

type block struct {
	text string
	kind uint8
}

// markdownBlocks splits a CommonMark body into paragraphs, list items,
// headings and table rows, with inline markup removed. It handles the subset
// the editors use (docs/architecture.md content tree); anything else reads as text.
func markdownBlocks(body string) []block {
	var blocks []block
	var cur []string
	curKind := kindPara
	flush := func() {
		if len(cur) > 0 {
			if t := strings.TrimSpace(stripInline(strings.Join(cur, " "))); t != "" {
				blocks = append(blocks, block{text: t, kind: curKind})
			}
		}
		// The lines were joined: the slice serves the next block.
		cur, curKind = cur[:0], kindPara
	}
	for line := range strings.SplitSeq(body, "\n") {
		line = strings.TrimRight(line, " \t\r")
		trimmed := strings.TrimLeft(line, " \t")
		switch {
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "#"):
			flush()
			cur, curKind = append(cur, strings.TrimLeft(trimmed, "# ")), kindHeading
			flush()
		case strings.HasPrefix(trimmed, "|"):
			flush()
			if isTableRule(trimmed) {
				// The row above the rule is the table's header.
				if n := len(blocks); n > 0 && blocks[n-1].kind == kindTable {
					blocks[n-1].kind = kindTableHead
				}
				continue
			}
			cells := strings.Split(strings.Trim(trimmed, "|"), "|")
			for i := range cells {
				cells[i] = strings.Join(strings.Fields(cells[i]), " ")
			}
			cur, curKind = append(cur, strings.Join(cells, cellSeparator)), kindTable
			flush()
		case listMarker(trimmed) > 0:
			flush()
			cur, curKind = append(cur, trimmed[listMarker(trimmed):]), kindItem
		case strings.HasPrefix(trimmed, "> "):
			if curKind != kindPara {
				flush()
			}
			cur = append(cur, trimmed[2:])
		default:
			// A continuation line: indented under a list item, or the next
			// line of a paragraph (or a lazy continuation of an item).
			cur = append(cur, trimmed)
		}
	}
	flush()
	return blocks
}

// listMarker returns the length of a list marker ("- ", "* ", "12. ") at the
// start of s, or 0.
func listMarker(s string) int {
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' ' {
		return 2
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' ' {
		return i + 2
	}
	return 0
}

func isTableRule(s string) bool {
	return strings.Trim(s, "|-: ") == ""
}

// stripInline removes emphasis markers and code spans' backticks and turns
// links and images into their text.
func stripInline(s string) string {
	if !strings.ContainsAny(s, "*_`[") {
		return s
	}
	// The text between markup is copied a run at a time: every block of
	// every article goes through here when the index is built.
	var b strings.Builder
	b.Grow(len(s))
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '*' || c == '`':
		case c == '_' && i+1 < len(s) && s[i+1] == '_':
		case c == '!' && i+1 < len(s) && s[i+1] == '[':
		case c == '[':
			// [text](target) → text
			end := strings.IndexByte(s[i:], ']')
			if end > 0 && i+end+1 < len(s) && s[i+end+1] == '(' {
				if close := strings.IndexByte(s[i+end+1:], ')'); close > 0 {
					b.WriteString(s[start:i])
					b.WriteString(s[i+1 : i+end])
					i += end + 1 + close
					start = i + 1
				}
			}
			continue
		default:
			continue
		}
		// c (and the second "_" of "__") is dropped.
		b.WriteString(s[start:i])
		if c == '_' {
			i++
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	return b.String()
}

// abbreviations end with a full stop that does not end a sentence.
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "etc": true, "vs": true, "cf": true, "no": true, "nr": true, "art": true,
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "inc": true, "ltd": true, "co": true,
	"approx": true, "fig": true, "jan": true, "feb": true, "mar": true, "apr": true, "jun": true,
	"jul": true, "aug": true, "sep": true, "sept": true, "oct": true, "nov": true, "dec": true,
}

// splitSentences splits plain text after ".", "!" or "?" (and any closing
// quotes or brackets) when whitespace and a capital letter, a digit or an
// opening quote follow, unless the full stop ends an abbreviation or an
// initial.
func splitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < len(text) && strings.IndexByte(`"')]`, text[j]) >= 0 {
			j++
		}
		if j < len(text) && strings.HasPrefix(text[j:], "”") {
			j += len("”")
		}
		if j >= len(text) || (text[j] != ' ' && text[j] != '\t') {
			continue
		}
		k := j
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if k >= len(text) {
			break
		}
		next, _ := utf8.DecodeRuneInString(text[k:])
		if !unicode.IsUpper(next) && !unicode.IsDigit(next) && next != '"' && next != '“' && next != '\'' && next != '(' {
			continue
		}
		if c == '.' && endsWithAbbreviation(text[start:i]) {
			continue
		}
		if s := strings.TrimSpace(text[start:j]); s != "" {
			out = append(out, s)
		}
		start = k
		i = k - 1
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// endsWithAbbreviation reports whether s (the text before a full stop) ends
// with an abbreviation or a single-letter initial.
func endsWithAbbreviation(s string) bool {
	i := strings.LastIndexAny(s, " (\t")
	last := s[i+1:]
	if utf8.RuneCountInString(last) == 1 {
		r, _ := utf8.DecodeRuneInString(last)
		return unicode.IsLetter(r)
	}
	return abbreviations[strings.ToLower(last)]
}

// maxSnippet bounds a result's description, in bytes.
const maxSnippet = 300

// clip shortens s to at most max bytes at a word boundary, with an ellipsis.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := truncateUTF8(s, max-len("…"))
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}
