package worker_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/worker"
)

// verifyNode runs the independent verifiers of testdata/verify (RFC 9421
// with the published key, Standard Webhooks, the HMAC header, Content-Digest)
// on one captured delivery. make test installs their npm packages.
func verifyNode(t *testing.T, d delivery, secret string, key *signing.Key) error {
	t.Helper()
	dir, _ := filepath.Abs("testdata/verify")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "http-message-signatures")); err != nil {
		t.Fatalf("the npm packages of %s are missing; run deploy/local/deps.sh test (make test does)", dir)
	}
	headers := map[string]string{}
	for k, v := range d.Header {
		headers[k] = strings.Join(v, ", ")
	}
	capture, _ := json.Marshal(map[string]any{
		"method": d.Method, "url": d.URL, "headers": headers, "body_b64": base64.StdEncoding.EncodeToString(d.Body),
		"secret": secret, "jwks": map[string]any{"keys": []signing.JWK{key.JWK()}},
	})
	f := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(f, capture, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "verify.mjs"), f)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return &verifyError{out.String()}
	}
	return nil
}

type verifyError struct{ out string }

func (e *verifyError) Error() string { return "verification failed: " + e.out }

// TestSignatures delivers one event to two subscriptions (a generated
// whsec_ secret and a plain one) and checks every signature with verifiers
// written by others: the Standard Webhooks Go library, a plain HMAC, and in
// Node the http-message-signatures RFC 9421 verifier against the public key
// as the signatures directory publishes it. A tampered body must fail them.
func TestSignatures(t *testing.T) {
	h := newHarness(t)
	rc := newReceiver(t, nil)
	whsec := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	plain := "a plain secret of some length"
	subA := h.subscribe(t, rc.URL+"/a", whsec, events.ArticlePublished)
	subB := h.subscribe(t, rc.URL+"/b?x=1", plain, events.ArticlePublished, events.SpecUpdated)
	h.start(t, h.config())
	e := h.publish(t, events.ArticlePublished, map[string]any{"slug": "belgium-b2b", "title": "Belgium goes live"})
	eventually(t, 20*time.Second, "two deliveries", func() bool { return rc.count() == 2 })

	for _, d := range rc.deliveries() {
		secret, sub := whsec, subA
		if strings.Contains(d.URL, "/b") {
			secret, sub = plain, subB
		}
		t.Run(sub.ID, func(t *testing.T) {
			got := envelope(t, d.Body)
			if got.ID != e.ID || got.Type != e.Type || !got.CreatedAt.Equal(e.CreatedAt) || string(got.Data) != string(e.Data) || got.Test {
				t.Errorf("envelope %s, want the event %s", d.Body, e.ID)
			}
			for k, want := range map[string]string{
				worker.HeaderEvent: e.Type, worker.HeaderWebhookID: e.ID, "Content-Type": "application/json",
				"Signature-Agent": `sig1="` + siteRoot + `"`,
			} {
				if d.Header.Get(k) != want {
					t.Errorf("%s = %q, want %q", k, d.Header.Get(k), want)
				}
			}
			if !strings.HasPrefix(d.Header.Get(worker.HeaderDelivery), "dlv_") {
				t.Errorf("%s = %q", worker.HeaderDelivery, d.Header.Get(worker.HeaderDelivery))
			}
			// Plain HMAC, as a receiver following the spec would write it.
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(d.Body)
			if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); d.Header.Get(worker.HeaderSignature) != want {
				t.Errorf("X-Invoicewire-Signature = %q, want %q", d.Header.Get(worker.HeaderSignature), want)
			}
			// The Standard Webhooks library.
			var wh *standardwebhooks.Webhook
			var err error
			if strings.HasPrefix(secret, "whsec_") {
				wh, err = standardwebhooks.NewWebhook(secret)
			} else {
				wh, err = standardwebhooks.NewWebhookRaw([]byte(secret))
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(d.Body, d.Header); err != nil {
				t.Errorf("standard webhooks: %v", err)
			}
			if err := wh.Verify(append([]byte(" "), d.Body...), d.Header); err == nil {
				t.Error("standard webhooks accepted a tampered body")
			}
			// RFC 9421 and the rest, in Node.
			if err := verifyNode(t, d, secret, h.key); err != nil {
				t.Error(err)
			}
			tampered := d
			tampered.Body = bytes.Replace(d.Body, []byte("Belgium"), []byte("Belgiun"), 1)
			if err := verifyNode(t, tampered, secret, h.key); err == nil {
				t.Error("the Node verifiers accepted a tampered body")
			}
			forged := d
			forged.Header = d.Header.Clone()
			forged.Header.Set(worker.HeaderWebhookID, "evt_other")
			if err := verifyNode(t, forged, secret, h.key); err == nil {
				t.Error("the Node verifiers accepted a changed webhook-id")
			}
		})
	}
	// The owner's log shows the delivery.
	a := h.attempts(t, subA.ID)
	if len(a) != 1 || a[0].Outcome != webhook.OutcomeDelivered || a[0].Attempt != 1 || a[0].StatusCode == nil || *a[0].StatusCode != 204 || a[0].NextAttemptAt != nil {
		t.Errorf("log = %+v", a)
	}
	eventually(t, 10*time.Second, "an empty queue", func() bool { return h.idle(t) })
}

