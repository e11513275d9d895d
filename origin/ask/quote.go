package ask

import (
	"strings"
)

// Quoting: every description and every summary sentence is a sentence of an
// article, chosen by how much of the question it covers. Coverage is the
// share of the question's idf that a sentence's terms match, so a sentence
// that names the rare words of a question ("Verifactu", "G2") beats one that
// repeats the common ones ("e-invoicing", "2026").

// sentenceTerms returns the question terms sentence i of d contains, as
// positions in q.terms. Countries and specifications the sentence names
// count as their synthetic terms, so "Belgian businesses must…" covers a
// question about Belgium.
func (q *query) sentenceTerms(d *doc, i int, matched []int) []int {
	matched = matched[:0]
	for _, id := range d.termIDs(i) {
		if p := q.position(id); p >= 0 && !containsInt(matched, p) {
			matched = append(matched, p)
		}
	}
	if q.entities {
		d.sentenceEntities(i, func(id int32) {
			if p := q.position(id); p >= 0 && !containsInt(matched, p) {
				matched = append(matched, p)
			}
		})
	}
	return matched
}

// position returns the position in q.terms of the question's term that id
// counts as (a synonym counts as the word it stands in for), or -1. A
// question has few terms, so a scan beats a map.
func (q *query) position(id int32) int {
	for p := range q.terms {
		if q.terms[p].id == id {
			return q.standsFor(p)
		}
	}
	return -1
}

// sentenceIDs returns the distinct term ids of sentence i of d.
func sentenceIDs(d *doc, i int) []int32 {
	var out []int32
	for _, id := range d.termIDs(i) {
		if !containsID(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func containsID(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// coverage is the share of the question's idf that matched covers.
func (q *query) coverage(matched []int) float64 {
	if q.idfSum == 0 {
		return 0
	}
	s := 0.0
	for _, p := range matched {
		s += q.terms[p].idf
	}
	return s / q.idfSum
}

// snippet returns the quotable sentence of d that covers most of the
// question, the dek when none matches, clipped to maxSnippet bytes. On a tie
// the earlier sentence wins, so the dek is preferred.
func (ix *Index) snippet(d *doc, q *query) string {
	best, bestCov := -1, 0.0
	var matched []int
	for i := range d.sentenceCount() {
		if !d.sentence(i).whole() {
			continue
		}
		if best < 0 {
			best = i
		}
		matched = q.sentenceTerms(d, i, matched)
		if c := q.coverage(matched); c > bestCov {
			best, bestCov = i, c
		}
	}
	if best < 0 {
		return clip(d.title, maxSnippet)
	}
	return clip(d.sentence(best).text, maxSnippet)
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// readable reports whether a sentence can stand alone in a summary: a whole
// statement of moderate length, not a lead-in to a list. A list item may
// end with the semicolon that separates it from the next ("1 October 2027
// for businesses with turnover above €8m;"): it is still a whole statement.
func readable(s string, item bool) bool {
	if len(s) < quoteMinBytes || len(s) > quoteMaxBytes || len(strings.Fields(s)) < quoteMinWords {
		return false
	}
	end := strings.TrimRight(s, `"')]”’`)
	return strings.HasSuffix(end, ".") || strings.HasSuffix(end, "?") || strings.HasSuffix(end, "!") || item && strings.HasSuffix(end, ";")
}

// jaccard is the overlap of two term sets.
func jaccard(a, b []int32) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for _, x := range a {
		if containsID(b, x) {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// The sentences of a doc are read through these methods, so that how the
// index stores them is known in one place.

// sentenceCount is the number of sentences of d.
func (d *doc) sentenceCount() int { return len(d.sentences) }

// sentence returns sentence i of d.
func (d *doc) sentence(i int) *sentence { return &d.sentences[i] }

// termIDs returns the term ids of sentence i of d, in order.
func (d *doc) termIDs(i int) []int32 {
	s := &d.sentences[i]
	return d.ids[s.start:s.end]
}

// sentenceEntities calls fn with the synthetic term of each country and
// specification that sentence i of d names.
func (d *doc) sentenceEntities(i int, fn func(id int32)) {
	for _, e := range d.ents {
		if e.sent == uint32(i) {
			fn(e.id)
		}
	}
}
