// Package redisconn shares one go-redis client per Redis URL among the edge
// modules. Clients live in a caddy.UsagePool, so they survive config reloads
// (the new config acquires the client before the old one releases it) and
// are closed when the last module using them is cleaned up.
package redisconn

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/store"
)

var pool = caddy.NewUsagePool()

type client struct{ redis.UniversalClient }

// Destruct closes the client when its last user releases it.
func (c client) Destruct() error { return c.Close() }

// Acquire returns the shared client for url (redis://, rediss:// or
// redis+cluster://, docs/architecture.md). It does not contact Redis: the client
// connects on first use and reconnects on its own, so an edge starts and
// serves while Redis is down. Every successful Acquire needs one Release.
func Acquire(url string) (redis.UniversalClient, error) {
	v, _, err := pool.LoadOrNew(url, func() (caddy.Destructor, error) {
		c, err := store.NewClient(url)
		if err != nil {
			return nil, err
		}
		return client{c}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", err)
	}
	return v.(client).UniversalClient, nil
}

// Release gives back a client obtained with Acquire.
func Release(url string) {
	_, _ = pool.Delete(url)
}
