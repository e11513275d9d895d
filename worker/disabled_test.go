package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestPendingOfStoppedSubscription: two deliveries wait for their retry at
// a real receiver when their subscription stops. Disabled (the receiver
// answers 410 to a third event), they become dead letters saying why, with
// a log line naming them and no secret, and with the status and error of
// their one attempt (not "not attempted"); disabled by an operator, the
// same; deleted by the owner, they are dropped. Nothing pending is lost without a trace (docs/operations.md,
// dead letters).
func TestPendingOfStoppedSubscription(t *testing.T) {
	const secret = "secret-of-sixteen+never-logged"
	testCases := []struct {
		desc string
		// stop ends the subscription once both deliveries have failed once.
		stop       func(t *testing.T, h *harness, rc *receiver, sub *webhook.Subscription)
		wantDead   bool
		wantReason string
	}{
		{
			desc: "disabled by a 410 to another event",
			stop: func(t *testing.T, h *harness, rc *receiver, sub *webhook.Subscription) {
				h.publishTo(t, sub)
				eventually(t, 10*time.Second, "the subscription disabled", func() bool {
					s, _ := h.store.Get(context.Background(), "", sub.ID)
					return s != nil && s.Status == webhook.StatusDisabled
				})
			},
			wantDead:   true,
			wantReason: "subscription disabled: gone",
		},
		{
			desc: "disabled by an operator",
			stop: func(t *testing.T, h *harness, rc *receiver, sub *webhook.Subscription) {
				if _, _, err := h.store.Disable(context.Background(), sub.ID, webhook.ReasonOperator, time.Now()); err != nil {
					t.Fatal(err)
				}
			},
			wantDead:   true,
			wantReason: "subscription disabled: " + webhook.ReasonOperator,
		},
		{
			desc: "deleted by its owner",
			stop: func(t *testing.T, h *harness, rc *receiver, sub *webhook.Subscription) {
				if err := h.store.Delete(context.Background(), sub.ClientID, sub.ID); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			logs := &logging.Buffer{}
			cfg := h.config()
			// Long enough for the third event to disable the subscription
			// before the first two come due again.
			cfg.Schedule = []time.Duration{3 * time.Second, 3 * time.Second}
			cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			// 500 to the first two requests, 410 to every later one.
			rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n < 2 {
					w.WriteHeader(http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusGone)
			})
			sub := h.subscribe(t, rc.URL+"/hook", secret, events.SpecUpdated)
			h.start(t, cfg)
			pending := map[string]bool{}
			for range 2 {
				pending[webhook.DeliveryID(h.publishTo(t, sub).ID, sub.ID)] = true
			}
			eventually(t, 10*time.Second, "both deliveries tried once", func() bool { return rc.count() == 2 })
			tc.stop(t, h, rc, sub)
			eventually(t, 20*time.Second, "an empty queue", func() bool { return h.idle(t) })
			if n := rc.count(); n > 3 {
				t.Errorf("the receiver got %d requests after the subscription stopped", n)
			}

			msgs, err := h.rdb.XRange(context.Background(), webhook.KeyDead, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]webhook.DeadLetter{}
			for _, m := range msgs {
				var dl webhook.DeadLetter
				if err := json.Unmarshal([]byte(m.Values["delivery"].(string)), &dl); err != nil {
					t.Fatal(err)
				}
				got[dl.Delivery] = dl
			}
			for id := range pending {
				dl, ok := got[id]
				switch {
				case tc.wantDead && !ok:
					t.Errorf("delivery %s is not a dead letter; dead letters: %v", id, msgs)
				case tc.wantDead && (dl.Reason != tc.wantReason || dl.Subscription != sub.ID || dl.Attempts != 1):
					t.Errorf("dead letter %+v, want reason %q after 1 attempt", dl, tc.wantReason)
				case tc.wantDead && (dl.LastStatus != http.StatusInternalServerError || dl.LastError != "the receiver answered 500"):
					t.Errorf("dead letter %+v lost its attempt's status and error (500)", dl)
				case tc.wantDead && !strings.Contains(logs.String(), id):
					t.Errorf("no log line names delivery %s", id)
				case !tc.wantDead && ok:
					t.Errorf("a delivery of a deleted subscription became a dead letter: %+v", dl)
				}
			}
			if strings.Contains(logs.String(), secret) {
				t.Error("the log holds the subscription's secret")
			}
		})
	}
}

// TestDisableCountedOnce: the subscription-disabled counter and warning
// line are for the finish that disabled the subscription, not for every
// 410 (docs/decisions.md, operator commands). Several deliveries of one
// subscription are in flight at once when the receiver answers 410 to
// all, or an operator disables it while one is: each delivery becomes a
// dead letter, but the subscription is disabled once, with the first
// reason.
func TestDisableCountedOnce(t *testing.T) {
	testCases := []struct {
		desc       string
		deliveries int
		// meanwhile runs while every attempt waits for its answer.
		meanwhile   func(t *testing.T, h *harness, sub *webhook.Subscription)
		wantReason  string
		wantCounted float64
	}{
		{desc: "three deliveries answered 410 at once", deliveries: 3, wantReason: "gone", wantCounted: 1},
		{
			desc:       "disabled by an operator while a delivery is in flight, then answered 410",
			deliveries: 1,
			meanwhile: func(t *testing.T, h *harness, sub *webhook.Subscription) {
				if res, _, err := h.store.Disable(context.Background(), sub.ID, webhook.ReasonOperator, time.Now()); err != nil || res != webhook.SwitchDone {
					t.Errorf("Disable: %q, %v", res, err)
				}
			},
			wantReason: webhook.ReasonOperator,
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			logs := &logging.Buffer{}
			reg := prometheus.NewRegistry()
			cfg := h.config()
			cfg.Registry = reg
			cfg.Timeout, cfg.Lease = 5*time.Second, 10*time.Second
			cfg.Log = slog.New(slog.NewJSONHandler(logs, nil))
			release := make(chan struct{})
			rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-time.After(4 * time.Second):
				}
				w.WriteHeader(http.StatusGone)
			})
			sub := h.subscribe(t, rc.URL+"/hook", "secret-of-sixteen+", events.SpecUpdated)
			for range tc.deliveries {
				h.publishTo(t, sub)
			}
			h.start(t, cfg)
			eventually(t, 10*time.Second, "every delivery in flight", func() bool { return rc.count() == tc.deliveries })
			if tc.meanwhile != nil {
				tc.meanwhile(t, h, sub)
			}
			close(release)
			eventually(t, 10*time.Second, "an empty queue", func() bool { return h.idle(t) })

			s, err := h.store.Get(context.Background(), "", sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != webhook.StatusDisabled || s.DisabledReason != tc.wantReason {
				t.Errorf("status %q, reason %q; want disabled, %q", s.Status, s.DisabledReason, tc.wantReason)
			}
			if n := h.rdb.XLen(context.Background(), webhook.KeyDead).Val(); n != int64(tc.deliveries) {
				t.Errorf("%d dead letters, want %d", n, tc.deliveries)
			}
			if got := counterValue(t, reg, "iw_worker_subscriptions_disabled_total"); got != tc.wantCounted {
				t.Errorf("iw_worker_subscriptions_disabled_total = %v, want %v", got, tc.wantCounted)
			}
			if got := strings.Count(logs.String(), `"msg":"worker: subscription disabled"`); got != int(tc.wantCounted) {
				t.Errorf("%d \"subscription disabled\" log lines, want %v", got, tc.wantCounted)
			}
		})
	}
}
