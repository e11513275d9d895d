package store

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
)

// TaggedCache is an in-process ristretto cache whose entries carry surrogate
// keys (tags), so a content change drops exactly the entries that depend on
// it. A hit never touches Redis.
//
// Purges race with fills: a request may read Redis before a change and store
// its result after the change's purge, which would keep stale data until the
// next change. Every fill therefore carries the generation it started in
// (Generation before reading Redis); Set refuses a fill whose generation a
// purge has since moved past.
type TaggedCache[V any] struct {
	rc  *ristretto.Cache[string, *tagged[V]]
	gen atomic.Uint64

	// mu orders fills against purges. tagMu guards byTag alone and is never
	// held while calling into ristretto, whose eviction callback takes it:
	// holding it across a ristretto call could deadlock with that callback.
	mu     sync.Mutex
	tagMu  sync.Mutex
	byTag  map[string]map[string]struct{}
	hits   atomic.Uint64
	misses atomic.Uint64
}

type tagged[V any] struct {
	key   string
	tags  []string
	value V
}

// NewTaggedCache builds a cache bounded by maxBytes of cost.
func NewTaggedCache[V any](maxBytes int64) (*TaggedCache[V], error) {
	c := &TaggedCache[V]{byTag: map[string]map[string]struct{}{}}
	onGone := func(it *ristretto.Item[*tagged[V]]) {
		if it.Value != nil {
			c.untag(it.Value)
		}
	}
	rc, err := ristretto.NewCache(&ristretto.Config[string, *tagged[V]]{
		// About ten counters per expected entry, entries of ~4 KiB.
		NumCounters: max(maxBytes/4096*10, 1000),
		MaxCost:     maxBytes,
		BufferItems: 64,
		OnEvict:     onGone,
		OnReject:    onGone,
	})
	if err != nil {
		return nil, fmt.Errorf("store: building cache: %w", err)
	}
	c.rc = rc
	return c, nil
}

// Generation is the current purge generation; pass it to Set.
func (c *TaggedCache[V]) Generation() uint64 { return c.gen.Load() }

// Get returns the value stored under key.
func (c *TaggedCache[V]) Get(key string) (V, bool) {
	if t, ok := c.rc.Get(key); ok {
		c.hits.Add(1)
		return t.value, true
	}
	c.misses.Add(1)
	var zero V
	return zero, false
}

// Set stores v under key with its tags and cost, unless a purge happened
// since generation gen.
func (c *TaggedCache[V]) Set(key string, v V, tags []string, cost int64, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	t := &tagged[V]{key: key, tags: tags, value: v}
	c.tagMu.Lock()
	for _, tag := range tags {
		m := c.byTag[tag]
		if m == nil {
			m = map[string]struct{}{}
			c.byTag[tag] = m
		}
		m[key] = struct{}{}
	}
	c.tagMu.Unlock()
	c.rc.Set(key, t, cost)
}

func (c *TaggedCache[V]) untag(t *tagged[V]) {
	c.tagMu.Lock()
	defer c.tagMu.Unlock()
	for _, tag := range t.tags {
		if m := c.byTag[tag]; m != nil {
			delete(m, t.key)
			if len(m) == 0 {
				delete(c.byTag, tag)
			}
		}
	}
}

// Purge drops every entry tagged with one of tags.
func (c *TaggedCache[V]) Purge(tags []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	var keys []string
	c.tagMu.Lock()
	for _, tag := range tags {
		for key := range c.byTag[tag] {
			keys = append(keys, key)
		}
		delete(c.byTag, tag)
	}
	c.tagMu.Unlock()
	for _, key := range keys {
		c.rc.Del(key)
	}
}

// Clear drops everything.
func (c *TaggedCache[V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	c.tagMu.Lock()
	c.byTag = map[string]map[string]struct{}{}
	c.tagMu.Unlock()
	c.rc.Clear()
}

// Wait blocks until buffered writes are applied (for tests).
func (c *TaggedCache[V]) Wait() { c.rc.Wait() }

// Stats returns the hit and miss counts since start.
func (c *TaggedCache[V]) Stats() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// Close stops the cache's goroutines.
func (c *TaggedCache[V]) Close() { c.rc.Close() }
