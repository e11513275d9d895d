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
	// summaryMinScore is the normalised score above which the best results
	// are quoted whatever the question asks. Between summaryFloorScore and
	// it, a summary needs a sentence that states an answer of the asked
	// kind and covers summaryWeakCoverage of the question's known words;
	// below the floor the results are a guess, and quoting them as an
	// answer would mislead.
	summaryMinScore     = 40
	summaryFloorScore   = 10
	summaryWeakCoverage = 0.3
	// summaryDocs is how many of the best results sentences are drawn from,
	// and summaryDocShare how close to the best result one must score.
	summaryDocs     = 3
	summaryDocShare = 0.6
	// summaryNewer is the most a later report is preferred over an earlier
	// one.
	summaryNewer = 0.1
	// summaryMinCoverage is the share of the question a sentence must cover.
	summaryMinCoverage = 0.3
	// summaryMin and summaryMax bound the number of sentences (docs/decisions.md (ask): 2–4).
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
	// cov is the share of the question the sentence covers.
	cov   float64
	terms []int32
	// lead is how well the sentence states an answer of the asked type:
	// its relevance times the closeness of its nearest answer span to the
	// question's words; 0 when it carries no such span.
	lead float64
	// span is that nearest answer span, as byte offsets into text.
	span [2]int
}

// summarize picks 2–4 sentences from the best results that together answer
// the question, the one that states an answer of the asked kind first, or
// returns nil when the results are not strong enough or too few sentences
// qualify.
func (ix *Index) summarize(q *query, asked question, hits []hit) *Summary {
	if len(hits) == 0 || hits[0].norm < summaryFloorScore {
		return nil
	}
	known := q.knownIDF()
	if known == 0 {
		return nil
	}
	// Newer articles are preferred a little: where a fact changed (a date
	// moved, a threshold rose) the later report states it. The preference
	// grows with the time between the reports, up to summaryNewer after
	// half a year; reports a few days apart are the same news.
	docs := hits[:min(summaryDocs, len(hits))]
	oldest := docs[0].text.published
	for _, h := range docs {
		if p := h.text.published; p.Before(oldest) {
			oldest = p
		}
	}
	var cands []candidate
	var matched []int
	for rank, h := range docs {
		if float64(h.norm) < summaryDocShare*float64(hits[0].norm) {
			break
		}
		d := h.text
		// The countries and specs the article is filed under count for
		// every sentence of it: "The obligation starts on 1 January 2026"
		// answers a question about Belgium in an article about Belgium.
		filed := ix.filedUnder(q, h)
		// Earlier results and earlier sentences are preferred a little:
		// the best article leads, and articles put their news first.
		prior := 1 - 0.1*float64(rank)
		// The lead is chosen on what a sentence says, not where it sits:
		// a little for how well its article matches, a little for being the
		// newest report.
		leadPrior := 0.8 + 0.2*float64(h.norm)/float64(hits[0].norm)
		newer := 1 + summaryNewer*min(1, d.published.Sub(oldest).Hours()/(182*24))
		prior *= newer
		leadPrior *= newer
		// The headline says what the article's news is: an answer span it
		// repeats is the article's own answer.
		headline := d.title
		for i, s := range d.sentences {
			if !s.quotable() || !readable(s.text, s.kind == kindItem) {
				continue
			}
			matched = q.sentenceTerms(d, i, matched)
			for _, p := range filed {
				if !containsInt(matched, p) {
					matched = append(matched, p)
				}
			}
			cov := q.coverageOf(matched, known)
			if cov < summaryMinCoverage {
				continue
			}
			c := candidate{text: s.text, url: d.url, score: cov * prior / (1 + 0.02*float64(i)), cov: cov, terms: sentenceIDs(d, i)}
			if span, v, ok := ix.answerSpan(q, asked, s.text, matched, known); ok {
				c.span = span
				c.lead = v * leadPrior / (1 + 0.01*float64(i))
				if s.kind != kindDek && strings.Contains(headline, s.text[span[0]:span[1]]) {
					c.lead *= 1.2
				}
			}
			cands = append(cands, c)
		}
	}
	var picked []candidate
	// The lead: the sentence that best states an answer of the asked kind.
	lead := -1
	for i, c := range cands {
		if c.lead > 0 && (lead < 0 || c.lead > cands[lead].lead) {
			lead = i
		}
	}
	if lead < 0 && !spanKind(asked.kind) {
		// What, why and how ask for no span: the sentence that covers
		// the question best leads.
		for i, c := range cands {
			if lead < 0 || c.score > cands[lead].score {
				lead = i
			}
		}
	}
	if lead >= 0 {
		picked = append(picked, cands[lead])
		cands = append(cands[:lead], cands[lead+1:]...)
	}
	// A question the articles match only weakly gets a summary only when
	// one sentence states an answer of the kind asked and covers most of
	// the question: otherwise the quotes would be a guess.
	if hits[0].norm < summaryMinScore && (len(picked) == 0 || picked[0].cov < summaryWeakCoverage) {
		return nil
	}
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
	if p := picked[0]; p.lead > 0 {
		s.Answer = &AnswerSpan{Text: p.text[p.span[0]:p.span[1]], Sentence: p.text, URL: p.url, Kind: asked.kind.String()}
	}
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
