package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestSubscriptionsDisableEnable disables and enables subscriptions through
// iwctl against a real Redis, in order, checking what each prints, the
// status its owner would see and whether the fan-out of each of its kinds
// still names it. (TestOperatorCommandsEndToEnd shows a real worker and
// receiver obeying it.)
func TestSubscriptionsDisableEnable(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	rdb := rs.Client()
	ws := webhook.NewStore(rdb)
	ctx := context.Background()
	now := time.Now()
	kinds := []string{events.ArticlePublished, events.SpecUpdated}
	for _, id := range []string{"sub_1", "sub_gone"} {
		sub := &webhook.Subscription{ID: id, ClientID: "cli_1", URL: "https://hooks.example.test/x?sig=owner-credential",
			Events: kinds, Secret: "whsec_never-shown-anywhere", CreatedAt: now, Status: webhook.StatusActive}
		if err := ws.Create(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	// sub_gone was disabled by the worker: its receiver answered 410.
	rdb.HSet(ctx, "iw:{subs}:sub:sub_gone", "status", webhook.StatusDisabled, "disabled_reason", "gone", "failing_since", now.UnixMilli())
	for _, k := range kinds {
		rdb.SRem(ctx, "iw:{subs}:kind:"+k, "sub_gone")
	}

	cases := []struct {
		desc    string
		args    []string
		want    []string
		wantErr string // a usage error (exit 2)
		failErr string // a failure (exit 1)
		sub     string // the subscription whose state is checked
		status  string
		reason  string
	}{
		{desc: "show an active subscription", args: []string{"subscriptions", "show", "sub_1"},
			want: []string{"subscription sub_1 client=cli_1 status=active reason=- events=article.published,spec.updated receiver=hooks.example.test"},
			sub:  "sub_1", status: webhook.StatusActive},
		{desc: "disable it", args: []string{"subscriptions", "disable", "sub_1"},
			want: []string{"subscription sub_1: disabled", "subscription sub_1 client=cli_1 status=disabled reason=operator"},
			sub:  "sub_1", status: webhook.StatusDisabled, reason: webhook.ReasonOperator},
		{desc: "disable it again: unchanged", args: []string{"subscriptions", "disable", "sub_1"},
			want: []string{"subscription sub_1: unchanged, already disabled (operator)", "status=disabled reason=operator"},
			sub:  "sub_1", status: webhook.StatusDisabled, reason: webhook.ReasonOperator},
		{desc: "enable it", args: []string{"subscriptions", "enable", "sub_1"},
			// It promises no replay of what was published while it was
			// disabled: nothing of that was kept for it.
			want: []string{"subscription sub_1: enabled; events published from now on are delivered; those published while it was disabled were not kept for it", "status=active reason=-"},
			sub:  "sub_1", status: webhook.StatusActive},
		{desc: "enable it again: unchanged", args: []string{"subscriptions", "enable", "sub_1"},
			want: []string{"subscription sub_1: unchanged, already active", "status=active"}, sub: "sub_1", status: webhook.StatusActive},
		{desc: "disabling one disabled by a 410 keeps its reason", args: []string{"subscriptions", "disable", "sub_gone"},
			want: []string{"subscription sub_gone: unchanged, already disabled (gone)", "status=disabled reason=gone"},
			sub:  "sub_gone", status: webhook.StatusDisabled, reason: "gone"},
		{desc: "enabling one disabled by a 410 resumes it with a fresh failure clock", args: []string{"subscriptions", "enable", "sub_gone"},
			want: []string{"subscription sub_gone: enabled; events published from now on are delivered; those published while it was disabled were not kept for it", "status=active"},
			sub:  "sub_gone", status: webhook.StatusActive},
		{desc: "an unknown subscription", args: []string{"subscriptions", "disable", "sub_nothing"}, failErr: "no such subscription sub_nothing"},
		{desc: "show an unknown subscription", args: []string{"subscriptions", "show", "sub_nothing"}, failErr: "no such subscription sub_nothing"},
		{desc: "two ids", args: []string{"subscriptions", "disable", "sub_1", "sub_gone"}, wantErr: "exactly one subscription id"},
		{desc: "no id", args: []string{"subscriptions", "enable"}, wantErr: "exactly one subscription id"},
		{desc: "an unknown subcommand", args: []string{"subscriptions", "delete", "sub_1"}, wantErr: `unknown subscriptions subcommand "delete"`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			checkCommand(ctx, t, tc.args, tc.want, tc.wantErr, tc.failErr, "owner-credential", "whsec_")
			if tc.sub == "" {
				return
			}
			sub, err := ws.Get(ctx, "", tc.sub)
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != tc.status || sub.DisabledReason != tc.reason {
				t.Fatalf("status %q, reason %q; want %q, %q", sub.Status, sub.DisabledReason, tc.status, tc.reason)
			}
			if got := sub.Public().Status; got != tc.status {
				t.Fatalf("the owner sees status %q; want %q", got, tc.status)
			}
			if tc.status == webhook.StatusActive && !sub.FailingSince.IsZero() {
				t.Fatal("an enabled subscription kept its failure clock: its next failure would disable it again")
			}
			for _, k := range kinds {
				// An event published after the change: one in its
				// millisecond counts in the event's favour.
				ids, err := ws.Active(ctx, k, time.Now().Add(time.Second))
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(ids, tc.sub) != (tc.status == webhook.StatusActive) {
					t.Fatalf("fan-out of %s names it: %v; want %v", k, slices.Contains(ids, tc.sub), tc.status == webhook.StatusActive)
				}
			}
		})
	}
}
