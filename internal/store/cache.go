package store

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/redis/go-redis/v9"
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

// Invalidation is the message on ChannelInvalidate.
type Invalidation struct {
	Version int64    `json:"version"`
	Keys    []string `json:"keys"`
}

// Purger is what FollowInvalidations drives: TaggedCache, or an edge cache.
type Purger interface {
	Purge(tags []string)
	Clear()
}

// FollowInvalidations subscribes to ChannelInvalidate and purges p for every
// message until ctx ends. Pub/sub drops messages while the subscriber is
// disconnected, so on every (re)subscription it compares the content version
// with the last one it saw and clears p entirely if it moved (DESIGN §5).
// ready, if not nil, is closed after the first subscription is confirmed.
func (s *Store) FollowInvalidations(ctx context.Context, p Purger, log *slog.Logger, ready chan<- struct{}) {
	var seen atomic.Int64
	seen.Store(-1)
	resync := func() {
		v, err := s.Version(ctx)
		if err != nil {
			// Cannot tell what was missed: drop everything to be safe.
			log.Warn("cache: reading content version after resubscribe failed; clearing", "err", err)
			p.Clear()
			return
		}
		if old := seen.Swap(v); old != v {
			if old >= 0 {
				log.Info("cache: content moved while unsubscribed; clearing", "from", old, "to", v)
			}
			p.Clear()
		}
	}
	for ctx.Err() == nil {
		ps := s.rdb.Subscribe(ctx, ChannelInvalidate)
		s.followOnce(ctx, ps, p, log, resync, &seen, &ready)
		ps.Close()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Store) followOnce(ctx context.Context, ps *redis.PubSub, p Purger, log *slog.Logger, resync func(), seen *atomic.Int64, ready *chan<- struct{}) {
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("cache: invalidation subscription broke; resubscribing", "err", err)
			}
			return
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			// Sent on the first subscribe and again on every reconnect
			// (go-redis resubscribes by itself).
			if m.Kind == "subscribe" {
				resync()
				if *ready != nil {
					close(*ready)
					*ready = nil
				}
			}
		case *redis.Message:
			var inv Invalidation
			if err := json.Unmarshal([]byte(m.Payload), &inv); err != nil {
				log.Warn("cache: malformed invalidation; clearing", "err", err)
				p.Clear()
				continue
			}
			p.Purge(inv.Keys)
			old := seen.Load()
			if inv.Version <= old {
				// Late: on Redis Cluster a message crosses the cluster bus
				// and may arrive after the resync read a newer version.
				// Its keys are purged; the version never moves back.
				continue
			}
			seen.Store(inv.Version)
			if old >= 0 && inv.Version > old+1 {
				// A message went missing in between (a change published
				// while the connection was being re-established).
				p.Clear()
			}
		}
	}
}
