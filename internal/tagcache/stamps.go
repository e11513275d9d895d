package tagcache

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// minSlots is the least number of stamp slots; a cache gets one slot per
// 2 KiB of its maximum cost beyond that (8 MiB of stamps for 1 GiB).
const minSlots = 1 << 16

// stamps are the purge stamps both caches of this package check their
// entries against (see the package comment).
type stamps struct {
	// clock is the generation: it moves on every Purge, Drop and Clear,
	// after their stamps are written, so an entry validated at the current
	// clock needs no other check.
	clock atomic.Uint64
	// mu orders Purge, Drop and Clear, each writing its stamps then moving
	// the clock.
	mu sync.Mutex
	// purged[slot] is the clock value of the last Purge of a tag in slot:
	// entries whose fill started before it are gone. dropped[slot] is the
	// same for Drop, against when the entry was stored.
	purged, dropped []atomic.Uint64
	mask            uint64
	// clearedAt is the clock value of the last Clear: entries whose fill
	// started before it are gone.
	clearedAt atomic.Uint64
}

func newStamps(maxCost int64) stamps {
	n := uint64(minSlots)
	if want := uint64(max(maxCost, 0)) >> 11; want > n {
		n = 1 << bits.Len64(want-1)
	}
	return stamps{
		purged:  make([]atomic.Uint64, n),
		dropped: make([]atomic.Uint64, n),
		mask:    n - 1,
	}
}

// Generation is the current purge generation; pass it to Set.
func (s *stamps) Generation() uint64 { return s.clock.Load() }

func (s *stamps) slot(tag string) uint32 { return uint32(xxhash.Sum64String(tag) & s.mask) }

// slots returns the stamp slots of tags, appended to dst, and false when a
// Clear or a Purge of one of them happened since generation gen: the fill
// must then not be stored.
func (s *stamps) slots(dst []uint32, tags []string, gen uint64) ([]uint32, bool) {
	if s.cleared(gen) {
		return dst, false
	}
	for _, tag := range tags {
		slot := s.slot(tag)
		if s.purged[slot].Load() > gen {
			return dst, false
		}
		dst = append(dst, slot)
	}
	return dst, true
}

// valid reports whether no Purge, Drop or Clear names an entry filled in
// generation gen, handed to the cache at clock setAt, with the given stamp
// slots.
func (s *stamps) valid(gen, setAt uint64, slots []uint32) bool {
	if s.cleared(gen) {
		return false
	}
	for _, slot := range slots {
		if s.stamped(gen, setAt, slot) {
			return false
		}
	}
	return true
}

// cleared reports whether a Clear refuses the fills of generation gen.
func (s *stamps) cleared(gen uint64) bool { return gen < s.clearedAt.Load() }

// stamped reports whether a Purge or Drop of a tag in slot names an entry
// filled in generation gen and handed to the cache at clock setAt.
func (s *stamps) stamped(gen, setAt uint64, slot uint32) bool {
	return s.purged[slot].Load() > gen || s.dropped[slot].Load() > setAt
}

// Purge drops every entry tagged with one of tags, and the fills of them
// that started before, whenever they are stored.
func (s *stamps) Purge(tags []string) { s.stamp(s.purged, tags) }

// Drop drops every entry tagged with one of tags that is stored now, but
// lets fills already under way store their result: for invalidations that
// only need to drop what is stored (RFC 9111 §4.4 asks no more of a cache
// after an unsafe request).
func (s *stamps) Drop(tags []string) { s.stamp(s.dropped, tags) }

// stamp writes the next clock value into the slots of tags, then moves the
// clock to it: a Get that sees the new clock also sees the stamps.
func (s *stamps) stamp(stamps []atomic.Uint64, tags []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.clock.Load() + 1
	for _, tag := range tags {
		stamps[s.slot(tag)].Store(next)
	}
	s.clock.Store(next)
}

// clear refuses every entry filled before now, and the fills that started
// before, then runs drop to free them.
func (s *stamps) clear(drop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.clock.Load() + 1
	s.clearedAt.Store(next)
	s.clock.Store(next)
	drop()
}
