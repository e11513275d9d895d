package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

// deadLetterOf makes a real dead letter of one new event to sub: the event
// is fanned out, its delivery claimed and finished as dead, as the worker
// does when retries run out. It returns the stream entry.
func deadLetterOf(t *testing.T, s *Store, sub string, now time.Time) DeadLetterEntry {
	t.Helper()
	ctx := context.Background()
	e, err := events.New(events.ArticleRetracted, now.Add(-time.Hour), map[string]string{"slug": "x"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := Envelope(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FanOut(ctx, e, body, []string{sub}, now); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Claim(ctx, now, time.Minute, 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claimed %d jobs (err %v); want 1", len(jobs), err)
	}
	if _, err := s.Finish(ctx, jobs[0], nil, Outcome{Mode: FinishDead, LastStatus: 500}, 100, now); err != nil {
		t.Fatal(err)
	}
	list, err := s.DeadLetterList(ctx, 1)
	if err != nil || len(list) != 1 || list[0].EventID != e.ID {
		t.Fatalf("dead letters %+v (err %v); want the one of %s", list, err, e.ID)
	}
	return list[0]
}

// TestReplay replays real dead letters against a real Redis: only one whose
// subscription is active and whose body is stored is queued again (due now,
// no attempts made) and leaves the stream; the others stay, and nothing is
// queued. Replaying a second time changes nothing.
func TestReplay(t *testing.T) {
	rs := redistest.New(t)
	rdb := rs.Client()
	s := NewStore(rdb)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

	cases := []struct {
		desc   string
		breakF func(t *testing.T, e DeadLetterEntry) // what happens after the dead letter
		want   string
		again  string // the outcome of a second replay
	}{
		{desc: "active subscription is replayed", want: ReplayDone, again: ReplayGone,
			breakF: func(t *testing.T, e DeadLetterEntry) {
				// The body is near its end, as after days in the dead letters.
				if err := rdb.Expire(ctx, keyBody(e.EventID), time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
			}},
		{desc: "disabled subscription is skipped", want: ReplaySubDisabled, again: ReplaySubDisabled,
			breakF: func(t *testing.T, e DeadLetterEntry) {
				if err := rdb.HSet(ctx, keySub(e.Subscription), "status", StatusDisabled, "disabled_reason", "gone").Err(); err != nil {
					t.Fatal(err)
				}
			}},
		{desc: "deleted subscription is skipped", want: ReplaySubDeleted, again: ReplaySubDeleted,
			breakF: func(t *testing.T, e DeadLetterEntry) {
				if err := s.Delete(ctx, "client-1", e.Subscription); err != nil {
					t.Fatal(err)
				}
			}},
		{desc: "expired body is skipped", want: ReplayBodyExpired, again: ReplayBodyExpired,
			breakF: func(t *testing.T, e DeadLetterEntry) {
				if err := rdb.Del(ctx, keyBody(e.EventID)).Err(); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if err := redistest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() }); err != nil {
				t.Fatal(err)
			}
			sub := &Subscription{ID: "sub_1", ClientID: "client-1", URL: "https://u:p@example.test/hook", Events: []string{events.ArticleRetracted},
				Secret: "whsec_x", CreatedAt: now.Add(-48 * time.Hour), Status: StatusActive}
			if err := s.Create(ctx, sub); err != nil {
				t.Fatal(err)
			}
			e := deadLetterOf(t, s, sub.ID, now.Add(-time.Minute))
			if tc.breakF != nil {
				tc.breakF(t, e)
			}
			later := now.Add(time.Minute)
			for i, want := range []string{tc.want, tc.again} {
				got, err := s.Replay(ctx, e, later)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("replay %d: %q; want %q", i+1, got, want)
				}
				n, err := rdb.XLen(ctx, KeyDead).Result()
				if err != nil {
					t.Fatal(err)
				}
				if wantN := int64(1); tc.want == ReplayDone {
					if n != 0 {
						t.Fatalf("replay %d: %d dead letters left; want the replayed one gone", i+1, n)
					}
				} else if n != wantN {
					t.Fatalf("replay %d: %d dead letters; want the skipped one kept", i+1, n)
				}
				jobs, err := s.Claim(ctx, later, time.Minute, 10)
				if err != nil {
					t.Fatal(err)
				}
				if tc.want != ReplayDone || i > 0 {
					if len(jobs) != 0 {
						t.Fatalf("replay %d: %d deliveries due; want none", i+1, len(jobs))
					}
					continue
				}
				if len(jobs) != 1 {
					t.Fatalf("replay %d: %d deliveries due; want 1", i+1, len(jobs))
				}
				j := jobs[0]
				if j.ID != e.Delivery || j.SubID != e.Subscription || j.EventID != e.EventID || j.EventType != e.EventType || j.Attempts != 0 {
					t.Fatalf("replayed job %+v; want a fresh delivery %s of %s to %s", j, e.Delivery, e.EventID, e.Subscription)
				}
				if ttl := rdb.TTL(ctx, keyBody(e.EventID)).Val(); ttl < BodyTTL-time.Minute {
					t.Fatalf("the body's TTL is %v after replay; want it renewed to %v", ttl, BodyTTL)
				}
			}
		})
	}
}

// TestReplayUndecodable writes dead-letter entries that do not decode into
// the stream, as the worker keys them (one delivery field), beside an active
// subscription and a stored event body they could be mistaken for: each is
// listed, marked undecodable with a Reason that says so and nothing decoded
// from it, and Replay skips it as undecodable (not as a deleted
// subscription), keeps it, and queues nothing.
func TestReplayUndecodable(t *testing.T) {
	rs := redistest.New(t)
	rdb := rs.Client()
	s := NewStore(rdb)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

	cases := []struct {
		desc   string
		values map[string]any
	}{
		{desc: "not JSON", values: map[string]any{"delivery": "{not json"}},
		{desc: "JSON of another shape naming a real subscription and event",
			values: map[string]any{"delivery": `{"subscription":"sub_1","event_id":"EVENT","attempts":"many"}`}},
		{desc: "no event id", values: map[string]any{"delivery": `{"subscription":"sub_1","attempts":3}`}},
		{desc: "no delivery field", values: map[string]any{"other": "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if err := redistest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() }); err != nil {
				t.Fatal(err)
			}
			sub := &Subscription{ID: "sub_1", ClientID: "client-1", URL: "https://example.test/hook", Events: []string{events.ArticleRetracted},
				Secret: "whsec_x", CreatedAt: now.Add(-48 * time.Hour), Status: StatusActive}
			if err := s.Create(ctx, sub); err != nil {
				t.Fatal(err)
			}
			// A real event with its body stored, so that an entry
			// naming it would be replayable if it were trusted; its own
			// dead letter is removed.
			real := deadLetterOf(t, s, sub.ID, now.Add(-time.Minute))
			if err := rdb.XDel(ctx, KeyDead, real.EntryID).Err(); err != nil {
				t.Fatal(err)
			}
			values := map[string]any{}
			for k, v := range tc.values {
				if str, ok := v.(string); ok {
					v = strings.ReplaceAll(str, "EVENT", real.EventID)
				}
				values[k] = v
			}
			id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: KeyDead, Values: values}).Result()
			if err != nil {
				t.Fatal(err)
			}

			list, err := s.DeadLetterList(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].EntryID != id {
				t.Fatalf("listed %+v; want only entry %s", list, id)
			}
			e := list[0]
			if e.Undecodable == "" || !strings.HasPrefix(e.Reason, "undecodable entry: ") ||
				e.Subscription != "" || e.EventID != "" || e.Delivery != "" {
				t.Fatalf("listed %+v; want it marked undecodable, with nothing decoded from it", e)
			}
			later := now.Add(2 * time.Hour)
			got, err := s.Replay(ctx, e, later)
			if err != nil {
				t.Fatal(err)
			}
			if got != ReplayUndecodable {
				t.Fatalf("replay: %q; want %q", got, ReplayUndecodable)
			}
			if n := rdb.XLen(ctx, KeyDead).Val(); n != 1 {
				t.Fatalf("%d dead letters after replay; want the undecodable one kept", n)
			}
			if jobs, err := s.Claim(ctx, later, time.Minute, 10); err != nil || len(jobs) != 0 {
				t.Fatalf("%d deliveries due after replay (err %v); want none", len(jobs), err)
			}
		})
	}
}
