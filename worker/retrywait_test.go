package worker_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestRetryWait: the wait the worker schedules after one failed attempt, for
// each kind of answer a real receiver can give, with a 2 s step and a 5 s
// floor standing for the 60 s after a 429 or a timeout. A Retry-After may
// lengthen the step to at most twice its length, never shorten it; a date
// far ahead is capped like a number of seconds (docs/decisions.md,
// "Retries").
func TestRetryWait(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	const step, floor = 2 * time.Second, 5 * time.Second
	cfg.Schedule = []time.Duration{step, step}
	cfg.ThrottleFloor = floor
	h.start(t, cfg)

	answer := func(status int, retryAfter string) func(int, http.ResponseWriter, *http.Request) {
		return func(_ int, w http.ResponseWriter, _ *http.Request) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
		}
	}
	testCases := []struct {
		desc    string
		respond func(int, http.ResponseWriter, *http.Request)
		want    time.Duration
	}{
		{desc: "500 waits the step", respond: answer(500, ""), want: step},
		{desc: "503 with a Retry-After shorter than the step waits the step", respond: answer(503, "1"), want: step},
		{desc: "503 with a Retry-After between one and two steps is honoured", respond: answer(503, "3"), want: 3 * time.Second},
		{desc: "503 with a Retry-After beyond two steps waits two steps", respond: answer(503, "100"), want: 2 * step},
		{desc: "503 with a Retry-After date in 2099 waits two steps", respond: answer(503, "Fri, 31 Dec 2099 23:59:59 GMT"), want: 2 * step},
		{desc: "503 with a Retry-After date in the past waits the step", respond: answer(503, "Sun, 06 Nov 1994 08:49:37 GMT"), want: step},
		{desc: "429 with a short Retry-After waits the floor", respond: answer(429, "2"), want: floor},
		{desc: "429 without Retry-After waits the floor", respond: answer(429, ""), want: floor},
		{desc: "a timeout waits the floor", respond: func(int, http.ResponseWriter, *http.Request) { time.Sleep(1500 * time.Millisecond) }, want: floor},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tc.respond)
			sub := h.subscribe(t, rc.URL+"/hook", "secret-of-sixteen+", events.SpecUpdated)
			h.publishTo(t, sub)
			var a []webhook.Attempt
			eventually(t, 20*time.Second, "the first attempt", func() bool { a = h.attempts(t, sub.ID); return len(a) >= 1 })
			if a[0].NextAttemptAt == nil {
				t.Fatalf("no retry scheduled: %s", mustJSON(a))
			}
			if got := waitAfter(a[0]); got < tc.want || got > tc.want+100*time.Millisecond {
				t.Errorf("retry scheduled %s after the attempt, want %s", got, tc.want)
			}
			// The delivery is still queued: nothing was dropped.
			if n, _ := h.rdb.ZCard(context.Background(), webhook.KeyDue).Result(); n == 0 {
				t.Error("the queue is empty after a failed attempt")
			}
		})
	}
}

// TestRetrySchedule: the n-th retry of a failing delivery waits the n-th
// step of the schedule, and the delivery is dead after the last one
// (docs/decisions.md, "Retries"). The steps are distinct, so a worker that
// waited any one step for every retry would show.
func TestRetrySchedule(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	cfg.Schedule = []time.Duration{40 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond}
	h.start(t, cfg)

	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	sub := h.subscribe(t, rc.URL+"/hook", "secret-of-sixteen+", events.SpecUpdated)
	h.publishTo(t, sub)
	attempts := len(cfg.Schedule) + 1
	var a []webhook.Attempt
	eventually(t, 20*time.Second, "every attempt", func() bool {
		a = h.attempts(t, sub.ID)
		return len(a) >= attempts && h.idle(t)
	})
	ds := rc.deliveries()
	if len(a) != attempts || len(ds) != attempts {
		t.Fatalf("%d attempts logged, %d requests; want %d: %s", len(a), len(ds), attempts, mustJSON(a))
	}
	slices.SortFunc(a, func(x, y webhook.Attempt) int { return x.Attempt - y.Attempt })
	for i, step := range cfg.Schedule {
		// The log says when the retry was due, and the receiver when it
		// came: no sooner than the step after the failed attempt.
		if a[i].NextAttemptAt == nil {
			t.Errorf("attempt %d: no retry scheduled: %s", a[i].Attempt, mustJSON(a[i]))
		} else if got := waitAfter(a[i]); got < step || got > step+100*time.Millisecond {
			t.Errorf("retry %d scheduled %s after attempt %d, want the step %s", i+1, got, a[i].Attempt, step)
		}
		if gap := ds[i+1].At.Sub(ds[i].At); gap < step-5*time.Millisecond {
			t.Errorf("retry %d came %s after attempt %d, before the step %s", i+1, gap, i+1, step)
		}
	}
	if last := a[attempts-1]; last.NextAttemptAt != nil {
		t.Errorf("attempt %d, past the schedule, scheduled a retry: %s", last.Attempt, mustJSON(last))
	}
}
