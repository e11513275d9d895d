// Package tagcache is the in-process cache of the origin and of the edge: a
// ristretto v2 cache bounded by cost (bytes) whose entries carry surrogate
// keys (tags), so that a content change drops exactly the entries that
// depend on it.
//
// The tag index never relies on ristretto's OnEvict or OnReject callbacks.
// Those run later, in ristretto's own goroutine, interleaved with Sets: a
// callback for a key may come while another version of that key is stored
// or already Set (ristretto_test.go shows both), so untagging the key there
// could drop a live entry from the index, and a purge would then miss it.
// Instead the index may name more entries than the cache holds: purging an
// entry that is gone costs nothing. It is pruned in bulk, against what the
// cache really holds, whenever it has doubled since the last pruning, which
// bounds it to about twice the live entries' tags.
package tagcache

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
)

// minCompact is the index size (tag-entry pairs) below which it is never
// pruned.
const minCompact = 10000

// Cache is a cache of V by key K (a string, or a []byte so that a lookup
// can hash the request's bytes without converting them).
//
// Purges race with fills: a request may read its data before a change and
// store the result after the change's purge, which would keep stale data
// until the next change. Every fill therefore carries the generation it
// started in (Generation, before reading the data); Set refuses a fill
// whose generation a purge has since moved past.
type Cache[K string | []byte, V any] struct {
	rc  *ristretto.Cache[K, *stored[V]]
	gen atomic.Uint64
	// purging counts the purges under way: no fill is stored meanwhile.
	purging atomic.Int32

	// mu orders Set, Purge, Clear and the pruning of the index. No
	// ristretto callback is installed, so holding it across a ristretto
	// call cannot deadlock.
	mu sync.Mutex
	// byTag maps a tag to the keys of the entries Set with it.
	byTag     map[string]map[string]struct{}
	pairs     int // key entries in byTag
	compactAt int

	hits, misses atomic.Uint64
}

// stored is what ristretto holds: the value and the tags it was Set with,
// which pruning compares with the index.
type stored[V any] struct {
	tags  []string
	value V
}

// New returns a cache bounded by maxCost, the sum of the costs given to Set
// (ristretto's own bookkeeping is not counted).
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
	return &Cache[K, V]{rc: rc, byTag: map[string]map[string]struct{}{}, compactAt: minCompact}, nil
}

// Generation is the current purge generation; pass it to Set.
func (c *Cache[K, V]) Generation() uint64 { return c.gen.Load() }

// Get returns the value stored under key.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	if s, ok := c.rc.Get(key); ok {
		c.hits.Add(1)
		return s.value, true
	}
	c.misses.Add(1)
	var zero V
	return zero, false
}

// Set stores v under key with its tags and cost, unless a purge happened
// since generation gen. It reports whether the value was handed to the
// cache, which may still decline to keep it.
func (c *Cache[K, V]) Set(key K, v V, tags []string, cost int64, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.purging.Load() > 0 || c.gen.Load() != gen {
		return false
	}
	// Indexed before ristretto has it: a purge that follows finds it.
	k := string(key)
	for _, tag := range tags {
		keys := c.byTag[tag]
		if keys == nil {
			keys = map[string]struct{}{}
			c.byTag[tag] = keys
		}
		if _, ok := keys[k]; !ok {
			keys[k] = struct{}{}
			c.pairs++
		}
	}
	ok := c.rc.Set(key, &stored[V]{tags: tags, value: v}, cost)
	if c.pairs > c.compactAt {
		c.compact()
	}
	return ok
}

// compact drops from the index the pairs whose entry is gone or was
// replaced by a version without that tag. c.mu is held, so no Set is
// between indexing and handing its value to ristretto, and Wait lets
// ristretto apply every Set made so far before the index is compared with
// what it holds.
func (c *Cache[K, V]) compact() {
	c.rc.Wait()
	n := 0
	for tag, keys := range c.byTag {
		for k := range keys {
			if s, ok := c.rc.Get(K(k)); !ok || !slices.Contains(s.tags, tag) {
				delete(keys, k)
				continue
			}
			n++
		}
		if len(keys) == 0 {
			delete(c.byTag, tag)
		}
	}
	c.pairs = n
	c.compactAt = max(2*n, minCompact)
}

// Purge drops every entry tagged with one of tags, and refuses the fills
// that started before (see Cache).
//
// The generation moves twice: before the entries are dropped, so that a
// fill which read its data before the purge is refused, and again once
// they are gone (deleted, and ristretto's buffer applied). A request that
// read the generation in between may still have found one of those
// entries and made another from it (an edge cache compresses a stored
// body into a coding); its Set is refused while a purge runs and by the
// second move after, so the copy cannot outlive the purge.
func (c *Cache[K, V]) Purge(tags []string) {
	c.purging.Add(1)
	defer c.purging.Add(-1)
	c.mu.Lock()
	c.gen.Add(1)
	keys := c.untag(tags)
	c.mu.Unlock()
	c.del(keys)
	c.rc.Wait()
	c.gen.Add(1)
}

// Drop drops every entry tagged with one of tags, but lets fills already
// under way store their result: for invalidations that only need to drop
// what is stored (RFC 9111 §4.4 asks no more of a cache after an unsafe
// request).
func (c *Cache[K, V]) Drop(tags []string) {
	c.mu.Lock()
	keys := c.untag(tags)
	c.mu.Unlock()
	c.del(keys)
}

// untag removes tags from the index and returns the keys they named.
// c.mu is held.
func (c *Cache[K, V]) untag(tags []string) []string {
	var keys []string
	for _, tag := range tags {
		for k := range c.byTag[tag] {
			keys = append(keys, k)
		}
		c.pairs -= len(c.byTag[tag])
		delete(c.byTag, tag)
	}
	return keys
}

// del deletes keys from ristretto, outside c.mu: Del may wait for room in
// ristretto's buffer, and a Set or Get need not wait with it. A Set that
// lands meanwhile is either of the new generation or refused.
func (c *Cache[K, V]) del(keys []string) {
	for _, k := range keys {
		c.rc.Del(K(k))
	}
}

// Clear drops everything, and refuses the fills that started before.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	c.byTag = map[string]map[string]struct{}{}
	c.pairs = 0
	c.compactAt = minCompact
	c.rc.Clear()
}

// Wait blocks until the Sets and Dels made so far are applied.
func (c *Cache[K, V]) Wait() { c.rc.Wait() }

// Stats returns the hit and miss counts of Get since the start.
func (c *Cache[K, V]) Stats() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// Close stops the cache's goroutines.
func (c *Cache[K, V]) Close() { c.rc.Close() }
