package webhook

import (
	"context"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestDefer: a delivery handed back because its receiver is busy
// (docs/decisions.md, "Per-receiver bound") is due again at the time given,
// with no attempt counted or logged; one whose lease ran out and was claimed
// again meanwhile is left to its new holder.
func TestDefer(t *testing.T) {
	cases := []struct {
		desc      string
		reclaimed bool // the lease ran out and another worker claimed it
	}{
		{desc: "lease held"},
		{desc: "lease lost to another worker", reclaimed: true},
	}
	rs := redistest.New(t)
	s := NewStore(rs.Client())
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for i, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			now := now.Add(time.Duration(i) * time.Hour)
			sub := "sub_defer" + string(rune('a'+i))
			e, err := events.New(events.SpecUpdated, now, map[string]string{"slug": "x"})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := Envelope(e)
			if _, err := s.FanOut(ctx, e, body, []string{sub}, now); err != nil {
				t.Fatal(err)
			}
			jobs, err := s.Claim(ctx, now, 30*time.Second, 10)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claimed %d jobs (err %v); want 1", len(jobs), err)
			}
			j := jobs[0]
			want := msec(now.Add(300 * time.Millisecond))
			if tc.reclaimed {
				later := now.Add(31 * time.Second)
				again, err := s.Claim(ctx, later, 30*time.Second, 10)
				if err != nil || len(again) != 1 {
					t.Fatalf("reclaimed %d jobs (err %v); want 1", len(again), err)
				}
				want = again[0].Lease
			}
			if errs := s.Defer(ctx, []*Job{j}, []time.Time{now.Add(300 * time.Millisecond)}, now); errs[0] != nil {
				t.Fatal(errs[0])
			}
			score, err := s.rdb.ZScore(ctx, KeyDue, j.ID).Result()
			if err != nil || int64(score) != want {
				t.Errorf("due at %v (err %v), want %d", int64(score), err, want)
			}
			if n, _ := s.rdb.HGet(ctx, keyJob(j.ID), "attempt").Int(); n != 0 {
				t.Errorf("attempt = %d after a deferral, want 0", n)
			}
			if n, _ := s.rdb.LLen(ctx, keyLog(sub)).Result(); n != 0 {
				t.Errorf("%d attempts logged, want none", n)
			}
			s.rdb.ZRem(ctx, KeyDue, j.ID)
		})
	}
}
