package webhook

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

// storedSub is everything Redis holds about a subscription outside its
// deliveries and its log: every field of its hash, its key's TTL, whether
// each kind set of the catalog names it and whether its client's index
// does, and the record of its past active periods: its spans, and whether
// each kind's ended set names it. The spans are dated by Redis's clock, so
// they are written relative to active_since, the start of the last active
// period: "since-later" is a period from then to a later time.
type storedSub struct {
	Hash    map[string]string
	TTL     time.Duration
	Kinds   map[string]bool
	Indexed bool
	Spans   []string
	Ended   map[string]bool
}

// clockFree is st with its times by Redis's clock left out, to compare
// two subscriptions created at different times.
func (st storedSub) clockFree() storedSub {
	st.Hash = maps.Clone(st.Hash)
	delete(st.Hash, "active_since")
	return st
}

func readStoredSub(t *testing.T, rdb redis.UniversalClient, id, client string) storedSub {
	t.Helper()
	ctx := context.Background()
	st := storedSub{Kinds: map[string]bool{}, Ended: map[string]bool{}}
	var err error
	if st.Hash, err = rdb.HGetAll(ctx, keySub(id)).Result(); err != nil {
		t.Fatal(err)
	}
	if st.TTL, err = rdb.TTL(ctx, keySub(id)).Result(); err != nil {
		t.Fatal(err)
	}
	for _, k := range events.Kinds {
		if st.Kinds[k], err = rdb.SIsMember(ctx, keyKind(k), id).Result(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZScore(ctx, keyEnded(k), id).Err(); err == nil {
			st.Ended[k] = true
		} else if !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	spans, err := rdb.ZRange(ctx, keySpans(id), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spans {
		since, until, _ := strings.Cut(sp, "-")
		if a, b := st.Hash["active_since"], until; since == a && len(b) == len(a) && b >= a {
			sp = "since-later"
		}
		st.Spans = append(st.Spans, sp)
	}
	if err := rdb.ZScore(ctx, keyClient(client), id).Err(); err == nil {
		st.Indexed = true
	} else if !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return st
}

// TestDisableSameEitherPath: a subscription is disabled by an operator
// (Store.Disable, iwctl subscriptions disable) or by the worker after a 410
// or the failing rule (FinishDisable through FinishBatch, as the worker
// records it). Both run luaDisable, so from the same state they must leave
// the same stored subscription, field for field, index for index; and that
// state is the one docs/decisions.md, "Operator commands end access at
// once", describes: out of every kind set, the first disable's reason and time kept, the failure
// clock untouched, nothing written for a deleted one. Another subscription
// to the same kinds is left alone.
func TestDisableSameEitherPath(t *testing.T) {
	rs := redistest.New(t)
	rdb := rs.Client()
	s := NewStore(rdb)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	earlier := now.Add(-2 * time.Hour)
	failing := now.Add(-73 * time.Hour)
	const id, other, client = "sub_same", "sub_other", "cli_same"
	kinds := []string{events.ArticlePublished, events.SpecUpdated}

	cases := []struct {
		desc   string
		reason string
		// prep changes the subscription after the worker read it and
		// before the disable.
		prep func(t *testing.T)
		// want are the fields that the disable decides ("" for absent);
		// the others must be as created.
		want    map[string]string
		deleted bool
		// changes: this disable is the one that disables it (Disable
		// answers SwitchDone, FinishBatch RecordedDisabled).
		changes bool
	}{
		{
			desc:    "active, never failed: a 410",
			reason:  "gone",
			want:    map[string]string{"status": StatusDisabled, "disabled_reason": "gone", "disabled_at": itoa(msec(now)), "failing_since": ""},
			changes: true,
		},
		{
			desc:   "active, failing for 73 h: the failing rule",
			reason: "failing",
			prep: func(t *testing.T) {
				rdb.HSet(ctx, keySub(id), "failing_since", msec(failing))
			},
			want:    map[string]string{"status": StatusDisabled, "disabled_reason": "failing", "disabled_at": itoa(msec(now)), "failing_since": itoa(msec(failing))},
			changes: true,
		},
		{
			desc:    "active: an operator",
			reason:  ReasonOperator,
			want:    map[string]string{"status": StatusDisabled, "disabled_reason": ReasonOperator, "disabled_at": itoa(msec(now)), "failing_since": ""},
			changes: true,
		},
		{
			desc:   "disabled by an operator while an attempt was in flight: the 410 keeps the operator's reason and time",
			reason: "gone",
			prep: func(t *testing.T) {
				if res, _, err := s.Disable(ctx, id, ReasonOperator, earlier); err != nil || res != SwitchDone {
					t.Fatalf("disabling first: %q, %v", res, err)
				}
			},
			want: map[string]string{"status": StatusDisabled, "disabled_reason": ReasonOperator, "disabled_at": itoa(msec(earlier)), "failing_since": ""},
		},
		{
			desc:   "disabled by a 410 but still named by its kind sets: they are mended, the reason kept",
			reason: "failing",
			prep: func(t *testing.T) {
				rdb.HSet(ctx, keySub(id), "status", StatusDisabled, "disabled_reason", "gone", "disabled_at", msec(earlier), "failing_since", msec(failing))
			},
			want: map[string]string{"status": StatusDisabled, "disabled_reason": "gone", "disabled_at": itoa(msec(earlier)), "failing_since": itoa(msec(failing))},
		},
		{
			desc:    "deleted by its owner meanwhile: nothing is written",
			reason:  "gone",
			prep:    func(t *testing.T) { s.Delete(ctx, client, id) },
			deleted: true,
		},
	}

	// start deletes every {subs} key (one slot, so one DEL on a cluster
	// too), stores the two subscriptions and returns the one to disable
	// as the worker reads it before its attempt.
	start := func(t *testing.T) *Subscription {
		t.Helper()
		if keys, err := redistest.Keys(ctx, rdb, keyPrefix+"*"); err != nil {
			t.Fatal(err)
		} else if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for _, sid := range []string{id, other} {
			sub := &Subscription{ID: sid, ClientID: client, URL: "https://hooks.example.test/x", Events: kinds,
				Secret: "whsec_c2FtZS1laXRoZXItcGF0aA==", CreatedAt: now.Add(-24 * time.Hour), Status: StatusActive}
			if err := s.Create(ctx, sub); err != nil {
				t.Fatal(err)
			}
		}
		sub, err := s.Get(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}

	paths := []struct {
		name    string
		disable func(t *testing.T, sub *Subscription, reason string, deleted, changes bool)
	}{
		{"operator (Store.Disable)", func(t *testing.T, sub *Subscription, reason string, deleted, changes bool) {
			res, _, err := s.Disable(ctx, id, reason, now)
			want := map[bool]string{true: SwitchDone, false: SwitchUnchanged}[changes]
			switch {
			case deleted && !errors.Is(err, ErrNotFound):
				t.Fatalf("Disable of a deleted subscription: %q, %v; want ErrNotFound", res, err)
			case !deleted && err != nil:
				t.Fatal(err)
			case !deleted && res != want:
				t.Errorf("Disable answered %q, want %q", res, want)
			}
		}},
		{"worker (FinishDisable)", func(t *testing.T, sub *Subscription, reason string, deleted, changes bool) {
			e, err := events.New(events.SpecUpdated, now.Add(-time.Minute), map[string]string{"slug": "x"})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := Envelope(e)
			if _, err := s.FanOut(ctx, e, body, []string{id}, now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			jobs, err := s.Claim(ctx, now, 30*time.Second, 10)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claimed %d jobs (err %v); want 1", len(jobs), err)
			}
			status, msg := 410, "410 Gone"
			a := &Attempt{EventID: e.ID, EventType: e.Type, Attempt: 1, AttemptedAt: now, Outcome: OutcomeFailed, StatusCode: &status, Error: &msg}
			o := Outcome{Mode: FinishDisable, Attempt: a, Reason: reason, LastStatus: status, LastError: msg}
			res, errs := s.FinishBatch(ctx, []Finished{{Job: jobs[0], Sub: sub, Outcome: o, Now: now}}, 100)
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			if want := map[bool]FinishResult{true: RecordedDisabled, false: Recorded}[changes]; res[0] != want {
				t.Errorf("FinishBatch reported %d, want %d", res[0], want)
			}
			if n, _ := rdb.XLen(ctx, KeyDead).Result(); n != 1 {
				t.Errorf("%d dead letters, want the delivery's", n)
			}
		}},
	}

	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			var got []storedSub
			for _, p := range paths {
				sub := start(t)
				created := readStoredSub(t, rdb, id, client)
				if tc.prep != nil {
					tc.prep(t)
				}
				prepped := readStoredSub(t, rdb, id, client)
				p.disable(t, sub, tc.reason, tc.deleted, tc.changes)
				st := readStoredSub(t, rdb, id, client)
				got = append(got, st.clockFree())

				want := storedSub{Hash: map[string]string{}, TTL: -2 * time.Nanosecond, Kinds: map[string]bool{}, Ended: map[string]bool{}}
				for _, k := range events.Kinds {
					want.Kinds[k] = false
				}
				if !tc.deleted {
					want.Hash, want.TTL, want.Indexed = maps.Clone(created.Hash), created.TTL, true
					// The disable that ends an active period records it;
					// one that finds it disabled adds nothing.
					want.Spans, want.Ended = prepped.Spans, prepped.Ended
					if tc.changes {
						want.Spans = append(slices.Clone(want.Spans), "since-later")
						want.Ended = map[string]bool{}
						for _, k := range kinds {
							want.Ended[k] = true
						}
					}
					for f, v := range tc.want {
						if v == "" {
							delete(want.Hash, f)
						} else {
							want.Hash[f] = v
						}
					}
				}
				if !reflect.DeepEqual(st, want) {
					t.Errorf("%s left\n%+v\nwant\n%+v", p.name, st, want)
				}
				if o := readStoredSub(t, rdb, other, client); !reflect.DeepEqual(o.Kinds, created.Kinds) || o.Hash["status"] != StatusActive {
					t.Errorf("%s changed another subscription: %+v", p.name, o)
				}
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("the paths drifted apart:\n%s: %+v\n%s: %+v", paths[0].name, got[0], paths[1].name, got[1])
			}
		})
	}
}

// TestFinishDisableFenced: the worker's disable is part of its delivery's
// outcome, so like every finish it is fenced by the lease: a worker whose
// lease ran out (the delivery was claimed again by another) logs its
// attempt and changes nothing else; the new holder decides.
func TestFinishDisableFenced(t *testing.T) {
	cases := []struct {
		desc      string
		reclaimed bool
		want      string
		result    FinishResult
	}{
		{desc: "lease held: disabled", want: StatusDisabled, result: RecordedDisabled},
		{desc: "lease lost to another worker: left active", reclaimed: true, want: StatusActive, result: LeaseLost},
	}
	rs := redistest.New(t)
	s := NewStore(rs.Client())
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for i, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			now := now.Add(time.Duration(i) * time.Hour)
			sub := &Subscription{ID: "sub_fenced" + string(rune('a'+i)), ClientID: "cli_fenced", URL: "https://hooks.example.test/x",
				Events: []string{events.SpecUpdated}, Secret: "whsec_ZmVuY2VkLWJ5LWxlYXNl", CreatedAt: now, Status: StatusActive}
			if err := s.Create(ctx, sub); err != nil {
				t.Fatal(err)
			}
			e, err := events.New(events.SpecUpdated, now, map[string]string{"slug": "x"})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := Envelope(e)
			if _, err := s.FanOut(ctx, e, body, []string{sub.ID}, now); err != nil {
				t.Fatal(err)
			}
			jobs, err := s.Claim(ctx, now, 30*time.Second, 10)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claimed %d jobs (err %v); want 1", len(jobs), err)
			}
			if tc.reclaimed {
				if again, err := s.Claim(ctx, now.Add(31*time.Second), 30*time.Second, 10); err != nil || len(again) != 1 {
					t.Fatalf("reclaimed %d jobs (err %v); want 1", len(again), err)
				}
			}
			a := &Attempt{EventID: e.ID, EventType: e.Type, Attempt: 1, AttemptedAt: now, Outcome: OutcomeFailed}
			res, err := s.Finish(ctx, jobs[0], sub, Outcome{Mode: FinishDisable, Attempt: a, Reason: "gone", LastStatus: 410}, 100, now)
			if err != nil || res != tc.result {
				t.Fatalf("Finish: %d, %v; want %d", res, err, tc.result)
			}
			got, err := s.Get(ctx, "", sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want {
				t.Errorf("status %q, want %q", got.Status, tc.want)
			}
			// Asked for an event published after the disable: one in its
			// millisecond counts in the event's favour.
			if ids, _ := s.Active(ctx, events.SpecUpdated, time.Now().Add(time.Second)); (len(ids) == 1) != (tc.want == StatusActive) {
				t.Errorf("the kind set names %v; want it only while active", ids)
			}
			if n, _ := s.rdb.LLen(ctx, keyLog(sub.ID)).Result(); n != 1 {
				t.Errorf("%d attempts logged, want 1", n)
			}
			s.rdb.ZRem(ctx, KeyDue, jobs[0].ID)
			s.rdb.SRem(ctx, keyKind(events.SpecUpdated), sub.ID)
		})
	}
}

