package ask

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// Search is document-at-a-time with MaxScore (Turtle and Flood, "Query
// evaluation: strategies and optimizations", 1995) and block-max bounds
// (Ding and Suel 2011): once the top k are full, a term whose whole list
// cannot lift an article past the k-th score on its own (with the other
// such terms) only refines articles found through the others, and a run of
// articles where the headers of the blocks of every term add up to less
// than the k-th score is skipped without decoding. "invoice", which every
// article says, is then no longer scored in full. Scores are the same as an
// exhaustive evaluation's, summed in the question's term order.

// pruneSlack widens every bound a little, so a float32 sum rounded up can
// never be pruned wrongly.
const pruneSlack = 1 + 1e-5

// termCursor is one term of the question walking one segment's list.
type termCursor struct {
	c cursor
	// f is idf·(k1+1), the score of a full impact; ub the list's bound.
	f  float32
	ub float64
	// qi is the term's position in the question.
	qi int
}

// searcher holds the best hits found so far across segments.
type searcher struct {
	ix     *Index
	q      *query
	accept func(d uint32) bool
	limit  int
	top    []hit
	// contrib[qi] is what term qi adds to the score of the document being
	// scored, valid where seen[qi] is gen: a document's turn is a new gen,
	// so nothing is cleared between documents.
	contrib []float32
	seen    []uint32
	gen     uint32
	searchStats
}

// searchStats counts what a search did. A count of documents does not
// move with the load of the machine, so two versions of the search are
// compared by it (BenchmarkArchiveScale).
type searchStats struct {
	// visited are the documents taken from the essential lists and not
	// passed over with their window; scored are those of them that got
	// past every MaxScore check, whose own score was computed; skipped
	// are the windows passed over whole.
	visited, scored, skipped int
}

// add adds o's counts to st.
func (st *searchStats) add(o searchStats) {
	st.visited += o.visited
	st.scored += o.scored
	st.skipped += o.skipped
}

// search scores the articles that contain a term of q and returns the best
// limit of those accept lets through, best first. Ties go to the newer
// article, then to the slug that sorts first, so answers are stable.
func (ix *Index) search(ctx context.Context, q *query, accept func(d uint32) bool, limit int) ([]hit, error) {
	if limit <= 0 || ix.Len() == 0 {
		return nil, nil
	}
	s := &searcher{ix: ix, q: q, accept: accept, limit: limit, top: make([]hit, 0, limit+1), contrib: make([]float32, len(q.terms)), seen: make([]uint32, len(q.terms))}
	if err := s.segment(ctx, ix.base, 0, ix.dead); err != nil {
		return nil, err
	}
	if err := s.segment(ctx, ix.delta, uint32(len(ix.base.docs)), nil); err != nil {
		return nil, err
	}
	for i := range s.top {
		s.top[i].norm = normalize100(s.top[i].score, q.bestScore)
	}
	if q.stats != nil {
		q.stats.add(s.searchStats)
	}
	return s.top, nil
}

// threshold is the score an article must reach to enter the top: the k-th
// best once there are k, else zero.
func (s *searcher) threshold() float64 {
	if len(s.top) < s.limit {
		return 0
	}
	return s.top[len(s.top)-1].score
}

// better orders hits: higher score, then newer, then slug.
func (s *searcher) better(a, b hit) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	da, db := s.ix.meta(a.doc), s.ix.meta(b.doc)
	if c := cmp.Compare(db.published, da.published); c != 0 {
		return c
	}
	return strings.Compare(da.slug, db.slug)
}