// TestFaults runs one receiver per failure mode against one worker.
func TestFaults(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.config())

	type check func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event)
	testCases := []struct {
		desc    string
		respond func(n int, w http.ResponseWriter, r *http.Request)
		wait    func(rc *receiver, sub *webhook.Subscription) bool
		check   check
	}{
		{
			desc: "500 twice then 200",
			respond: func(n int, w http.ResponseWriter, r *http.Request) {
				if n < 2 {
					w.WriteHeader(500)
				}
			},
			wait: func(rc *receiver, sub *webhook.Subscription) bool { return rc.count() >= 3 && h.idle(t) },
			check: func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event) {
				ds := rc.deliveries()
				if len(ds) != 3 {
					t.Errorf("%d requests, want 3", len(ds))
				}
				for _, d := range ds {
					if d.Header.Get("webhook-id") != e.ID || !bytes.Equal(d.Body, ds[0].Body) {
						t.Error("a retry changed the webhook-id or the body")
					}
				}
				a := h.attempts(t, sub.ID)
				if len(a) != 3 || a[0].Outcome != "delivered" || a[0].Attempt != 3 || a[1].Outcome != "failed" || *a[1].StatusCode != 500 || a[1].NextAttemptAt == nil {
					t.Errorf("log = %s", mustJSON(a))
				}
			},
		},
		{
			desc: "timeout then 200",
			respond: func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 {
					time.Sleep(1500 * time.Millisecond)
				}
			},
			wait: func(rc *receiver, sub *webhook.Subscription) bool { return rc.count() >= 2 && h.idle(t) },
			check: func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event) {
				a := h.attempts(t, sub.ID)
				if len(a) != 2 || a[0].Outcome != "delivered" || a[1].Outcome != "failed" || a[1].StatusCode != nil || !strings.Contains(*a[1].Error, "no answer within") {
					t.Errorf("log = %s", mustJSON(a))
				}
			},
		},
		{
			desc: "429 with Retry-After",
			respond: func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 {
					w.Header().Set("Retry-After", "2")
					w.WriteHeader(429)
				}
			},
			wait: func(rc *receiver, sub *webhook.Subscription) bool { return rc.count() >= 2 && h.idle(t) },
			check: func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event) {
				a := h.attempts(t, sub.ID)
				if len(a) != 2 || a[1].NextAttemptAt == nil {
					t.Fatalf("log = %s", mustJSON(a))
				}
				// The schedule says 150 ms, the receiver asked for 2 s: a
				// Retry-After lengthens a step to at most twice its
				// length, and a 429 waits at least the floor (300 ms here).
				if d := waitAfter(a[1]); d < 300*time.Millisecond || d > 400*time.Millisecond {
					t.Errorf("retry scheduled %s after the 429, want the floor's 300ms", d)
				}
				ds := rc.deliveries()
				if gap := ds[1].At.Sub(ds[0].At); gap < 290*time.Millisecond {
					t.Errorf("retried after %s, before the floor", gap)
				}
			},
		},
		{
			desc: "a slow receiver's attempt is logged when it began",
			respond: func(n int, w http.ResponseWriter, r *http.Request) {
				time.Sleep(700 * time.Millisecond)
			},
			wait: func(rc *receiver, sub *webhook.Subscription) bool {
				return len(h.attempts(t, sub.ID)) == 1 && h.idle(t)
			},
			check: func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event) {
				a, ds := h.attempts(t, sub.ID), rc.deliveries()
				if len(a) != 1 || a[0].Outcome != "delivered" || len(ds) != 1 {
					t.Fatalf("log = %s, %d requests", mustJSON(a), len(ds))
				}
				// attempted_at is when the request went out, at most a
				// moment before the receiver saw it, not 700 ms after.
				if late := a[0].AttemptedAt.Sub(ds[0].At); late > 100*time.Millisecond {
					t.Errorf("attempted_at %s is %s after the receiver got the request", a[0].AttemptedAt, late)
				}
				if a[0].DurationMS < 700 {
					t.Errorf("duration_ms = %d, want at least the receiver's 700", a[0].DurationMS)
				}
			},
		},
		{
			desc:    "410 disables the subscription",
			respond: func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(410) },
			wait: func(rc *receiver, sub *webhook.Subscription) bool {
				s, _ := h.store.Get(context.Background(), "", sub.ID)
				return s != nil && s.Status == webhook.StatusDisabled && h.idle(t)
			},
			check: func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event) {
				if ids, _ := h.store.Active(context.Background(), events.ArticleRetracted, time.Now()); contains(ids, sub.ID) {
					t.Error("a disabled subscription still receives fan-out")
				}
				h.publish(t, events.ArticleRetracted, map[string]string{"slug": "after"})
				eventually(t, 10*time.Second, "the second event", func() bool { return h.idle(t) })
				if rc.count() != 1 {
					t.Errorf("a disabled subscription got %d requests", rc.count())
				}
				if n, _ := h.rdb.XLen(context.Background(), webhook.KeyDead).Result(); n < 1 {
					t.Error("no dead letter for the refused delivery")
				}
			},
		},
		{
			desc: "redirect not followed",
			respond: func(n int, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					w.WriteHeader(200)
					return
				}
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			wait: func(rc *receiver, sub *webhook.Subscription) bool {
				return len(h.attempts(t, sub.ID)) == 4 && h.idle(t)
			},
			check: func(t *testing.T, rc *receiver, sub *webhook.Subscription, e events.Event) {
				for _, d := range rc.deliveries() {
					if strings.Contains(d.URL, "/elsewhere") {
						t.Error("the redirect was followed")
					}
				}
				a := h.attempts(t, sub.ID)
				if a[0].Outcome != "failed" || *a[0].StatusCode != 302 || a[0].NextAttemptAt != nil {
					t.Errorf("log = %s", mustJSON(a))
				}
				// Three retries on the test schedule, then a dead letter.
				msgs, _ := h.rdb.XRange(context.Background(), webhook.KeyDead, "-", "+").Result()
				found := false
				for _, m := range msgs {
					var dl webhook.DeadLetter
					json.Unmarshal([]byte(m.Values["delivery"].(string)), &dl)
					if dl.Subscription == sub.ID && dl.Attempts == 4 && dl.LastStatus == 302 && dl.EventID == e.ID {
						found = true
					}
				}
				if !found {
					t.Errorf("no dead letter for %s in %v", sub.ID, msgs)
				}
			},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tc.respond)
			// Only the 410 case publishes through the stream, to a kind no
			// other case subscribes to; the others queue their event for
			// their own subscription alone.
			kind := events.SpecUpdated
			if strings.HasPrefix(tc.desc, "410") {
				kind = events.ArticleRetracted
			}
			sub := h.subscribe(t, rc.URL+"/hook", "secret-of-sixteen+", kind)
			e := h.publishTo(t, sub)
			eventually(t, 30*time.Second, tc.desc, func() bool { return tc.wait(rc, sub) })
			tc.check(t, rc, sub, e)
		})
	}
}

