package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/worker"
)

// harness is a real Redis with the service key, subscriptions written
// through the real store, and events appended to the real stream.
type harness struct {
	redis redistest.Backend
	rdb   redis.UniversalClient
	store *webhook.Store
	key   *signing.Key
}

const siteRoot = "https://invoicewire.test"

func newHarness(t testing.TB) *harness {
	t.Helper()
	srv := redistest.New(t)
	rdb := srv.Client()
	key, err := signing.NewSource(rdb, "").Key(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{redis: srv, rdb: rdb, store: webhook.NewStore(rdb), key: key}
}

var loopbackPolicy = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// config is a worker configuration that runs the whole policy in seconds.
func (h *harness) config() worker.Config {
	return worker.Config{
		SiteRoot: siteRoot,
		Key:      h.key,
		Policy:   loopbackPolicy,
		Schedule: []time.Duration{150 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond},
		Jitter:   -1,
		// The 60 s floor after a 429 or a timeout, scaled down like the
		// schedule.
		ThrottleFloor: 300 * time.Millisecond,
		Timeout:       time.Second,
		Lease:         2 * time.Second,
		ClaimIdle:     time.Second,
		Poll:          20 * time.Millisecond,
		Log:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// start runs a worker until the test ends (or stop is called).
func (h *harness) start(t *testing.T, cfg worker.Config) (stop func()) {
	t.Helper()
	w, err := worker.New(cfg, h.rdb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx, 5*time.Second); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func (h *harness) subscribe(t testing.TB, url, secret string, kinds ...string) *webhook.Subscription {
	t.Helper()
	now := time.Now()
	sub := &webhook.Subscription{ID: events.NewID("sub_", now), ClientID: "cli_test", URL: url, Events: kinds, Secret: secret, CreatedAt: now, Status: webhook.StatusActive}
	if err := h.store.Create(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// publish appends an event to the stream as the store's change script does.
func (h *harness) publish(t *testing.T, kind string, data any) events.Event {
	t.Helper()
	e, err := events.New(kind, time.Now(), data)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: events.Stream, Values: e.Fields()}).Err(); err != nil {
		t.Fatal(err)
	}
	return e
}

func (h *harness) attempts(t *testing.T, subID string) []webhook.Attempt {
	t.Helper()
	a, err := h.store.Attempts(context.Background(), subID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// idle reports whether nothing is left to do: the stream fanned out and the
// queue empty.
func (h *harness) idle(t *testing.T) bool {
	ctx := context.Background()
	n, _ := h.rdb.XLen(ctx, events.Stream).Result()
	q, _ := h.rdb.ZCard(ctx, webhook.KeyDue).Result()
	return n == 0 && q == 0
}

// eventually polls cond until it holds, failing after limit. The limit is a
// safety net for a broken build, not a speed assertion.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// delivery is one request a receiver got.
type delivery struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a real HTTP server that records deliveries and answers with
// whatever respond says for the n-th request (0-based).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []delivery
	resp func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, resp func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{resp: resp}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, delivery{Method: r.Method, URL: "http://" + r.Host + r.URL.RequestURI(), Header: r.Header.Clone(), Body: body, At: time.Now()})
		rc.mu.Unlock()
		if rc.resp != nil {
			rc.resp(n, w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func envelope(t *testing.T, b []byte) events.Event {
	t.Helper()
	var e events.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("delivery body is not an envelope: %v: %s", err, b)
	}
	return e
}
