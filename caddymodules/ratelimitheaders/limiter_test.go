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

// newEdge is one edge's limiter against rdbURL, as a separate edge process
// would have it (not shared through the usage pool).
func newEdge(t *testing.T, srv redistest.Backend, window, interval time.Duration) *limiter {
	t.Helper()
	l := newLimiter(window, interval, "iw:ratelimit:test", 0, srv.Client(), zap.NewNop())
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

// TestTwoEdgesConcurrentBound runs two edges with the real 100 ms sync loop
// and checks the documented bound: at most quota + Σ rate × (interval +
// slack) requests are admitted in a window.
func TestTwoEdgesConcurrentBound(t *testing.T) {
	srv := redistest.New(t)
	const (
		quota    = 1000
		interval = 100 * time.Millisecond
		perEdge  = 1500
	)
	edges := []*limiter{newEdge(t, srv, time.Hour, interval), newEdge(t, srv, time.Hour, interval)}
	for _, l := range edges {
		// The first sync also connects, and on a cluster discovers the
		// slots and loads the scripts on every master: a one-off the bound
		// does not describe, which a loaded machine can stretch past a
		// second. Get it done before the measured run.
		l.take(context.Background(), "t:warm-up", quota)
		l.sync(context.Background())
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, l := range edges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// About 1 request per ms per edge: a steady client rate the
			// bound can be computed from.
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for range perEdge {
				<-tick.C
				if l.take(context.Background(), "t:cli_shared", quota).allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	rate := float64(2*perEdge) / elapsed.Seconds() // both edges together
	// Each edge may miss the other's requests of up to two intervals (one
	// not yet pushed, one pushed but not yet read back) plus scheduling
	// slack on a busy machine.
	bound := int64(rate * (2*interval + 100*time.Millisecond).Seconds())
	got := admitted.Load()
	t.Logf("admitted %d of %d (quota %d, combined rate %.0f/s, bound +%d)", got, 2*perEdge, quota, rate, bound)
	if got < quota {
		t.Errorf("admitted %d; the quota %d was not used", got, quota)
	}
	if got > quota+bound {
		t.Errorf("admitted %d; want at most quota %d + bound %d", got, quota, bound)
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
