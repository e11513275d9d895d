package invalidation

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// VersionFunc reads the current content version from Redis (the store's
// Version method).
type VersionFunc func(ctx context.Context) (int64, error)

// versionRetry is the first pause between failed version reads of a
// resync; it doubles up to maxVersionRetry.
const (
	versionRetry    = 10 * time.Millisecond
	maxVersionRetry = time.Second
)

// Follower is the Handler of Channel: it purges a Purger for every Message
// and clears it whenever it cannot be sure it saw every change.
//
//   - On every (re)subscription it reads the content version; when it
//     differs from the last one seen, changes were announced while nobody
//     listened, and the Purger is cleared. A read that fails is retried
//     until it succeeds, the Purger kept meanwhile: a Redis that takes
//     SUBSCRIBE but cannot answer a read (reading its append-only file back
//     after a restart, answering LOADING; a cluster whose subscription is
//     back before its slots are) cannot take a content change either, since
//     the version is written with every change, so what the Purger holds
//     is still the content until the read succeeds and says otherwise.
//     Clearing on the failure instead emptied every edge and origin at once
//     while Redis could not answer their misses (docs/decisions.md,
//     "Caches and invalidation").
//   - A message whose version is more than one past the last one seen means
//     a message in between went missing (a change published while the
//     connection was being re-established): the Purger is cleared.
//   - A message whose version is not past the last one seen is late: on
//     Redis Cluster a message crosses the cluster bus and may arrive after
//     a resync read a newer version. Its keys are purged, but the version
//     seen never moves back (a later message would otherwise look like a
//     gap and clear everything for nothing).
//   - A late message about a change that a resync's clear already covered
//     (its version is at most the version that resync read before
//     clearing) is dropped: everything filled since the clear was read
//     after that change, and purging again would only make the ask index
//     build itself a second time at start (docs/scale.md).
type Follower struct {
	purger  Purger
	version VersionFunc
	log     *slog.Logger
	// seen is the last content version seen, -1 before the first.
	seen atomic.Int64
	// purging is the highest version whose purge has begun: it moves
	// before the purge, seen after it (see Purging).
	purging atomic.Int64
	// cleared is the version the last resync read before it cleared the
	// Purger, -1 when none did: changes up to it need no purge.
	cleared atomic.Int64
}

// NewFollower returns a Follower that keeps p in step with the content
// whose version version reads.
func NewFollower(p Purger, version VersionFunc, log *slog.Logger) *Follower {
	f := &Follower{purger: p, version: version, log: log}
	f.seen.Store(-1)
	f.purging.Store(-1)
	f.cleared.Store(-1)
	return f
}

// Follow keeps p in step with content changes until ctx ends: it
// subscribes to Channel on rdb and hands every message to a Follower.
// ready, when not nil, is closed once the first subscription is live and
// resynchronised.
func Follow(ctx context.Context, rdb redis.UniversalClient, p Purger, version VersionFunc, log *slog.Logger, ready chan<- struct{}) {
	Subscribe(ctx, rdb, Channel, NewFollower(p, version, log), log, ready)
}

// Run is Follow with f: it subscribes to Channel on rdb until ctx ends,
// for callers that read f.Seen as well.
func (f *Follower) Run(ctx context.Context, rdb redis.UniversalClient, ready chan<- struct{}) {
	Subscribe(ctx, rdb, Channel, f, f.log, ready)
}

// VersionHeader is the response field in which the origin says the content
// version its response reflects: every purge up to that version had been
// applied to its cache when the request began. An edge whose own
// follower has seen a later version must not store the response: the
// origin may have answered from an entry the edge has already purged, as
// the two learn of a change in either order (docs/decisions.md, "Purges
// across edges and origins"). It never leaves the edge.
const VersionHeader = "Invoicewire-Content-Version"

// Purging is the highest content version whose purge has begun, or -1:
// what a cache compares an answer against, since an entry may be gone from
// it before Seen reaches that version. Seen, which moves only once the
// purge is done, is what a cache may promise its answers reflect.
func (f *Follower) Purging() int64 { return f.purging.Load() }

// Seen is the last content version the Follower saw, or -1.
func (f *Follower) Seen() int64 { return f.seen.Load() }

// Resync compares the content version with the last one seen and clears
// the Purger when it moved. It returns without a change when ctx ends
// before the version could be read.
func (f *Follower) Resync(ctx context.Context) {
	v, err := f.readVersion(ctx)
	if err != nil {
		return
	}
	// The version read is authoritative, even below the one seen (content
	// restored from an older backup): store it as it is.
	f.purging.Store(v)
	if old := f.seen.Swap(v); old != v {
		if old >= 0 {
			f.log.Info("invalidation: content changed while unsubscribed; clearing", "from", old, "to", v)
		}
		f.cleared.Store(v)
		f.purger.Clear()
	}
}

// readVersion reads the content version, retrying failed reads with a
// growing pause until one succeeds or ctx ends (see Follower for why the
// Purger is kept meanwhile). The first failure and the recovery are
// logged, not every retry.
func (f *Follower) readVersion(ctx context.Context) (int64, error) {
	pause := versionRetry
	var failedSince time.Time
	for {
		v, err := f.version(ctx)
		if err == nil {
			if !failedSince.IsZero() {
				f.log.Info("invalidation: content version read again; resynchronising", "after", time.Since(failedSince).Round(time.Millisecond))
			}
			return v, nil
		}
		if failedSince.IsZero() {
			failedSince = time.Now()
			f.log.Warn("invalidation: cannot read the content version after subscribing; keeping the cache and retrying", "err", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, maxVersionRetry)
	}
}

// Receive applies one Message.
func (f *Follower) Receive(_ context.Context, payload string) {
	var m Message
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		f.log.Warn("invalidation: unreadable message; clearing", "err", err)
		f.purger.Clear()
		return
	}
	if m.Version <= f.cleared.Load() {
		return // covered by the resync's clear (see Follower)
	}
	if m.Version > f.purging.Load() {
		// One goroutine receives: no other writer to race.
		f.purging.Store(m.Version)
	}
	f.purger.Purge(m.Keys)
	old := f.seen.Load()
	if m.Version <= old {
		// Late (see Follower): purged, but the version stays.
		return
	}
	f.seen.Store(m.Version)
	if old >= 0 && m.Version > old+1 {
		f.log.Info("invalidation: a message went missing; clearing", "from", old, "to", m.Version)
		f.purger.Clear()
	}
}
