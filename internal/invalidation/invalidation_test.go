package invalidation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// recordingPurger remembers what the follower asked of it.
type recordingPurger struct {
	mu      sync.Mutex
	purged  [][]string
	cleared int
}

func (r *recordingPurger) Purge(keys []string) {
	r.mu.Lock()
	r.purged = append(r.purged, keys)
	r.mu.Unlock()
}

func (r *recordingPurger) Clear() { r.mu.Lock(); r.cleared++; r.mu.Unlock() }

func (r *recordingPurger) state() (purged [][]string, cleared int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.purged), r.cleared
}

// countingHandler counts the resyncs of the Handler it wraps.
type countingHandler struct {
	invalidation.Handler
	resyncs atomic.Int64
}

func (c *countingHandler) Resync(ctx context.Context) {
	c.Handler.Resync(ctx)
	c.resyncs.Add(1)
}

// following is a Follower subscribed to the content channel of a real
// Redis, with the content version set to version first.
type following struct {
	srv      redistest.Backend
	rdb      redis.UniversalClient
	purger   *recordingPurger
	follower *invalidation.Follower
	handler  *countingHandler
	done     chan struct{}
}

func follow(t *testing.T, version int64) *following {
	t.Helper()
	srv := redistest.New(t)
	rdb := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	if err := rdb.Set(ctx, "iw:{content}:version", version, 0).Err(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	f := &following{srv: srv, rdb: rdb, purger: &recordingPurger{}, done: make(chan struct{})}
	f.follower = invalidation.NewFollower(f.purger, store.New(rdb).Version, log)
	f.handler = &countingHandler{Handler: f.follower}
	ready := make(chan struct{})
	go func() {
		defer close(f.done)
		invalidation.Subscribe(ctx, rdb, invalidation.Channel, f.handler, log, ready)
	}()
	t.Cleanup(func() {
		cancel()
		<-f.done // Subscribe returns once ctx ends
	})
	<-ready
	if _, cleared := f.purger.state(); cleared != 1 {
		t.Fatalf("first subscription cleared %d times, want once (nothing was seen before)", cleared)
	}
	return f
}

// publishScript publishes from the node that holds the content, as the
// change script does: on a cluster, messages published from one node
// arrive in order, those published from several may not.
var publishScript = redis.NewScript(`return redis.call("PUBLISH", ARGV[1], ARGV[2])`)

func (f *following) publish(t *testing.T, version int64, key string) {
	t.Helper()
	payload := fmt.Sprintf(`{"version":%d,"keys":["%s"]}`, version, key)
	if err := publishScript.Run(context.Background(), f.rdb, []string{"iw:{content}:version"}, invalidation.Channel, payload).Err(); err != nil {
		t.Fatal(err)
	}
}

// waitPurged waits until n messages have been purged. On a cluster a
// message crosses the cluster bus and arrives a moment after PUBLISH
// returns.
func (f *following) waitPurged(t *testing.T, n int) [][]string {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d purges", n), func() bool { p, _ := f.purger.state(); return len(p) >= n })
	p, _ := f.purger.state()
	return p
}

// TestMessages publishes messages through a real Redis, from the node
// that holds the content as the change script does, and checks what the
// follower purges and clears. Every case starts with one clear: the first
// subscription had seen nothing before.
func TestMessages(t *testing.T) {
	type msg struct {
		version int64
		key     string
	}
	testCases := []struct {
		desc        string
		start       int64
		messages    []msg
		wantCleared int
		wantSeen    int64
		// dropped are the keys of messages left unpurged.
		dropped []string
	}{
		{
			desc:        "consecutive versions purge their keys only",
			start:       3,
			messages:    []msg{{4, "article:a"}, {5, "article:b"}},
			wantCleared: 1,
			wantSeen:    5,
		},
		{
			desc:        "a gap in the versions clears everything",
			start:       3,
			messages:    []msg{{4, "article:a"}, {6, "article:b"}, {7, "article:c"}},
			wantCleared: 2,
			wantSeen:    7,
		},
		{
			// A message older than the version the resync read (and
			// cleared at) crossed the cluster bus late: the clear covered
			// it, so it is dropped. Had it moved the version back to 5,
			// version 11 would look like a gap.
			desc:        "a late message never moves the version back",
			start:       10,
			messages:    []msg{{5, "article:late"}, {11, "article:next"}},
			wantCleared: 1,
			wantSeen:    11,
			dropped:     []string{"article:late"},
		},
		{
			// 13 after 11 is a gap and clears; 12 arriving after it is
			// late but newer than the resync's clear: it is purged.
			desc:        "a late message after the resync's clear is purged",
			start:       10,
			messages:    []msg{{11, "article:a"}, {13, "article:c"}, {12, "article:b"}},
			wantCleared: 2,
			wantSeen:    13,
		},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			f := follow(t, test.start)
			var want [][]string
			for _, m := range test.messages {
				f.publish(t, m.version, m.key)
				if !slices.Contains(test.dropped, m.key) {
					want = append(want, []string{m.key})
				}
			}
			if purged := f.waitPurged(t, len(want)); !slices.EqualFunc(purged, want, slices.Equal) {
				t.Fatalf("purged %q, want %q", purged, want)
			}
			if _, cleared := f.purger.state(); cleared != test.wantCleared {
				t.Fatalf("cleared %d times, want %d", cleared, test.wantCleared)
			}
			if got := f.follower.Seen(); got != test.wantSeen {
				t.Fatalf("Seen() = %d, want %d", got, test.wantSeen)
			}
		})
	}
}

