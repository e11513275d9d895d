package ask

import (
	"slices"
	"strings"
)

// Synonyms: readers ask about "bills" and "firms" and "sanctions"; articles
// say "invoices", "businesses" and "penalties". The editors keep groups of
// words that mean the same on this site (content/aliases.yaml's terms); a
// question that uses one word of a group also looks for the group's other
// one-word members, at synonymWeight of their idf, and a sentence that
// contains one covers the question's word for summaries and descriptions.

// synonymWeight discounts a synonym against the word the reader used.
const synonymWeight = 0.7

// synonymGroup is one group, analysed: the terms of its one-word members
// and the term sequences of its longer ones.
type synonymGroup struct {
	singles []string
	phrases [][]string
}

// synonymTable is the editors' groups, analysed once per index build.
type synonymTable struct {
	groups []synonymGroup
}

func newSynonymTable(groups [][]string) *synonymTable {
	t := &synonymTable{}
	for _, g := range groups {
		var sg synonymGroup
		for _, member := range g {
			terms := Terms(member)
			switch {
			case len(terms) == 0:
			case !strings.ContainsAny(strings.TrimSpace(member), " \t"):
				// One word: its term, or the joined form of a compound
				// ("e-invoice" → "einvoic"), which the analyzer emits last.
				sg.singles = append(sg.singles, terms[len(terms)-1])
			default:
				sg.phrases = append(sg.phrases, terms)
			}
		}
		if len(sg.singles) > 0 {
			t.groups = append(t.groups, sg)
		}
	}
	return t
}

// expand adds to q the synonyms of its words. A synonym stands in for the
// question's word: it adds to scores at a discount and covers that word in
// sentences, and the question's best possible score is not changed. When
// the question's word is one no article uses, its synonym takes its place
// in full.
func (ix *Index) expand(q *query) {
	if ix.synonyms == nil || len(ix.synonyms.groups) == 0 {
		return
	}
	at := make(map[string]int, len(q.terms))
	for p, t := range q.terms {
		at[t.text] = p
	}
	n := len(q.terms)
	for _, g := range ix.synonyms.groups {
		base := -1
		for _, s := range g.singles {
			if p, ok := at[s]; ok && p < n {
				base = p
				break
			}
		}
		for _, ph := range g.phrases {
			if base >= 0 {
				break
			}
			first, all := -1, true
			for _, w := range ph {
				p, ok := at[w]
				if !ok || p >= n {
					all = false
					break
				}
				if first < 0 {
					first = p
				}
			}
			if all {
				base = first
			}
		}
		if base < 0 {
			continue
		}
		for _, s := range g.singles {
			if _, ok := at[s]; ok {
				continue
			}
			id, ok := ix.termID(s)
			if !ok {
				continue
			}
			// A synonym never weighs more than the word the reader used:
			// "invoice", which every article says, must not bring in
			// "bill", which few do.
			t := qterm{text: s, id: id, idf: min(ix.idfOf(id), q.terms[base].idf) * synonymWeight, synonymOf: base + 1}
			if q.terms[base].id < 0 {
				// The reader's word is unknown: the synonym replaces it.
				t.idf, t.synonymOf = ix.idfOf(id), 0
				q.terms[base].replaced = true
			}
			at[s] = len(q.terms)
			q.pos[id] = len(q.terms)
			q.terms = append(q.terms, t)
		}
	}
}

// standsFor returns the position of the question's term that the term at
// position p counts as: its own, or that of the word it is a synonym of.
func (q *query) standsFor(p int) int {
	if s := q.terms[p].synonymOf; s > 0 {
		return s - 1
	}
	return p
}

// synPhrase is a synonym of two words or more ("go live" for "start") that
// a sentence may say instead of a question's word: its term ids in order,
// and the position in q.terms of the word it stands for.
type synPhrase struct {
	ids []int32
	pos int
}

// phraseSynonyms returns the longer members of the groups the question's
// words belong to. The index matches one-word synonyms (expand); a phrase
// is matched in the sentences an answer quotes, where "Go live" over a
// table's dates answers "when must … start".
func (ix *Index) phraseSynonyms(q *query) []synPhrase {
	if ix.synonyms == nil {
		return nil
	}
	var out []synPhrase
	for _, g := range ix.synonyms.groups {
		base := -1
		for _, s := range g.singles {
			if id, ok := ix.termID(s); ok {
				if p, asked := q.pos[id]; asked {
					base = q.standsFor(p)
					break
				}
			}
		}
		if base < 0 {
			continue
		}
		for _, ph := range g.phrases {
			ids := make([]int32, 0, len(ph))
			for _, w := range ph {
				id, ok := ix.termID(w)
				if !ok {
					ids = nil
					break
				}
				ids = append(ids, id)
			}
			if len(ids) > 0 {
				out = append(out, synPhrase{ids: ids, pos: base})
			}
		}
	}
	return out
}

// in reports whether the term ids of a sentence hold ph's in a
// row.
func (ph synPhrase) in(ids []int32) bool {
	for i := 0; i+len(ph.ids) <= len(ids); i++ {
		if slices.Equal(ids[i:i+len(ph.ids)], ph.ids) {
			return true
		}
	}
	return false
}
