package ask

import (
	"strings"
)

// Quoting: every description and every summary sentence is a sentence of an
// article, chosen by how much of the question it covers. Coverage is the
// share of the question's idf that a sentence's terms match, so a sentence
// that names the rare words of a question ("Verifactu", "G2") beats one that
// repeats the common ones ("e-invoicing", "2026").

// Summary selection parameters.
const (
	// summaryMinScore is the normalised score the best result needs before
	// a summary is attempted: below it the results are a guess, and quoting
	// them as an answer would mislead.
	summaryMinScore = 40
	// summaryDocs is how many of the best results sentences are drawn from,
	// and summaryDocShare how close to the best result one must score.
	summaryDocs     = 3
	summaryDocShare = 0.6
	// summaryMinCoverage is the share of the question a sentence must cover.
	summaryMinCoverage = 0.3
	// summaryMin and summaryMax bound the number of sentences (D22: 2–4).
	summaryMin = 2
	summaryMax = 4
	// mmrLambda trades relevance against novelty (maximal marginal
	// relevance, Carbonell and Goldstein 1998): sentences that repeat one
	// already chosen are passed over.
	mmrLambda = 0.7
	// Quoted sentences are of readable length.
	quoteMinBytes = 40
	quoteMaxBytes = 400
	quoteMinWords = 6
)

// sentenceTerms returns the question terms sentence i of d contains, as
// positions in q.terms. Countries and specifications the sentence names
// count as their synthetic terms, so "Belgian businesses must…" covers a
// question about Belgium.
func (q *query) sentenceTerms(d *doc, i int, matched []int) []int {
	matched = matched[:0]
	s := &d.sentences[i]
	for _, id := range d.ids[s.start:s.end] {
		if p := q.position(id); p >= 0 && !containsInt(matched, p) {
			matched = append(matched, p)
		}
	}
	if q.entities {
		for _, e := range d.ents {
			if e.sent == uint32(i) {
				if p := q.position(e.id); p >= 0 && !containsInt(matched, p) {
					matched = append(matched, p)
				}
			}
		}
	}
	return matched
}

// position returns the position of term id in q.terms, or -1. A question
// has few terms, so a scan beats a map.
func (q *query) position(id int32) int {
	for p := range q.terms {
		if q.terms[p].id == id {
			return p
		}
	}
	return -1
}

// sentenceIDs returns the distinct term ids of sentence i of d.
func sentenceIDs(d *doc, i int) []int32 {
	s := &d.sentences[i]
	var out []int32
	for _, id := range d.ids[s.start:s.end] {
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
	for i, s := range d.sentences {
		if !s.quotable() {
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
	return clip(d.sentences[best].text, maxSnippet)
}

// candidate is a sentence that may go into a summary.
type candidate struct {
	text  string
	url   string
	score float64
	terms []int32
}

// summarize picks 2–4 sentences from the best results that together answer
// the question, or returns nil when the results are not strong enough or
// too few sentences qualify.
func (ix *Index) summarize(q *query, hits []hit) *Summary {
	if len(hits) == 0 || hits[0].norm < summaryMinScore {
		return nil
	}
	var cands []candidate
	var matched []int
	for rank, h := range hits[:min(summaryDocs, len(hits))] {
		if float64(h.norm) < summaryDocShare*float64(hits[0].norm) {
			break
		}
		d := &ix.docs[h.doc]
		// Earlier results and earlier sentences are preferred a little:
		// the best article leads, and articles put their news first.
		rankPrior := 1 - 0.1*float64(rank)
		for i, s := range d.sentences {
			if !s.quotable() || !readable(s.text) {
				continue
			}
			matched = q.sentenceTerms(d, i, matched)
			cov := q.coverage(matched)
			if cov < summaryMinCoverage {
				continue
			}
			cands = append(cands, candidate{text: s.text, url: d.url, score: cov * rankPrior / (1 + 0.02*float64(i)), terms: sentenceIDs(d, i)})
		}
	}
	var picked []candidate
	for len(picked) < summaryMax {
		best, bestVal := -1, 0.0
		for i, c := range cands {
			sim := 0.0
			for _, p := range picked {
				sim = max(sim, jaccard(c.terms, p.terms))
			}
			if sim > 0.6 {
				continue // a near repeat of a sentence already chosen
			}
			if v := mmrLambda*c.score - (1-mmrLambda)*sim; best < 0 || v > bestVal {
				best, bestVal = i, v
			}
		}
		if best < 0 || bestVal <= 0 {
			break
		}
		picked = append(picked, cands[best])
		cands = append(cands[:best], cands[best+1:]...)
	}
	if len(picked) < summaryMin {
		return nil
	}
	s := &Summary{Type: "SearchSummary", Citations: []string{}, Sentences: make([]Quote, 0, len(picked))}
	texts := make([]string, 0, len(picked))
	for _, p := range picked {
		texts = append(texts, p.text)
		s.Sentences = append(s.Sentences, Quote{Text: p.text, URL: p.url})
		if !containsString(s.Citations, p.url) {
			s.Citations = append(s.Citations, p.url)
		}
	}
	s.Text = strings.Join(texts, " ")
	return s
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
// statement of moderate length, not a lead-in to a list.
func readable(s string) bool {
	if len(s) < quoteMinBytes || len(s) > quoteMaxBytes || len(strings.Fields(s)) < quoteMinWords {
		return false
	}
	end := strings.TrimRight(s, `"')]”’`)
	return strings.HasSuffix(end, ".") || strings.HasSuffix(end, "?") || strings.HasSuffix(end, "!")
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
