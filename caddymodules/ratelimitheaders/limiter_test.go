package ratelimitheaders

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// windowStart is the start of a window of every length the tests use (a
// multiple of an hour since the epoch).
var windowStart = time.Unix(1_800_000_000, 0)

// testClock is a clock the test moves by hand.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *testClock) set(at time.Time)    { c.ns.Store(at.UnixNano()) }
func (c *testClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// clockAt is a test clock standing at at.
func clockAt(at time.Time) *testClock {
	c := &testClock{}
	c.set(at)
	return c
}

// newEdge is one edge's limiter against srv, as a separate edge process
// would have it (not shared through the usage pool), its clock 10 s into a
// window.
func newEdge(t *testing.T, srv redistest.Backend, window, interval time.Duration) *limiter {
	t.Helper()
	l := newLimiter(limiterConfig{
		window: window, interval: interval, prefix: "iw:ratelimit:test",
		rdb: srv.Client(), log: zap.NewNop(), now: clockAt(windowStart.Add(10 * time.Second)).now,
	})
	t.Cleanup(func() { l.Destruct() })
	return l
}

func TestTwoEdgesShareOneBudgetAfterSync(t *testing.T) {
	srv := redistest.New(t)
	// A huge interval: the test drives sync itself, so the outcome does not
	// depend on timing.
	a := newEdge(t, srv, time.Hour, time.Hour)
	b := newEdge(t, srv, time.Hour, time.Hour)
	ctx := context.Background()
	const quota = 100

	admitted := 0
	for range 60 {
		if a.take(ctx, "ip:192.0.2.1", quota).allowed {
			admitted++
		}
	}
	a.sync(ctx)
	b.take(ctx, "ip:192.0.2.1", quota) // b learns of the key...
	admitted++
	b.sync(ctx) // ...and of a's 60 requests
	for range 60 {
		if b.take(ctx, "ip:192.0.2.1", quota).allowed {
			admitted++
		}
	}
	if admitted != quota {
		t.Errorf("admitted %d across two synced edges; want exactly the quota %d", admitted, quota)
	}
	// Once b has pushed and a has read back, a refuses too. Only clients
	// counted since the last sync are synced, so a reads back on the sync
	// after the client's next request there (that one request is within
	// the documented bound).
	b.sync(ctx)
	a.take(ctx, "ip:192.0.2.1", quota)
	a.sync(ctx)
	if d := a.take(ctx, "ip:192.0.2.1", quota); d.allowed || d.remaining != 0 {
		t.Errorf("edge a after sync: %+v; want refused with 0 remaining", d)
	}
	// Another client has its own budget.
	if d := a.take(ctx, "ip:192.0.2.2", quota); !d.allowed || d.remaining != quota-1 {
		t.Errorf("other client: %+v; want allowed with %d remaining", d, quota-1)
	}
}

// TestTwoEdgesConcurrentBound checks the documented bound with two edges
// taking requests concurrently and syncing concurrently, in rounds the test
// drives: no timing decides the outcome. In each round every edge takes
// perRound requests, then both sync at once. An edge deciding a request in
// round n knows the other's count up to round n-2 at least (the other's push
// of round n-1 may land after this edge read back), so it misses at most
// 2×perRound of the other's requests. Taking the last request admitted, the
// window admits at most quota + 2×perRound, and never fewer than the quota
// (no edge ever counts more than really happened).
func TestTwoEdgesConcurrentBound(t *testing.T) {
	srv := redistest.New(t)
	const (
		quota    = 1000
		perRound = 50 // with the real 100 ms interval: 500 requests/s per edge
		rounds   = 30
	)
	edges := []*limiter{newEdge(t, srv, time.Hour, time.Hour), newEdge(t, srv, time.Hour, time.Hour)}
	ctx := context.Background()
	var admitted atomic.Int64
	for range rounds {
		var wg sync.WaitGroup
		for _, l := range edges {
			wg.Go(func() {
				for range perRound {
					if l.take(ctx, "t:cli_shared", quota).allowed {
						admitted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		for _, l := range edges {
			wg.Go(func() { l.sync(ctx) })
		}
		wg.Wait()
	}
	got := admitted.Load()
	t.Logf("admitted %d of %d (quota %d, bound +%d)", got, 2*perRound*rounds, quota, 2*perRound)
	if got < quota {
		t.Errorf("admitted %d; the quota %d was not used", got, quota)
	}
	if got > quota+2*perRound {
		t.Errorf("admitted %d; want at most quota %d + %d", got, quota, 2*perRound)
	}
}

// TestTwoEdgesSyncLoopConverges runs the real sync loops while both edges
// take requests: once both have synced after the budget is spent, both
// refuse. It asserts no bound that depends on speed (the rounds test above
// does); it is there for the race detector and the loop itself.
func TestTwoEdgesSyncLoopConverges(t *testing.T) {
	srv := redistest.New(t)
	const quota = 200
	edges := []*limiter{newEdge(t, srv, time.Hour, 10*time.Millisecond), newEdge(t, srv, time.Hour, 10*time.Millisecond)}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, l := range edges {
		wg.Go(func() {
			for range quota {
				l.take(ctx, "t:cli_loop", quota)
			}
		})
	}
	wg.Wait()
	// 2×quota requests were counted. A sync pushes, and reads back, only
	// the clients counted since the previous one, so an edge learns of the
	// other's requests on the sync after its own next request: within a
	// few more requests (spaced wider than the interval) each refuses.
	for _, l := range edges {
		refused := false
		for range 50 {
			if d := l.take(ctx, "t:cli_loop", quota); !d.allowed && d.remaining == 0 {
				refused = true
				break
			}
			time.Sleep(30 * time.Millisecond)
		}
		if !refused {
			t.Errorf("edge never refused after both edges spent the budget (knows %d of the other's requests)", othersOf(l, "t:cli_loop"))
		}
	}
}

func TestRedisDownCountsLocally(t *testing.T) {
	srv := redistest.New(t)
	l := newEdge(t, srv, time.Hour, 20*time.Millisecond)
	ctx := context.Background()
	srv.Stop()
	for i := range 10 {
		d := l.take(ctx, "ip:198.51.100.7", 5)
		if want := i < 5; d.allowed != want {
			t.Fatalf("request %d: allowed=%v; want %v (local counting)", i+1, d.allowed, want)
		}
	}
	time.Sleep(100 * time.Millisecond) // several failed syncs
	if d := l.take(ctx, "ip:198.51.100.8", 5); !d.allowed {
		t.Fatalf("new client refused while Redis is down: %+v", d)
	}
	// The counts wait for Redis and are pushed when it returns.
	srv.Restart(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _ := srv.Client().Get(ctx, "iw:ratelimit:test:"+mustKey(l, "ip:198.51.100.7")).Int64()
		if n == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts not pushed after Redis returned: %d", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustKey(l *limiter, client string) string {
	k, _ := l.windowKey(client, l.now())
	return k
}

func TestWindowKeysAlign(t *testing.T) {
	l := &limiter{window: time.Minute}
	t0 := time.Unix(1_800_000_000, 0) // a multiple of 60 s
	k1, end1 := l.windowKey("c", t0)
	k2, end2 := l.windowKey("c", t0.Add(59*time.Second))
	k3, _ := l.windowKey("c", t0.Add(60*time.Second))
	if k1 != k2 || !end1.Equal(end2) || !end1.Equal(t0.Add(time.Minute)) {
		t.Errorf("same window: %s %s / %s %s", k1, end1, k2, end2)
	}
	if k3 == k1 {
		t.Errorf("next window reuses key %s", k3)
	}
}

// othersOf is what l knows of the other edges' count for client.
func othersOf(l *limiter, client string) int64 {
	h := hashOf(client)
	s := &l.shards[h%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _ := s.counters.get(h)
	return int64(c.others)
}