// TestActiveAt: Active answers for the moment an event was published from
// what the status scripts recorded with Redis's clock, for data written
// before that was recorded too. Each case makes one subscription, with
// the times before and after each step, and asks about those times.
func TestActiveAt(t *testing.T) {
	rs := redistest.New(t)
	rdb := rs.Client()
	s := NewStore(rdb)
	ctx := context.Background()
	const kind = events.ArticleRetracted
	// tick is a time strictly between the steps around it: Redis's clock
	// is read in whole milliseconds.
	tick := func() time.Time {
		time.Sleep(3 * time.Millisecond)
		at := time.Now()
		time.Sleep(3 * time.Millisecond)
		return at
	}
	create := func(t *testing.T, id string) *Subscription {
		t.Helper()
		sub := &Subscription{ID: id, ClientID: "cli_at", URL: "https://hooks.example.test/x", Events: []string{kind, events.SpecUpdated},
			Secret: "whsec_YWN0aXZlLWF0LWEtdGltZQ==", CreatedAt: time.Now(), Status: StatusActive}
		if err := s.Create(ctx, sub); err != nil {
			t.Fatal(err)
		}
		return sub
	}
	toggle := func(t *testing.T, id string, disable bool) {
		t.Helper()
		var res string
		var err error
		if disable {
			res, _, err = s.Disable(ctx, id, ReasonOperator, time.Now())
		} else {
			res, _, err = s.Enable(ctx, id)
		}
		if err != nil || res != SwitchDone {
			t.Fatalf("toggle(disable=%v): %q, %v", disable, res, err)
		}
	}
	cases := []struct {
		desc string
		// steps makes sub_<n> and returns the times to ask about, with
		// whether it was active at each.
		steps func(t *testing.T, id string) (at []time.Time, want []bool)
	}{
		{
			desc: "created, disabled, enabled, disabled",
			steps: func(t *testing.T, id string) ([]time.Time, []bool) {
				t0 := tick()
				create(t, id)
				t1 := tick()
				toggle(t, id, true)
				t2 := tick()
				toggle(t, id, false)
				t3 := tick()
				toggle(t, id, true)
				t4 := tick()
				return []time.Time{t0, t1, t2, t3, t4}, []bool{false, true, false, true, false}
			},
		},
		{
			desc: "created before active_since was recorded: active since ever, until disabled",
			steps: func(t *testing.T, id string) ([]time.Time, []bool) {
				create(t, id)
				rdb.HDel(ctx, keySub(id), "active_since")
				t1 := tick()
				toggle(t, id, true)
				t2 := tick()
				return []time.Time{time.Unix(0, 0), t1, t2}, []bool{true, true, false}
			},
		},
		{
			desc: "a change in the publication's millisecond counts in the event's favour",
			steps: func(t *testing.T, id string) ([]time.Time, []bool) {
				create(t, id)
				since, err := rdb.HGet(ctx, keySub(id), "active_since").Int64()
				if err != nil {
					t.Fatal(err)
				}
				toggle(t, id, true)
				ended, err := rdb.ZScore(ctx, keyEnded(kind), id).Result()
				if err != nil {
					t.Fatal(err)
				}
				return []time.Time{time.UnixMilli(since), time.UnixMilli(int64(ended))}, []bool{true, true}
			},
		},
		{
			desc: "deleted: never, and its record goes with it",
			steps: func(t *testing.T, id string) ([]time.Time, []bool) {
				t0 := tick()
				create(t, id)
				toggle(t, id, true)
				if err := s.Delete(ctx, "cli_at", id); err != nil {
					t.Fatal(err)
				}
				if n := rdb.Exists(ctx, keySpans(id)).Val(); n != 0 {
					t.Error("the spans of a deleted subscription are left")
				}
				for _, k := range []string{kind, events.SpecUpdated} {
					if err := rdb.ZScore(ctx, keyEnded(k), id).Err(); !errors.Is(err, redis.Nil) {
						t.Errorf("the ended set of %s still names a deleted subscription (%v)", k, err)
					}
				}
				return []time.Time{t0, time.Now()}, []bool{false, false}
			},
		},
		{
			desc: "a period that ended more than the history ago is forgotten at the next disable",
			steps: func(t *testing.T, id string) ([]time.Time, []bool) {
				create(t, id)
				old := time.Now().Add(-statusHistory - time.Hour)
				span := itoa(msec(old.Add(-time.Hour))) + "-" + itoa(msec(old))
				rdb.ZAdd(ctx, keySpans(id), redis.Z{Score: float64(msec(old)), Member: span})
				rdb.ZAdd(ctx, keyEnded(kind), redis.Z{Score: float64(msec(old)), Member: "sub_forgotten"})
				toggle(t, id, true)
				if n := rdb.ZCard(ctx, keySpans(id)).Val(); n != 1 {
					t.Errorf("%d spans kept, want the one just ended", n)
				}
				if err := rdb.ZScore(ctx, keyEnded(kind), "sub_forgotten").Err(); !errors.Is(err, redis.Nil) {
					t.Errorf("an ended entry older than the history is kept (%v)", err)
				}
				return []time.Time{old.Add(-30 * time.Minute)}, []bool{false}
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			id := "sub_at" + itoa(int64(i))
			at, want := tc.steps(t, id)
			for j := range at {
				for _, k := range []string{kind, events.SpecUpdated} {
					ids, err := s.Active(ctx, k, at[j])
					if err != nil {
						t.Fatal(err)
					}
					if got := slices.Contains(ids, id); got != want[j] {
						t.Errorf("Active(%s, time %d) names it: %v, want %v (%v)", k, j, got, want[j], ids)
					}
				}
			}
		})
	}
}
