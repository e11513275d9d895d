// Package redisscan walks the keys that match a pattern with SCAN, on one
// Redis or on every master of a Redis Cluster: the operator listings
// (iwctl clients list, iwctl subscriptions list) that no index serves, and
// that must not block Redis the way KEYS would.
package redisscan

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batch is how many keys one SCAN call asks a server to look at.
const batch = 1000

// Keys calls fn with the keys that match pattern, a batch at a time and
// each key once, until every server has been walked or fn returns an
// error. On Redis Cluster every master is walked (concurrently, but fn is
// called by one at a time).
//
// SCAN's guarantees hold (https://redis.io/docs/latest/commands/scan/,
// "Scan guarantees"): a key present for the whole walk is passed, one
// added or removed meanwhile may or may not be. SCAN may return a key
// twice; Keys remembers the keys it passed to drop repeats, so its memory
// grows with the keys matched: it is for operators' listings, never for a
// request's path.
func Keys(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func(ctx context.Context, keys []string) error) error {
	var mu sync.Mutex
	seen := map[string]struct{}{}
	once := func(ctx context.Context, keys []string) error {
		mu.Lock()
		defer mu.Unlock()
		fresh := keys[:0]
		for _, k := range keys {
			if _, ok := seen[k]; !ok {
				seen[k] = struct{}{}
				fresh = append(fresh, k)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		return fn(ctx, fresh)
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return walk(ctx, rdb, pattern, once)
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return walk(ctx, node, pattern, once)
	})
}

// walk scans one server.
func walk(ctx context.Context, c redis.Cmdable, pattern string, fn func(ctx context.Context, keys []string) error) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, batch).Result()
		if err != nil {
			return fmt.Errorf("redisscan: scanning %q: %w", pattern, err)
		}
		if len(keys) > 0 {
			if err := fn(ctx, keys); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
