package ask

import (
	"maps"
	"slices"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Changes are applied without rebuilding: a snapshot's base segment and base
// vocabulary are immutable and shared, and a change makes a new snapshot
// with
//
//   - the changed article's base document marked dead (a tombstone),
//   - the new version, if it is still published, in the delta segment, which
//     is rebuilt from its analysed articles (at most maxDelta of them), and
//   - the terms no indexed article had before in a small added vocabulary.
//
// Document frequencies are the lengths of the segments' posting lists, so
// idf follows at once. The cost of a change is that of analysing the
// article and rebuilding the delta: it does not grow with the archive. When
// the delta grows past maxDelta articles the engine rebuilds the base in the
// background (a merge), and changes keep applying meanwhile.

// maxDelta is the delta size past which the base is rebuilt.
const maxDelta = 2048

// deltaDoc is one article of the delta as analysed: its metadata and its
// terms with their impacts.
type deltaDoc struct {
	meta docMeta
	ids  []int32
	imps []uint8
}

// change is one article to index again (a) or to take out (a is nil: it is
// retracted or deleted).
type change struct {
	slug string
	a    *content.Article
}

// deltaSize is the number of articles in the delta plus the base's
// tombstones: what a merge would settle.
func (ix *Index) deltaSize() int { return len(ix.pending) + len(ix.dead) - ix.builtDead }

// with returns a snapshot of ix with changes applied. ix is left as it is:
// answers under way keep reading it.
func (ix *Index) with(changes []change) *Index {
	nx := *ix
	nx.dead = maps.Clone(ix.dead)
	nx.pending = maps.Clone(ix.pending)
	nx.langs = maps.Clone(ix.langs)
	sh := newShare(ix.entities, 256)
	var fresh []*deltaDoc
	for _, ch := range changes {
		if dd, ok := nx.pending[ch.slug]; ok {
			delete(nx.pending, ch.slug)
			nx.langs[dd.meta.lang]--
		} else if d, ok := ix.base.bySlug[ch.slug]; ok {
			if _, gone := nx.dead[d]; !gone {
				nx.dead[d] = struct{}{}
				nx.langs[ix.base.docs[d].lang]--
			}
		}
		if ch.a == nil {
			continue
		}
		a := ch.a
		dd := &deltaDoc{meta: docMeta{slug: a.Slug, lang: primaryLanguage(a.Locale), published: a.PublishedAt.UnixNano()}}
		sh.analyse(a)
		sh.impacts(sh.count(), &ix.avg, func(id int32, imp uint8) {
			dd.ids = append(dd.ids, id)
			dd.imps = append(dd.imps, imp)
		})
		nx.pending[ch.slug] = dd
		nx.langs[dd.meta.lang]++
		nx.newest = max(nx.newest, dd.meta.published)
		fresh = append(fresh, dd)
	}
	for l, n := range nx.langs {
		if n <= 0 {
			delete(nx.langs, l)
		}
	}
	// The share's local ids become global ones; terms and words the index
	// has never seen are added to a copy of the added vocabulary.
	global := make([]int32, len(sh.terms))
	var added *vocabulary
	for lid, t := range sh.terms {
		id, ok := nx.termID(t)
		if !ok {
			if added == nil {
				added = ix.added.clone()
				nx.added = added
			}
			id = added.from + int32(len(added.names))
			added.terms[t] = id
			added.names = append(added.names, t)
		}
		global[lid] = id
	}
	for w, lid := range sh.surface {
		if _, ok := nx.surfaceID(w); ok {
			continue
		}
		if added == nil {
			added = ix.added.clone()
			nx.added = added
		}
		if lid >= 0 {
			lid = global[lid]
		}
		added.surface[w] = lid
	}
	if added != nil {
		nx.textGen = newTextGen()
	}
	for _, dd := range fresh {
		for k, lid := range dd.ids {
			dd.ids[k] = global[lid]
		}
	}
	nx.delta = buildDelta(nx.pending)
	return &nx
}

// clone copies a vocabulary, to add to it.
func (v *vocabulary) clone() *vocabulary {
	return &vocabulary{terms: maps.Clone(v.terms), names: slices.Clone(v.names), surface: maps.Clone(v.surface), from: v.from}
}

// buildDelta indexes the delta's articles, in slug order so that a
// snapshot does not depend on the order changes came in.
func buildDelta(pending map[string]*deltaDoc) *segment {
	s := &segment{bySlug: make(map[string]uint32, len(pending)), byTerm: map[int32]*postingList{}}
	slugs := slices.Sorted(maps.Keys(pending))
	s.docs = make([]docMeta, len(slugs))
	for i, slug := range slugs {
		dd := pending[slug]
		s.docs[i] = dd.meta
		s.bySlug[slug] = uint32(i)
		for k, id := range dd.ids {
			l := s.byTerm[id]
			if l == nil {
				l = &postingList{}
				s.byTerm[id] = l
			}
			l.add(uint32(i), dd.imps[k])
		}
	}
	s.index()
	return s
}
