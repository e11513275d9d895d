// Package invalidation keeps in-process caches in step with Redis pub/sub
// announcements: the content invalidations every cache of the service
// follows (the origin's response cache, the ask index, the edge cache) and,
// through the same resubscribing loop, the token revocations the edge's
// token verifier follows.
//
// Redis pub/sub is fire-and-forget: a subscriber that is disconnected, even
// for the moment of a reconnect, never sees the messages sent meanwhile.
// Every follower therefore resynchronises on each (re)subscription (see
// Handler), and a content follower also notices a message that went missing
// between two others by the gap in their versions (see Follower).
package invalidation

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Channel is the Redis channel on which every content change announces its
// Message, in the same atomic script that writes the change.
const Channel = "iw:invalidate"

// Message is what a content change publishes on Channel: the content
// version after the change and the surrogate keys of everything the change
// may have altered.
type Message struct {
	Version int64    `json:"version"`
	Keys    []string `json:"keys"`
}

// Purger is a cache that content changes invalidate.
type Purger interface {
	// Purge drops everything tagged with one of the surrogate keys.
	Purge(keys []string)
	// Clear drops everything: what changed is not known.
	Clear()
}

// Purgers hands every invalidation to each Purger in turn.
type Purgers []Purger

// Purge calls Purge on each Purger.
func (ps Purgers) Purge(keys []string) {
	for _, p := range ps {
		p.Purge(keys)
	}
}

// Clear calls Clear on each Purger.
func (ps Purgers) Clear() {
	for _, p := range ps {
		p.Clear()
	}
}

// Handler receives what a subscription delivers. Subscribe calls it from
// one goroutine, never concurrently.
type Handler interface {
	// Resync is called on every confirmed (re)subscription, before any
	// message received on it: whatever was announced while no
	// subscription was live is lost and must be made up for here.
	Resync(ctx context.Context)
	// Receive is called with the payload of each message.
	Receive(ctx context.Context, payload string)
}

// Backoff bounds between two subscription attempts after a failure; it
// doubles from minBackoff up to maxBackoff and starts again from
// minBackoff once a subscription is confirmed.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Subscribe follows channel on rdb until ctx ends, handing what arrives to
// h, and returns only then. After any loss of the subscription (a broken
// connection, a Redis restart, a cluster failover) it subscribes again,
// with a growing pause between failed attempts. ready, when not nil, is
// closed after the first Resync returns.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, channel string, h Handler, log *slog.Logger, ready chan<- struct{}) {
	backoff := minBackoff
	for ctx.Err() == nil {
		if subscribeOnce(ctx, rdb, channel, h, log, &ready) {
			backoff = minBackoff
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// subscribeOnce runs one subscription until it breaks or ctx ends, and
// reports whether it was confirmed. A fresh PubSub per attempt (rather
// than go-redis's own reconnection of the old one) makes every attempt
// start the same way, with a subscription confirmation that triggers
// Resync.
func subscribeOnce(ctx context.Context, rdb redis.UniversalClient, channel string, h Handler, log *slog.Logger, ready *chan<- struct{}) (confirmed bool) {
	ps := rdb.Subscribe(ctx, channel)
	// Receive reads without a deadline and ignores ctx; closing the
	// PubSub is what unblocks it when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer func() {
		if stop() {
			_ = ps.Close()
		}
	}()
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("pub/sub subscription lost; subscribing again", "channel", channel, "err", err)
			}
			return confirmed
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			confirmed = true
			h.Resync(ctx)
			if *ready != nil {
				close(*ready)
				*ready = nil
			}
		case *redis.Message:
			h.Receive(ctx, m.Payload)
		}
	}
}
