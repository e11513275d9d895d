package worker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/worker"
)

// hangingReceiver never answers: each request is held until the worker
// gives up on it (or the test ends). It counts the requests it holds at
// once.
type hangingReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	now, max int
	total    int
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	hr := &hangingReceiver{}
	stop := make(chan struct{})
	hr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets the server notice the worker
		// closing the connection, which ends r.Context().
		io.Copy(io.Discard, r.Body)
		hr.mu.Lock()
		hr.now++
		hr.total++
		hr.max = max(hr.max, hr.now)
		hr.mu.Unlock()
		select {
		case <-r.Context().Done(): // the worker's attempt timed out
		case <-stop:
		}
		hr.mu.Lock()
		hr.now--
		hr.mu.Unlock()
	}))
	// Cleanups run last first: the handlers are let go before Close waits
	// for them.
	t.Cleanup(hr.Close)
	t.Cleanup(func() { close(stop) })
	return hr
}

func (hr *hangingReceiver) counts() (now, most, total int) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return hr.now, hr.max, hr.total
}

// counterValue is the value of a counter the registry gathered.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// hangTimeout is the attempt timeout of the bound's tests: what a hanging
// receiver holds each request for.
const hangTimeout = 1500 * time.Millisecond

// subscribeFast starts n receivers that answer at once, each with two
// subscriptions to spec.updated.
func subscribeFast(t *testing.T, h *harness, n int) []*receiver {
	var fast []*receiver
	for range n {
		rc := newReceiver(t, nil)
		h.subscribe(t, rc.URL+"/a", "secret-of-sixteen+", events.SpecUpdated)
		h.subscribe(t, rc.URL+"/b", "secret-of-sixteen+", events.SpecUpdated)
		fast = append(fast, rc)
	}
	return fast
}

// boundedConfig is the harness's worker with the attempt timeout above,
// concurrency slots and a per-receiver bound, and one retry an hour later:
// each delivery to a hanging receiver is attempted once in these tests and
// then waits.
func boundedConfig(h *harness, concurrency, bound int) worker.Config {
	cfg := h.config()
	cfg.Timeout = hangTimeout
	cfg.Concurrency = concurrency
	cfg.PerReceiver = bound
	cfg.Schedule = []time.Duration{time.Hour}
	cfg.ThrottleFloor = -1
	return cfg
}

// TestPerReceiverBound: a receiver that holds every request until the
// attempt times out, with many subscriptions (of several clients, at
// different paths of one host:port), takes at most PerReceiver of the
// worker's slots (docs/decisions.md, "Per-receiver bound"). While it holds
// them, an event reaches every fast receiver well within the attempt
// timeout, and the deliveries to the hanging receiver that waited for a
// slot are each attempted once, in time: not lost, not dead-lettered, and
// their waiting not counted as an attempt.
//
// Without the bound the first event's deliveries to the hanging receiver
// take all Concurrency slots, and the fast receivers wait for the timeout.
func TestPerReceiverBound(t *testing.T) {
	testCases := []struct {
		desc        string
		bound       int
		hanging     int // subscriptions to the hanging receiver
		clients     int // owning them, round robin
		fast        int // fast receivers, two subscriptions each
		concurrency int
	}{
		{desc: "bound 2, one client's subscriptions", bound: 2, hanging: 5, clients: 1, fast: 3, concurrency: 4},
		{desc: "bound 1, three clients share the host", bound: 1, hanging: 3, clients: 3, fast: 4, concurrency: 3},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			hr := newHangingReceiver(t)
			var hanging []*webhook.Subscription
			for i := range tc.hanging {
				now := time.Now()
				// One host:port however the path and query are spelt.
				url := fmt.Sprintf("%s/hook/%d?n=%d", hr.URL, i, i)
				if i%2 == 1 {
					url = strings.Replace(hr.URL, "http://", "HTTP://", 1) + "/Other"
				}
				sub := &webhook.Subscription{ID: events.NewID("sub_", now), ClientID: fmt.Sprintf("cli_%d", i%tc.clients), URL: url,
					Events: []string{events.ArticlePublished, events.SpecUpdated}, Secret: "secret-of-sixteen+", CreatedAt: now, Status: webhook.StatusActive}
				if err := h.store.Create(ctx, sub); err != nil {
					t.Fatal(err)
				}
				hanging = append(hanging, sub)
			}
			fast := subscribeFast(t, h, tc.fast)
			reg := prometheus.NewRegistry()
			cfg := boundedConfig(h, tc.concurrency, tc.bound)
			cfg.Registry = reg
			h.start(t, cfg)

			// The hanging receiver takes what it can of the slots.
			h.publish(t, events.ArticlePublished, map[string]string{"slug": "first"})
			eventually(t, 10*time.Second, "the hanging receiver holding requests", func() bool {
				now, _, _ := hr.counts()
				return now >= tc.bound
			})
			time.Sleep(100 * time.Millisecond)

			// An event every subscriber takes: the fast receivers get it
			// within a second, not after the hanging attempts time out.
			published := time.Now()
			e := h.publish(t, events.SpecUpdated, map[string]string{"slug": "second"})
			var slowest time.Duration
			for i, rc := range fast {
				eventually(t, 10*time.Second, fmt.Sprintf("fast receiver %d's deliveries", i), func() bool { return rc.count() == 2 })
				for _, d := range rc.deliveries() {
					if d.Header.Get("webhook-id") != e.ID {
						t.Errorf("fast receiver %d got %s, want %s", i, d.Header.Get("webhook-id"), e.ID)
					}
					took := d.At.Sub(published)
					slowest = max(slowest, took)
					if took > time.Second {
						t.Errorf("fast receiver %d got the event after %s, with the hanging receiver holding requests (timeout %s)", i, took.Round(time.Millisecond), hangTimeout)
					}
				}
			}

			t.Logf("slowest fast delivery: %s after the event", slowest.Round(time.Millisecond))

			// Every delivery to the hanging receiver, both events', is
			// attempted exactly once, as attempt 1, and times out; none
			// is dead-lettered and all wait for their retry.
			eventually(t, 60*time.Second, "every delivery to the hanging receiver attempted", func() bool {
				for _, sub := range hanging {
					if len(h.attempts(t, sub.ID)) < 2 {
						return false
					}
				}
				return true
			})
			for _, sub := range hanging {
				as := h.attempts(t, sub.ID)
				if len(as) != 2 {
					t.Errorf("subscription %s: %d attempts, want 2: %s", sub.ID, len(as), mustJSON(as))
				}
				for _, a := range as {
					if a.Attempt != 1 || a.Outcome != webhook.OutcomeFailed || a.Error == nil || !strings.Contains(*a.Error, "no answer within") {
						t.Errorf("subscription %s: attempt %s, want a first attempt that timed out", sub.ID, mustJSON(a))
					}
				}
			}
			_, most, total := hr.counts()
			if most > tc.bound {
				t.Errorf("the hanging receiver held %d requests at once, want at most %d", most, tc.bound)
			}
			if total != 2*tc.hanging {
				t.Errorf("the hanging receiver got %d requests, want %d", total, 2*tc.hanging)
			}
			if n, _ := h.rdb.XLen(ctx, webhook.KeyDead).Result(); n != 0 {
				t.Errorf("%d dead letters, want none", n)
			}
			if n, _ := h.rdb.ZCard(ctx, webhook.KeyDue).Result(); n != int64(2*tc.hanging) {
				t.Errorf("%d deliveries queued, want the %d to the hanging receiver waiting for their retry", n, 2*tc.hanging)
			}
			if n := counterValue(t, reg, "iw_worker_deliveries_deferred_total"); n < 1 {
				t.Errorf("iw_worker_deliveries_deferred_total = %v, want deliveries deferred", n)
			}
		})
	}
}

