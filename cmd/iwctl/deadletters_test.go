package main

import (
	"context"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestDeadLetters lists and replays real dead letters through iwctl against
// a real Redis, in order: the replay of an active subscription's dead
// letter queues it and removes it, a second replay finds nothing to do, and
// a disabled subscription's dead letter is reported skipped and kept.
func TestDeadLetters(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	rdb := rs.Client()
	ws := webhook.NewStore(rdb)
	ctx := context.Background()
	now := time.Now()

	const secret, creds = "whsec_sEcReTsEcReT", "user:hunter2"
	dead := map[string]string{} // subscription id -> its dead letter's entry id
	for _, id := range []string{"sub_active", "sub_disabled"} {
		sub := &webhook.Subscription{ID: id, ClientID: "client-1", URL: "https://" + creds + "@example.test/hook",
			Events: []string{events.ArticleRetracted}, Secret: secret, CreatedAt: now.Add(-time.Hour), Status: webhook.StatusActive}
		if err := ws.Create(ctx, sub); err != nil {
			t.Fatal(err)
		}
		e, err := events.New(events.ArticleRetracted, now.Add(-time.Hour), map[string]string{"slug": id})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := webhook.Envelope(e)
		if _, err := ws.FanOut(ctx, e, body, []string{id}, now.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		jobs, err := ws.Claim(ctx, now, time.Minute, 10)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claimed %d jobs (err %v); want 1", len(jobs), err)
		}
		mode := webhook.FinishDead
		if id == "sub_disabled" {
			mode = webhook.FinishDisable // disables the subscription too
		}
		o := webhook.Outcome{Mode: mode, Reason: "gone", LastStatus: 410, LastError: `Post "https://` + creds + `@example.test/hook": 410`}
		if _, err := ws.Finish(ctx, jobs[0], sub, o, 100, now); err != nil {
			t.Fatal(err)
		}
		list, err := ws.DeadLetterList(ctx, 1)
		if err != nil || len(list) != 1 {
			t.Fatal(list, err)
		}
		dead[id] = list[0].EntryID
	}
	due := func() int64 { return rdb.ZCard(ctx, webhook.KeyDue).Val() }
	deadN := func() int64 { return rdb.XLen(ctx, webhook.KeyDead).Val() }

	cases := []struct {
		desc    string
		args    []string
		want    []string // lines of output contain these, in order
		wantErr string   // a usage error (exit 2)
		failErr string   // a failure (exit 1), after the output
		due     int64    // deliveries queued after the command
		dead    int64    // dead letters left after the command
	}{
		{desc: "list shows both, newest first", args: []string{"deadletters", "list"},
			want: []string{dead["sub_disabled"] + " delivery=dlv_", dead["sub_active"] + " delivery=dlv_"}, due: 0, dead: 2},
		{desc: "list --limit 1 shows the newest", args: []string{"deadletters", "list", "--limit", "1"},
			want: []string{dead["sub_disabled"] + " delivery=dlv_"}, due: 0, dead: 2},
		{desc: "replay of an active subscription's dead letter", args: []string{"deadletters", "replay", dead["sub_active"]},
			want: []string{dead["sub_active"] + ": replayed", "replayed 1 of 1"}, due: 1, dead: 1},
		{desc: "replay again finds it gone, and fails", args: []string{"deadletters", "replay", dead["sub_active"]},
			want: []string{dead["sub_active"] + ": skipped: no such dead letter", "replayed 0 of 1"}, failErr: "not every dead letter", due: 1, dead: 1},
		{desc: "replay of an id never seen fails", args: []string{"deadletters", "replay", "0-1"},
			want: []string{"0-1: skipped: no such dead letter", "replayed 0 of 1"}, failErr: "not every dead letter", due: 1, dead: 1},
		{desc: "replay of a disabled subscription's dead letters is skipped, and fails", args: []string{"deadletters", "replay", "--subscription", "sub_disabled"},
			want: []string{dead["sub_disabled"] + ": skipped: subscription disabled", "replayed 0 of 1"}, failErr: "not every dead letter", due: 1, dead: 1},
		{desc: "replay of a subscription that missed nothing succeeds", args: []string{"deadletters", "replay", "--subscription", "sub_active"},
			want: []string{"no dead letters of subscription sub_active: nothing to replay", "replayed 0 of 0"}, due: 1, dead: 1},
		{desc: "replay of a subscription that does not exist fails", args: []string{"deadletters", "replay", "--subscription", "sub_x"},
			want: []string{"no subscription sub_x, and no dead letters of it", "replayed 0 of 0"}, failErr: "not every dead letter", due: 1, dead: 1},
		{desc: "replay of a malformed id is a usage error", args: []string{"deadletters", "replay", "bogus"}, wantErr: "not a dead-letter entry id", due: 1, dead: 1},
		{desc: "replay of a malformed id among good ones replays nothing", args: []string{"deadletters", "replay", dead["sub_disabled"], "1-2-3"}, wantErr: "not a dead-letter entry id", due: 1, dead: 1},
		{desc: "replay without ids or subscription", args: []string{"deadletters", "replay"}, wantErr: "--subscription", due: 1, dead: 1},
		{desc: "unknown subcommand", args: []string{"deadletters", "purge"}, wantErr: "unknown deadletters subcommand", due: 1, dead: 1},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			checkCommand(ctx, t, tc.args, tc.want, tc.wantErr, tc.failErr, secret, creds, "hunter2")
			if got := due(); got != tc.due {
				t.Fatalf("%d deliveries queued; want %d", got, tc.due)
			}
			if got := deadN(); got != tc.dead {
				t.Fatalf("%d dead letters; want %d", got, tc.dead)
			}
		})
	}
}