// publishTo queues an event for one subscription only, through the same
// queue fan-out writes to.
func (h *harness) publishTo(t *testing.T, sub *webhook.Subscription) events.Event {
	t.Helper()
	e, err := events.New(events.SpecUpdated, time.Now(), map[string]string{"slug": "peppol-bis-billing-3"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := webhook.Envelope(e)
	if _, err := h.store.FanOut(context.Background(), e, body, []string{sub.ID}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return e
}

// waitAfter is the wait an attempt's log entry scheduled after the attempt
// ended: next_attempt_at less attempted_at (its start) and duration_ms.
// duration_ms is whole milliseconds and the attempt's clock readings
// bracket its request, so this is the scheduled wait or a few ms more.
func waitAfter(a webhook.Attempt) time.Duration {
	return a.NextAttemptAt.Sub(a.AttemptedAt) - time.Duration(a.DurationMS)*time.Millisecond
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestRefusedAtDialTime: a subscription whose address the worker's policy
// does not allow (loopback, no allow list) is never connected to.
func TestRefusedAtDialTime(t *testing.T) {
	h := newHarness(t)
	rc := newReceiver(t, nil)
	localhost := strings.Replace(rc.URL, "127.0.0.1", "localhost", 1)
	subs := []*webhook.Subscription{
		h.subscribe(t, rc.URL+"/ip", "secret-of-sixteen+", events.SpecUpdated),
		h.subscribe(t, localhost+"/name", "secret-of-sixteen+", events.SpecUpdated),
	}
	cfg := h.config()
	cfg.Policy = netguard.Policy{}
	h.start(t, cfg)
	h.publish(t, events.SpecUpdated, map[string]string{"slug": "x"})
	for _, sub := range subs {
		eventually(t, 20*time.Second, "refused attempts", func() bool { return len(h.attempts(t, sub.ID)) == 4 })
		for _, a := range h.attempts(t, sub.ID) {
			if a.Outcome != webhook.OutcomeRefused || a.StatusCode != nil || !strings.Contains(*a.Error, "not a public address") {
				t.Errorf("attempt %s", mustJSON(a))
			}
		}
	}
	if rc.count() != 0 {
		t.Errorf("the receiver was reached %d times", rc.count())
	}
}

// TestAutoDisable: a subscription that has failed for DisableAfter without
// a success is disabled, on an injected clock.
func TestAutoDisable(t *testing.T) {
	h := newHarness(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	sub := h.subscribe(t, rc.URL, "secret-of-sixteen+", events.SpecUpdated)
	var mu sync.Mutex
	// A second ahead of the wall clock, so the event queued below (at the
	// wall-clock time) is due on the frozen clock.
	now := time.Now().Add(time.Second)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	cfg := h.config()
	cfg.Clock = clock
	cfg.Schedule = []time.Duration{time.Hour, time.Hour, time.Hour}
	cfg.DisableAfter = 72 * time.Hour
	h.start(t, cfg)
	h.publishTo(t, sub)
	eventually(t, 10*time.Second, "the first failure", func() bool { return len(h.attempts(t, sub.ID)) == 1 })
	s, _ := h.store.Get(context.Background(), "", sub.ID)
	if s.FailingSince.IsZero() || s.Status != webhook.StatusActive {
		t.Fatalf("after one failure: %+v", s)
	}
	advance(73 * time.Hour)
	eventually(t, 10*time.Second, "the subscription disabled", func() bool {
		s, _ := h.store.Get(context.Background(), "", sub.ID)
		return s.Status == webhook.StatusDisabled && s.DisabledReason == "failing"
	})
	if rc.count() != 2 {
		t.Errorf("%d requests, want 2", rc.count())
	}
}

// TestGracefulShutdown: a delivery in flight when the worker is told to
// stop is finished and recorded, not lost or repeated.
func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{}, 1)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		time.Sleep(500 * time.Millisecond)
	})
	sub := h.subscribe(t, rc.URL, "secret-of-sixteen+", events.SpecUpdated)
	stop := h.start(t, h.config())
	h.publishTo(t, sub)
	<-entered
	stop()
	a := h.attempts(t, sub.ID)
	if len(a) != 1 || a[0].Outcome != webhook.OutcomeDelivered {
		t.Errorf("after shutdown the log is %s", mustJSON(a))
	}
	if !h.idle(t) {
		t.Error("the delivery is still queued after a graceful stop")
	}
}

// TestRedisRestart: subscriptions, deliveries waiting for a retry and the
// stream survive Redis restarts, graceful and crashed, while the worker runs.
func TestRedisRestart(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	up := false
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			w.WriteHeader(503)
		}
	})
	sub := h.subscribe(t, rc.URL, "secret-of-sixteen+", events.SpecUpdated)
	cfg := h.config()
	cfg.Schedule = []time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	h.start(t, cfg)
	e := h.publish(t, events.SpecUpdated, map[string]string{"slug": "x"})
	eventually(t, 10*time.Second, "a failed first attempt", func() bool { return rc.count() >= 1 })

	for _, crash := range []bool{false, true} {
		// appendfsync everysec: wait for the fsync before a crash.
		time.Sleep(1200 * time.Millisecond)
		h.redis.Restart(crash)
		s, err := h.store.Get(context.Background(), "", sub.ID)
		if err != nil || s.Status != webhook.StatusActive {
			t.Fatalf("after restart (crash=%v) the subscription is %v, %v", crash, s, err)
		}
		if n, _ := h.rdb.ZCard(context.Background(), webhook.KeyDue).Result(); n != 1 {
			t.Fatalf("after restart (crash=%v) %d deliveries are queued, want 1", crash, n)
		}
	}
	// An event published now, with the worker reconnected, is delivered too.
	mu.Lock()
	up = true
	mu.Unlock()
	e2 := h.publish(t, events.SpecUpdated, map[string]string{"slug": "y"})
	eventually(t, 30*time.Second, "both deliveries", func() bool { return h.idle(t) })
	seen := map[string]bool{}
	for _, d := range rc.deliveries() {
		seen[d.Header.Get("webhook-id")] = true
	}
	if !seen[e.ID] || !seen[e2.ID] {
		t.Errorf("delivered %v, want %s and %s", seen, e.ID, e2.ID)
	}
}
