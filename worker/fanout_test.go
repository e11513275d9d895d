package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestFanOutAsPublished: with the worker stopped (down or behind), events
// wait in the stream, and subscriptions change meanwhile. Once the real
// worker starts, each event goes to exactly the subscriptions active when
// it was published, whenever it is fanned out (docs/decisions.md, "Fan-out
// follows the subscriptions as they were when the event was published";
// docs/operations.md, disabling subscriptions): one disabled then gets no
// delivery even if enabled since, one disabled since gets a dead letter
// that a replay delivers once it is enabled, and one created after the
// event gets nothing. A second subscription, active throughout, shows the
// event was fanned out.
func TestFanOutAsPublished(t *testing.T) {
	ctx := context.Background()
	disable := func(t *testing.T, h *harness, sub *webhook.Subscription) {
		t.Helper()
		if res, _, err := h.store.Disable(ctx, sub.ID, webhook.ReasonOperator, time.Now()); err != nil || res != webhook.SwitchDone {
			t.Fatalf("Disable: %q, %v", res, err)
		}
	}
	enable := func(t *testing.T, h *harness, sub *webhook.Subscription) {
		t.Helper()
		if res, _, err := h.store.Enable(ctx, sub.ID); err != nil || res != webhook.SwitchDone {
			t.Fatalf("Enable: %q, %v", res, err)
		}
	}
	// publish publishes the event between two pauses: Redis dates the
	// publication and every change of status in whole milliseconds, and a
	// change in the publication's millisecond counts in the event's favour,
	// so the steps of a case are kept in milliseconds of their own.
	publish := func(t *testing.T, h *harness) events.Event {
		time.Sleep(3 * time.Millisecond)
		e := h.publish(t, events.ArticleRetracted, map[string]string{"slug": "retracted-meanwhile"})
		time.Sleep(3 * time.Millisecond)
		return e
	}
	const secret = "whsec_ZmFuLW91dC1hcy1wdWJsaXNoZWQ="
	testCases := []struct {
		desc string
		// stopped runs with the worker stopped: it subscribes url (with
		// h.subscribe), publishes the event, and changes the subscription.
		stopped func(t *testing.T, h *harness, url string) (*webhook.Subscription, events.Event)
		// wantDead is the reason of the subscription's dead letter of the
		// event once the worker is done ("": none).
		wantDead string
		// replay enables the subscription after the worker is done and
		// replays its dead letters (iwctl subscriptions enable, iwctl
		// deadletters replay --subscription).
		replay bool
		// wantDelivered: the subscription's receiver gets the event.
		wantDelivered bool
	}{
		{
			desc: "active throughout",
			stopped: func(t *testing.T, h *harness, url string) (*webhook.Subscription, events.Event) {
				sub := h.subscribe(t, url, secret, events.ArticleRetracted)
				return sub, publish(t, h)
			},
			wantDelivered: true,
		},
		{
			desc: "(a) disabled when published, enabled again before the fan-out: no delivery",
			stopped: func(t *testing.T, h *harness, url string) (*webhook.Subscription, events.Event) {
				sub := h.subscribe(t, url, secret, events.ArticleRetracted)
				disable(t, h, sub)
				e := publish(t, h)
				enable(t, h, sub)
				return sub, e
			},
		},
		{
			desc: "(b) active when published, disabled before the fan-out: a dead letter, delivered by a replay once enabled",
			stopped: func(t *testing.T, h *harness, url string) (*webhook.Subscription, events.Event) {
				sub := h.subscribe(t, url, secret, events.ArticleRetracted)
				e := publish(t, h)
				disable(t, h, sub)
				return sub, e
			},
			wantDead:      "subscription disabled: " + webhook.ReasonOperator,
			replay:        true,
			wantDelivered: true,
		},
		{
			desc: "active when published, disabled and enabled again before the fan-out: delivered",
			stopped: func(t *testing.T, h *harness, url string) (*webhook.Subscription, events.Event) {
				sub := h.subscribe(t, url, secret, events.ArticleRetracted)
				e := publish(t, h)
				disable(t, h, sub)
				enable(t, h, sub)
				return sub, e
			},
			wantDelivered: true,
		},
		{
			desc: "(c) created 90 ms after the event: no delivery",
			stopped: func(t *testing.T, h *harness, url string) (*webhook.Subscription, events.Event) {
				e := publish(t, h)
				time.Sleep(90 * time.Millisecond)
				return h.subscribe(t, url, secret, events.ArticleRetracted), e
			},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			control := newReceiver(t, nil)
			h.subscribe(t, control.URL+"/hook", secret, events.ArticleRetracted)
			rc := newReceiver(t, nil)
			sub, e := tc.stopped(t, h, rc.URL+"/hook")

			h.start(t, h.config())
			eventually(t, 10*time.Second, "the event fanned out and the queue empty", func() bool {
				return control.count() == 1 && h.idle(t)
			})
			dead, err := h.store.DeadLettersOf(ctx, sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantDead == "" && len(dead) > 0:
				t.Errorf("dead letters %+v; want none", dead)
			case tc.wantDead != "" && (len(dead) != 1 || dead[0].EventID != e.ID || dead[0].Reason != tc.wantDead):
				t.Errorf("dead letters %+v; want one of event %s with reason %q", dead, e.ID, tc.wantDead)
			}
			if tc.replay {
				enable(t, h, sub)
				for _, d := range dead {
					if res, err := h.store.Replay(ctx, d, time.Now()); err != nil || res != webhook.ReplayDone {
						t.Fatalf("Replay: %q, %v", res, err)
					}
				}
				eventually(t, 10*time.Second, "the replayed delivery made", func() bool { return rc.count() > 0 && h.idle(t) })
			}

			got := rc.deliveries()
			switch {
			case !tc.wantDelivered && len(got) > 0:
				t.Errorf("the subscription got %d deliveries (first: %s); want none", len(got), got[0].Body)
			case tc.wantDelivered && len(got) != 1:
				t.Errorf("the subscription got %d deliveries; want 1", len(got))
			case tc.wantDelivered && envelope(t, got[0].Body).ID != e.ID:
				t.Errorf("the subscription got %s; want event %s", got[0].Body, e.ID)
			}
		})
	}
}
