package ask

import (
	"math/rand/v2"
	"testing"
)

// TestPostingListContains: contains finds exactly the articles of a list,
// for lists of one block, of many, with gaps that take several bytes, and
// with a short block left in the middle by appendList; and nothing before
// the first, between blocks or after the last.
func TestPostingListContains(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 8))
	for _, tc := range []struct {
		desc      string
		n, maxGap int
	}{
		{"empty", 0, 1},
		{"one posting", 1, 1},
		{"one block, dense", blockSize - 3, 2},
		{"many blocks, dense", 20 * blockSize, 3},
		{"many blocks, gaps of several bytes", 10 * blockSize, 100_000},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var pl, tail postingList
			in := map[uint32]bool{}
			doc := uint32(rng.IntN(5))
			for k := range tc.n {
				// The second half goes to a list appended after, so
				// the first half's last block is short.
				l := &pl
				if k >= tc.n/2+7 {
					l = &tail
				}
				l.add(doc, uint8(1+rng.IntN(255)))
				in[doc] = true
				doc += uint32(1 + rng.IntN(tc.maxGap))
			}
			pl.appendList(&tail)
			check := func(d uint32) {
				if got := pl.contains(d); got != in[d] {
					t.Fatalf("contains(%d) = %v, want %v", d, got, in[d])
				}
			}
			if tc.maxGap <= 10 {
				for d := range doc + 10 {
					check(d)
				}
			} else {
				// Every posting and its neighbours, and a sample of the
				// tens of millions of articles between them.
				for d := range in {
					check(d)
					check(d + 1)
					if d > 0 {
						check(d - 1)
					}
				}
				for range 100_000 {
					check(uint32(rng.IntN(int(doc) + 10)))
				}
			}
			check(endDoc - 1)
		})
	}
}
