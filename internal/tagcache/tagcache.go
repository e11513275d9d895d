// Package tagcache is the in-process cache of the origin and of the edge: a
// ristretto v2 cache bounded by cost (bytes) whose entries carry surrogate
// keys (tags), so that a content change drops exactly the entries that
// depend on it.
//
// A purge does not look its entries up: it stamps its tags with a new
// value of a clock, and an entry filled before one of its tags' stamps is
// treated as absent from then on (a later fill of the same key replaces
// it, and ristretto evicts what nobody asks for again). The stamps live in
// a fixed array of slots indexed by a hash of the tag, so the cache keeps
// no index of keys by tag: nothing grows with the entries but the entries,
// and the garbage collector has no index to mark (docs/decisions.md,
// "Tagged caches purged by stamps"). Two tags that share a slot purge each other's entries,
// which costs a miss, never a stale answer.
package tagcache

import (
	"fmt"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
)

// Cache is a cache of V by key K (a string, or a []byte so that a lookup
// can hash the request's bytes without converting them).
//
// Purges race with fills: a request may read its data before a change and
// store the result after the change's purge. Every fill therefore carries
// the generation it started in (Generation, read before the data); an entry
// whose generation is older than a purge of one of its tags is never
// returned, whenever it was stored.
type Cache[K string | []byte, V any] struct {
	rc *ristretto.Cache[K, *stored[V]]
	stamps

	hits, misses atomic.Uint64
}

// stored is what ristretto holds: the value, when it was filled and
// stored, and the stamp slots of its tags.
type stored[V any] struct {
	value V
	// gen is the generation the fill started in; setAt the clock when it
	// was handed to the cache.
	gen, setAt uint64
	slots      []uint32
	// checked is the clock value at which the entry was last found valid:
	// while the clock has not moved since, no stamp is read.
	checked atomic.Uint64
}

// New returns a cache bounded by maxCost, the sum of the costs given to Set
// (ristretto's own bookkeeping and the stamps are not counted).
func New[K string | []byte, V any](maxCost int64) (*Cache[K, V], error) {
	rc, err := ristretto.NewCache(&ristretto.Config[K, *stored[V]]{
		// About ten counters per expected entry, entries of ~4 KiB.
		NumCounters:        max(maxCost/4096*10, 1e4),
		MaxCost:            maxCost,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, fmt.Errorf("tagcache: building the cache: %w", err)
	}
	return &Cache[K, V]{rc: rc, stamps: newStamps(maxCost)}, nil
}

// Get returns the value stored under key.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	if s, ok := c.rc.Get(key); ok && c.valid(s) {
		c.hits.Add(1)
		return s.value, true
	}
	c.misses.Add(1)
	var zero V
	return zero, false
}

// valid reports whether no Purge, Drop or Clear since s was filled or
// stored names it.
func (c *Cache[K, V]) valid(s *stored[V]) bool {
	now := c.clock.Load()
	if s.checked.Load() == now {
		return true
	}
	if !c.stamps.valid(s.gen, s.setAt, s.slots) {
		return false
	}
	s.checked.Store(now)
	return true
}

// Set stores v under key with its tags and cost, unless a purge of one of
// its tags (or a Clear) happened since generation gen. It reports whether
// the value was handed to the cache, which may still decline to keep it.
func (c *Cache[K, V]) Set(key K, v V, tags []string, cost int64, gen uint64) bool {
	s := &stored[V]{value: v, gen: gen, setAt: c.clock.Load()}
	var ok bool
	if s.slots, ok = c.slots(make([]uint32, 0, len(tags)), tags, gen); !ok {
		return false
	}
	// A purge from here on stamps past gen, and Get stops returning the
	// entry whenever ristretto applies this Set.
	return c.rc.Set(key, s, cost)
}

// Clear drops everything, and refuses the fills that started before.
func (c *Cache[K, V]) Clear() { c.clear(c.rc.Clear) }

// Wait blocks until the Sets made so far are applied.
func (c *Cache[K, V]) Wait() { c.rc.Wait() }

// Stats returns the hit and miss counts of Get since the start.
func (c *Cache[K, V]) Stats() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// Close stops the cache's goroutines.
func (c *Cache[K, V]) Close() { c.rc.Close() }
