package ratelimitheaders

import (
	"context"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// distinctClients is how many addresses the scale tests count: a million,
// as many as a minute of internet traffic brings (fewer under -race).
func distinctClients() int {
	if raceEnabled {
		return 100_000
	}
	return 1_000_000
}

// clientKey is the i-th of a run of distinct IPv4 and IPv6 clients.
func clientKey(i int) string {
	if i%2 == 0 {
		return "ip:" + netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}).String()
	}
	return "ip:2001:db8:" + strconv.FormatInt(int64(i>>16), 16) + ":" + strconv.FormatInt(int64(i&0xffff), 16) + "::/64"
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A million distinct clients cost at most 128 bytes each (nginx's
// limit_req keeps a client in 64 to 128 bytes), and no more than the cap
// are ever tracked.
func TestMemoryPerClient(t *testing.T) {
	n := distinctClients()
	testCases := []struct {
		desc       string
		maxClients int
		wantMax    int
	}{
		{desc: "below the cap", maxClients: n, wantMax: n},
		{desc: "a tenth of them over the cap", maxClients: n / 10, wantMax: n / 10},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			before := heapInUse()
			l := newLimiter(limiterConfig{window: time.Hour, prefix: "t", maxClients: tc.maxClients})
			ctx := context.Background()
			for i := range n {
				if d := l.take(ctx, clientKey(i), 1000); !d.allowed {
					t.Fatalf("client %d refused on its first request", i)
				}
			}
			got := l.tracked()
			per := float64(heapInUse()-before) / float64(got)
			t.Logf("%d clients counted, %d tracked, %.0f bytes each", n, got, per)
			if got > tc.wantMax {
				t.Errorf("%d clients tracked; want at most %d", got, tc.wantMax)
			}
			// The sketch's fixed 2 MiB is shared; per client the map
			// entry counts.
			if limit := 128.0 + float64(2<<20)/float64(got); per > limit {
				t.Errorf("%.0f bytes per client; want at most %.0f", per, limit)
			}
			runtime.KeepAlive(l)
		})
	}
}

// At the cap, a client evicted to make room does not start afresh when it
// comes back: its count survives in the sketch.
func TestEvictedClientKeepsItsCount(t *testing.T) {
	const quota = 50
	l := newLimiter(limiterConfig{window: time.Hour, prefix: "t", maxClients: shards * 4})
	ctx := context.Background()
	for range quota {
		l.take(ctx, "ip:203.0.113.9", quota)
	}
	if d := l.take(ctx, "ip:203.0.113.9", quota); d.allowed {
		t.Fatal("the client's budget is not spent")
	}
	// A flood of other addresses, far beyond the cap, pushes it out.
	for i := range 100 * shards * 4 {
		if d := l.take(ctx, clientKey(i), quota); !d.allowed {
			t.Fatalf("newcomer %d refused at the cap", i)
		}
	}
	if l.tracked() > shards*4 {
		t.Fatalf("%d tracked; cap %d", l.tracked(), shards*4)
	}
	if d := l.take(ctx, "ip:203.0.113.9", quota); d.allowed {
		t.Errorf("the evicted client came back with a fresh budget: %+v", d)
	}
}

// A sync pushes only the clients counted since the previous one: a quiet
// edge sends Redis nothing, however many clients it remembers.
func TestSyncPushesOnlyNewCounts(t *testing.T) {
	srv := redistest.New(t)
	l := newEdge(t, srv, time.Hour, time.Hour)
	ctx := context.Background()
	const quota = 100 // every request pushed (pushAfter is 1)
	for i := range 2000 {
		l.take(ctx, clientKey(i), quota)
	}
	l.sync(ctx)
	if n := srv.Client().DBSize(ctx).Val(); n < 2000 {
		t.Fatalf("%d keys in Redis after the first sync; want the 2000 clients", n)
	}
	before := commandsProcessed(t, srv)
	l.sync(ctx)
	l.take(ctx, clientKey(7), quota)
	l.sync(ctx)
	if sent := commandsProcessed(t, srv) - before; sent > 10 {
		t.Errorf("%d Redis commands for two syncs with one new request; want a handful", sent)
	}
}

// A million clients that each send one request cost Redis nothing: a
// client is pushed once it reaches its push share of the quota, and from
// then on at every sync with new counts, so the other edges still learn
// of every client that matters to the quota.
func TestClientsBelowThePushShareStayLocal(t *testing.T) {
	const quota = 1000 // pushAfter: 5
	testCases := []struct {
		desc     string
		requests int
		// wantShared is the count Redis holds for the client after one
		// sync; 0: no key.
		wantShared int
	}{
		{desc: "one request", requests: 1, wantShared: 0},
		{desc: "one below the share", requests: quota/unpushedShare - 1, wantShared: 0},
		{desc: "at the share", requests: quota / unpushedShare, wantShared: quota / unpushedShare},
		{desc: "past the share", requests: 3 * quota / unpushedShare, wantShared: 3 * quota / unpushedShare},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			srv := redistest.New(t)
			l := newEdge(t, srv, time.Hour, time.Hour)
			ctx := context.Background()
			client := "ip:198.51.100.20"
			for range tc.requests {
				l.take(ctx, client, quota)
			}
			l.sync(ctx)
			key, _ := l.windowKey(client, l.now())
			got, err := srv.Client().Get(ctx, "iw:ratelimit:test:"+key).Int()
			if err != nil && err != redis.Nil {
				t.Fatalf("reading the shared count: %v", err)
			}
			if got != tc.wantShared {
				t.Errorf("shared count %d after %d requests and a sync; want %d", got, tc.requests, tc.wantShared)
			}
			// Once pushed, every later request is pushed at the next sync.
			if tc.wantShared > 0 {
				l.take(ctx, client, quota)
				l.sync(ctx)
				if got, _ := srv.Client().Get(ctx, "iw:ratelimit:test:"+key).Int(); got != tc.wantShared+1 {
					t.Errorf("shared count %d after one more request; want %d", got, tc.wantShared+1)
				}
			}
		})
	}

	t.Run("a million one-request clients", func(t *testing.T) {
		srv := redistest.New(t)
		l := newEdge(t, srv, time.Hour, time.Hour)
		ctx := context.Background()
		before := commandsProcessed(t, srv)
		for i := range distinctClients() {
			l.take(ctx, clientKey(i), quota)
		}
		l.sync(ctx)
		if sent := commandsProcessed(t, srv) - before; sent > 10 {
			t.Errorf("%d Redis commands to sync one-request clients; want none but the probe", sent)
		}
	})
}

// commandsProcessed sums total_commands_processed over the backend's
// servers.
func commandsProcessed(t *testing.T, srv redistest.Backend) int64 {
	t.Helper()
	var total int64
	err := redistest.ForEachNode(context.Background(), srv.Client(), func(ctx context.Context, node *redis.Client) error {
		for _, line := range strings.Split(node.Info(ctx, "stats").Val(), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
		return nil
	})
	if err != nil || total == 0 {
		t.Fatalf("reading total_commands_processed: %v (total %d)", err, total)
	}
	return total
}