// offer puts h in the top if it belongs there.
func (s *searcher) offer(h hit) {
	if len(s.top) == s.limit && s.better(h, s.top[len(s.top)-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(s.top, h, s.better)
	s.top = slices.Insert(s.top, i, h)
	if len(s.top) > s.limit {
		s.top = s.top[:s.limit]
	}
}

// segment searches one segment whose documents are numbered from off in
// the snapshot; dead are its documents to pass over.
func (s *searcher) segment(ctx context.Context, seg *segment, off uint32, dead map[uint32]struct{}) error {
	var cs []*termCursor
	for qi, t := range s.q.terms {
		l := seg.list(t.id)
		if l == nil || l.df == 0 {
			continue
		}
		tc := &termCursor{f: float32(t.idf * (k1 + 1)), qi: qi}
		tc.ub = float64(tc.f * saturation(l.max))
		tc.c.reset(l)
		cs = append(cs, tc)
	}
	if len(cs) == 0 {
		return nil
	}
	// Ascending bounds: the first terms are the ones that become
	// non-essential as the threshold rises.
	slices.SortStableFunc(cs, func(a, b *termCursor) int { return cmp.Compare(a.ub, b.ub) })
	prefix := make([]float64, len(cs))
	sum := 0.0
	for i, tc := range cs {
		sum += tc.ub
		prefix[i] = sum * maxBoost * pruneSlack
	}
	// essential is the first term that must be walked: the terms before it
	// cannot reach the threshold together. The block bound found for a
	// document holds up to winUntil (every list's block covers it), so it
	// is computed again only past that.
	essential, theta := 0, -1.0
	winBound, winBoost, winUntil := 0.0, 0.0, uint32(0)
	winValid := false
	// winBound bounds the score of every document of the window, up to
	// winUntil: the blocks of every list that cover it and the largest
	// recency boost in it (winBoost). blockPrefix are the same sums for
	// cs[:i+1].
	blockPrefix := make([]float64, len(cs))
	// d is the next document of the essential lists; found while they are
	// moved past the one before (one pass over them a document, not
	// three), it is looked for again only when they change or skip.
	d, found := uint32(0), false
	// run is the run of boostRun documents whose recency bound (an
	// exponential) is runBoost, up to runEnd: a run holds many windows.
	run, runBoost, runEnd := uint32(endDoc), 0.0, uint32(0)
	for steps := 0; ; steps++ {
		if steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if t := s.threshold(); t != theta {
			theta = t
			for essential < len(cs) && prefix[essential] < theta {
				essential++
				found = false
			}
			if essential == len(cs) {
				return nil
			}
		}
		if !found {
			d = endDoc
			for _, tc := range cs[essential:] {
				d = min(d, tc.c.doc)
			}
		}
		if d == endDoc {
			return nil
		}
		if theta > 0 {
			if !winValid || d > winUntil {
				if r := d / boostRun; r != run {
					run = r
					runBoost, runEnd = s.ix.boostBound(seg, d)
				}
				winBoost, winUntil = runBoost, runEnd
				winBound = 0
				for i, tc := range cs {
					m, u := tc.c.blockAt(d)
					winBound += float64(tc.f * saturation(m))
					winUntil = min(winUntil, u)
					blockPrefix[i] = winBound * winBoost * pruneSlack
				}
				winBound *= winBoost * pruneSlack
				winValid = true
			}
			if winBound < theta {
				s.skipped++
				if winUntil == endDoc {
					return nil
				}
				for _, tc := range cs[essential:] {
					tc.c.seek(winUntil + 1)
				}
				found = false
				continue
			}
		}
		// What the essential lists give d, each moved past it.
		s.gen++
		partial, next := 0.0, uint32(endDoc)
		for _, tc := range cs[essential:] {
			if tc.c.doc == d {
				c := tc.f * saturation(tc.c.imp)
				s.contrib[tc.qi], s.seen[tc.qi] = c, s.gen
				partial += float64(c)
				tc.c.next()
			}
			next = min(next, tc.c.doc)
		}
		s.score(cs, blockPrefix, essential, d, off, theta, winBoost, partial, dead)
		d, found = next, true
	}
}

// score computes the score of document d of the segment and offers it,
// unless d is dead or not accepted. partial is what the essential terms
// give d (their cursors are past it already); the others are moved to d
// only while d can still reach theta
// (MaxScore, with the bounds of the blocks that cover d rather than of the
// whole lists): from the largest bound down, a document whose score so far
// plus the bounds of the terms left (bounds, scaled like every other
// bound) stays below theta is dropped without reading their lists. Those
// checks scale the partial score by winBoost, the largest recency boost of
// d's window, rather than d's own: computing d's boost (a look-up and an
// exponential) only for the documents that survive them took about a third
// of this function's time, and the larger factor only drops fewer
// documents early, so the result is the same. Whether d is dead or
// accepted is asked last: most documents are dropped before.
func (s *searcher) score(cs []*termCursor, bounds []float64, essential int, d, off uint32, theta, winBoost, partial float64, dead map[uint32]struct{}) {
	s.visited++
	bound := winBoost * pruneSlack
	for i := essential - 1; i >= 0; i-- {
		if theta > 0 && partial*bound+bounds[i] < theta {
			return
		}
		tc := cs[i]
		if tc.c.doc < d {
			tc.c.seek(d)
		}
		if tc.c.doc == d {
			c := tc.f * saturation(tc.c.imp)
			s.contrib[tc.qi], s.seen[tc.qi] = c, s.gen
			partial += float64(c)
		}
	}
	if partial == 0 {
		return
	}
	s.scored++
	boost := s.ix.boost(s.ix.meta(off + d).published)
	if partial*boost*pruneSlack < theta {
		return
	}
	if _, gone := dead[d]; gone || (s.accept != nil && !s.accept(off+d)) {
		return
	}
	// Summed in the question's order, as an exhaustive evaluation would
	// (a term d lacks adds nothing: x + 0 is x).
	var sum float32
	for qi, c := range s.contrib {
		if s.seen[qi] == s.gen {
			sum += c
		}
	}
	s.offer(hit{doc: off + d, score: float64(sum) * boost})
}