func TestResyncAfterRedisRestart(t *testing.T) {
	f := follow(t, 3)
	// A change whose message nobody receives: the version moves in Redis
	// without an announcement, as when it is published while the
	// follower is away.
	if err := f.rdb.Set(context.Background(), "iw:{content}:version", 9, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f.srv.Restart(false)
	waitFor(t, "a resubscription after the restart", func() bool { return f.handler.resyncs.Load() >= 2 })
	// The resync read version 9 and cleared. (On a cluster the
	// subscription may be back before the cluster answers reads: the
	// resync then reads again until it can.)
	_, cleared := f.purger.state()
	if cleared < 2 {
		t.Fatalf("cleared %d times, want a clear after the restart too", cleared)
	}
	// The next version is no gap: the resync took the version it read,
	// or knows none.
	f.publish(t, 10, "article:a")
	f.waitPurged(t, 1)
	if _, after := f.purger.state(); after != cleared {
		t.Fatalf("version 10 cleared again (%d clears, want %d)", after, cleared)
	}
	if got := f.follower.Seen(); got != 10 {
		t.Fatalf("Seen() = %d, want 10", got)
	}
}

func TestUnreadableMessageClears(t *testing.T) {
	f := follow(t, 1)
	if err := f.rdb.Publish(context.Background(), invalidation.Channel, "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a clear", func() bool { _, c := f.purger.state(); return c == 2 })
	if p, _ := f.purger.state(); len(p) != 0 {
		t.Fatalf("purged %q from an unreadable message", p)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// observingPurger records, at each purge, the versions the follower
// reports.
type observingPurger struct {
	f                *invalidation.Follower
	purging, seenNow []int64
}

func (o *observingPurger) Purge([]string) {
	o.purging = append(o.purging, o.f.Purging())
	o.seenNow = append(o.seenNow, o.f.Seen())
}
func (o *observingPurger) Clear() {}

// Purging moves before a purge and Seen after it: a cache comparing an
// answer with Purging never takes one its purge has just dropped for
// current, and an origin promising Seen never promises a purge not done.
func TestPurgingLeadsSeen(t *testing.T) {
	o := &observingPurger{}
	o.f = invalidation.NewFollower(o, func(context.Context) (int64, error) { return 4, nil }, slog.New(slog.DiscardHandler))
	o.f.Resync(context.Background())
	for _, v := range []int64{5, 6} {
		b, _ := json.Marshal(invalidation.Message{Version: v, Keys: []string{"article:x"}})
		o.f.Receive(context.Background(), string(b))
	}
	if want := []int64{5, 6}; !slices.Equal(o.purging, want) {
		t.Errorf("Purging during the purges = %v; want %v", o.purging, want)
	}
	if want := []int64{4, 5}; !slices.Equal(o.seenNow, want) {
		t.Errorf("Seen during the purges = %v; want %v", o.seenNow, want)
	}
	if o.f.Seen() != 6 || o.f.Purging() != 6 {
		t.Errorf("after: Seen %d, Purging %d; want 6, 6", o.f.Seen(), o.f.Purging())
	}
}

// A resync whose first version reads fail (on Redis Cluster the
// subscription is often back before the cluster answers reads) retries
// them, so its clear still covers the changes up to the version read: a
// late message of one of them is dropped instead of purging again (and,
// for the ask index's tags, rebuilding it a second time at start).
func TestResyncRetriesTheVersionRead(t *testing.T) {
	p := &recordingPurger{}
	var reads atomic.Int64
	version := func(context.Context) (int64, error) {
		if reads.Add(1) <= 2 {
			return 0, fmt.Errorf("CLUSTERDOWN The cluster is down")
		}
		return 7, nil
	}
	f := invalidation.NewFollower(p, version, slog.New(slog.DiscardHandler))
	f.Resync(context.Background())
	if n := reads.Load(); n != 3 {
		t.Fatalf("version read %d times, want 3 (two failures, then the version)", n)
	}
	if f.Seen() != 7 {
		t.Fatalf("Seen() = %d after the resync, want the version read (7)", f.Seen())
	}
	late, _ := json.Marshal(invalidation.Message{Version: 6, Keys: []string{"article:late"}})
	f.Receive(context.Background(), string(late))
	if purged, cleared := p.state(); len(purged) != 0 || cleared != 1 {
		t.Fatalf("purged %q and cleared %d times; want the late message dropped after one clear", purged, cleared)
	}
}

// A Redis restarted on a large data set takes subscriptions while it reads
// its append-only file back, but answers reads with LOADING until it is
// done; and no change can be written meanwhile. The resync waits for the
// version instead of clearing after a few seconds: clearing emptied every
// edge and origin at once while Redis could answer none of their misses
// (found by a review: pages that were hits turned into 500s during a
// 10-second load). The load here lasts about 12 s, well past the bound
// the resync used to give up after.
func TestResyncWaitsThroughLoading(t *testing.T) {
	const keys = 30_000
	srv := redistest.Start(t, "key-load-delay 250", "loading-process-events-interval-bytes 1024")
	rdb := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for start := 0; start < keys; start += 1000 {
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+1000; i++ {
				p.Set(ctx, fmt.Sprintf("filler:%d", i), "x", 0)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, "iw:{content}:version", 3, 0).Err(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	p := &recordingPurger{}
	follower := invalidation.NewFollower(p, store.New(rdb).Version, log)
	h := &countingHandler{Handler: follower}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		invalidation.Subscribe(ctx, rdb, invalidation.Channel, h, log, ready)
	}()
	defer func() { cancel(); <-done }()
	<-ready

	loadStart := time.Now()
	srv.Restart(false) // returns once the server answers PING: loading is over
	loading := time.Since(loadStart)
	waitFor(t, "the resync after the restart", func() bool { return h.resyncs.Load() >= 2 })
	if loading < 5*time.Second {
		t.Logf("the restart took %v: too short to show the old bound", loading)
	}
	if _, cleared := p.state(); cleared != 1 {
		t.Fatalf("cleared %d times; want only the first subscription's clear: the version did not move", cleared)
	}
	if got := follower.Seen(); got != 3 {
		t.Fatalf("Seen() = %d, want 3", got)
	}
}
