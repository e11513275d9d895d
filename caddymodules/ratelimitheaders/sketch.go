package ratelimitheaders

import (
	"math"
	"sync"
	"sync/atomic"
)

// Dimensions of the count-min sketch of evicted clients: 4 rows of 2^16
// counters per window, two windows (the open one and the one before, while
// edges disagree by a few milliseconds on the boundary): 2 MiB in all.
const (
	sketchRows  = 4
	sketchWidth = 1 << 16
)

// countSketch remembers the counts of clients evicted from a full limiter,
// per window, in fixed memory (a count-min sketch with conservative update:
// Cormode and Muthukrishnan 2005; Estan and Varghese 2002). An estimate is
// never below a client's true count; it exceeds it by at most the evicted
// total divided by the width, with high probability. Until the first
// eviction of a window it is all zeros and costs nothing to ask.
type countSketch struct {
	// inUse is set by the first add: until then no estimate needs the
	// lock.
	inUse atomic.Bool
	mu    sync.Mutex
	slots [2]sketchWindow
}

type sketchWindow struct {
	window uint32
	used   bool
	rows   [sketchRows][sketchWidth]uint32
}

// cells returns the column of h in each row: four 16-bit slices of the
// client's 64-bit hash, which is already well mixed.
func cells(h uint64) [sketchRows]uint32 {
	return [sketchRows]uint32{uint32(h & 0xffff), uint32(h >> 16 & 0xffff), uint32(h >> 32 & 0xffff), uint32(h >> 48)}
}

// slot returns window w's sketch, claiming the slot of an older window.
// s.mu is held.
func (s *countSketch) slot(w uint32) *sketchWindow {
	sw := &s.slots[w%2]
	if sw.window != w || !sw.used {
		if sw.used {
			clear(sw.rows[:])
		}
		sw.window, sw.used = w, true
	}
	return sw
}

// add records that client h had count requests in window w.
func (s *countSketch) add(h uint64, w uint32, count int64) {
	if count <= 0 {
		return
	}
	c := uint32(min(count, math.MaxUint32))
	s.inUse.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	sw := s.slot(w)
	idx := cells(h)
	// Conservative update: raise each cell only as far as the new
	// estimate needs.
	est := uint32(math.MaxUint32)
	for r, i := range idx {
		est = min(est, sw.rows[r][i])
	}
	target := est + min(c, math.MaxUint32-est)
	for r, i := range idx {
		sw.rows[r][i] = max(sw.rows[r][i], target)
	}
}

// estimate is an upper bound of client h's evicted count in window w.
func (s *countSketch) estimate(h uint64, w uint32) uint32 {
	if !s.inUse.Load() {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sw := &s.slots[w%2]
	if !sw.used || sw.window != w {
		return 0
	}
	est := uint32(math.MaxUint32)
	for r, i := range cells(h) {
		est = min(est, sw.rows[r][i])
	}
	return est
}