// TestSlowReceiversShare: receivers on many ports, each at its own bound,
// hold together at most half the worker's slots once they are known to be
// slow (docs/decisions.md, "Per-receiver bound"), so the other half keeps
// delivering to receivers that answer.
//
// Without the share, four hanging ports with a bound of 2 each take all
// four slots, and the fast receivers wait for the attempts to time out.
func TestSlowReceiversShare(t *testing.T) {
	h := newHarness(t)
	var hanging []*hangingReceiver
	var hangingSubs []*webhook.Subscription
	for range 4 {
		hr := newHangingReceiver(t)
		hanging = append(hanging, hr)
		for i := range 2 {
			hangingSubs = append(hangingSubs, h.subscribe(t, fmt.Sprintf("%s/hook/%d", hr.URL, i), "secret-of-sixteen+", events.ArticlePublished, events.SpecUpdated))
		}
	}
	fast := subscribeFast(t, h, 3)
	h.start(t, boundedConfig(h, 4, 2))

	// The first event goes to the hanging ports only; each of them is
	// found slow when an attempt there times out.
	h.publish(t, events.ArticlePublished, map[string]string{"slug": "first"})
	eventually(t, 30*time.Second, "an attempt timed out at every hanging port", func() bool {
		for _, sub := range hangingSubs {
			if len(h.attempts(t, sub.ID)) == 0 {
				return false
			}
		}
		return true
	})

	// The second goes to every subscriber: the hanging ports' eight
	// deliveries may take two slots, and the fast receivers have the
	// other two.
	published := time.Now()
	e := h.publish(t, events.SpecUpdated, map[string]string{"slug": "second"})
	for i, rc := range fast {
		eventually(t, 10*time.Second, fmt.Sprintf("fast receiver %d's deliveries", i), func() bool { return rc.count() == 2 })
		for _, d := range rc.deliveries() {
			if d.Header.Get("webhook-id") != e.ID {
				t.Errorf("fast receiver %d got %s, want %s", i, d.Header.Get("webhook-id"), e.ID)
			}
			if took := d.At.Sub(published); took > time.Second {
				t.Errorf("fast receiver %d got the event after %s, with four slow ports at their bound (timeout %s)", i, took.Round(time.Millisecond), hangTimeout)
			}
		}
	}
	held := 0
	for _, hr := range hanging {
		now, _, _ := hr.counts()
		held += now
	}
	if held > 2 {
		t.Errorf("the slow ports hold %d requests at once, want at most 2 (half of 4 slots)", held)
	}
}
