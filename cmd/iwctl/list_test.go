package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/clients"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestListCommands lists clients and subscriptions through iwctl against a
// real Redis (a Redis Cluster in make test's cluster pass, where clients
// spread over every master). There are more of each than one SCAN call
// looks at, so the listings must follow the cursor to the end; each is
// checked against what was stored, every id exactly once, with the keys
// beside them (a client's token set, a subscription's kind sets) left out
// and no receiver's credentials or secret shown.
func TestListCommands(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	rdb := rs.Client()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)

	// 1,200 clients, each with a token set beside its record; the first
	// 60 hold webhook.MaxPerClient subscriptions each (1,500 in all).
	// Every third subscription is disabled, every fifth goes to another
	// receiver host and port, and every seventh of the rest names its
	// host's default port (:443).
	const nClients, nSubscribers = 1200, 60
	pipe := rdb.Pipeline()
	for i := range nClients {
		id := fmt.Sprintf("cli_%04d", i)
		rec, _ := json.Marshal(clients.Record{ClientID: id, ClientName: "agent " + id, IdentityType: "anonymous", IssuedAt: now.Unix()})
		pipe.Set(ctx, clients.Key(id), rec, time.Hour)
		pipe.SAdd(ctx, clients.TokensKey(id), "0000")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ws := webhook.NewStore(rdb)
	type want struct{ client, status, host string }
	subs := map[string]want{}
	for c := range nSubscribers {
		for j := range webhook.MaxPerClient {
			n := c*webhook.MaxPerClient + j
			host := "hooks.example.test"
			switch {
			case n%5 == 0:
				host = "other.example.test:8443"
			case n%7 == 0:
				host = "hooks.example.test:443"
			}
			s := &webhook.Subscription{ID: fmt.Sprintf("sub_%05d", n), ClientID: fmt.Sprintf("cli_%04d", c),
				URL: "https://" + host + "/in?key=owner-credential", Events: []string{events.ArticlePublished},
				Secret: "whsec_never-shown-anywhere", CreatedAt: now.Add(time.Duration(j) * time.Second), Status: webhook.StatusActive}
			if err := ws.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			if n%3 == 0 {
				if _, _, err := ws.Disable(ctx, s.ID, webhook.ReasonOperator, now); err != nil {
					t.Fatal(err)
				}
				s.Status = webhook.StatusDisabled
			}
			subs[s.ID] = want{client: s.ClientID, status: s.Status, host: host}
		}
	}
	expectSubs := func(keep func(w want) bool) map[string]bool {
		ids := map[string]bool{}
		for id, w := range subs {
			if keep(w) {
				ids[id] = true
			}
		}
		return ids
	}

	cases := []struct {
		desc    string
		args    []string
		ids     map[string]bool // the ids listed, each once
		order   []string        // when set, the ids in this order
		wantErr string
	}{
		{desc: "every client", args: []string{"clients", "list"},
			ids: func() map[string]bool {
				ids := map[string]bool{}
				for i := range nClients {
					ids[fmt.Sprintf("cli_%04d", i)] = true
				}
				return ids
			}()},
		{desc: "every subscription", args: []string{"subscriptions", "list"}, ids: expectSubs(func(want) bool { return true })},
		{desc: "the disabled ones", args: []string{"subscriptions", "list", "--status", "disabled"},
			ids: expectSubs(func(w want) bool { return w.status == webhook.StatusDisabled })},
		{desc: "the active ones on one host", args: []string{"subscriptions", "list", "--host", "OTHER.example.test:8443", "--status", "active"},
			ids: expectSubs(func(w want) bool { return w.status == webhook.StatusActive && w.host == "other.example.test:8443" })},
		{desc: "a host without its port matches it on every port", args: []string{"subscriptions", "list", "--host", "other.example.test"},
			ids: expectSubs(func(w want) bool { return w.host == "other.example.test:8443" })},
		{desc: "a host without its port matches it with its default port spelt out", args: []string{"subscriptions", "list", "--host", "Hooks.Example.Test"},
			ids: expectSubs(func(w want) bool { return strings.HasPrefix(w.host, "hooks.example.test") })},
		{desc: "host:port with the scheme's default port matches the URLs without a port too", args: []string{"subscriptions", "list", "--host", "hooks.example.test:443"},
			ids: expectSubs(func(w want) bool { return strings.HasPrefix(w.host, "hooks.example.test") })},
		{desc: "host:port with another port matches nothing", args: []string{"subscriptions", "list", "--host", "other.example.test:443"}, ids: map[string]bool{}},
		{desc: "one client's, newest first", args: []string{"subscriptions", "list", "--client", "cli_0007"},
			ids: expectSubs(func(w want) bool { return w.client == "cli_0007" }),
			order: func() []string {
				var ids []string
				for j := webhook.MaxPerClient - 1; j >= 0; j-- {
					ids = append(ids, fmt.Sprintf("sub_%05d", 7*webhook.MaxPerClient+j))
				}
				return ids
			}()},
		{desc: "a client with none", args: []string{"subscriptions", "list", "--client", "cli_0999"}, ids: map[string]bool{}},
		{desc: "clients list takes no argument", args: []string{"clients", "list", "cli_0001"}, wantErr: "takes no arguments"},
		{desc: "an unknown status", args: []string{"subscriptions", "list", "--status", "gone"}, wantErr: "--status is active or disabled"},
		{desc: "a client id that cannot be one", args: []string{"subscriptions", "list", "--client", "https://x"}, wantErr: "is not a client id"},
		{desc: "a positional argument", args: []string{"subscriptions", "list", "sub_00001"}, wantErr: "takes only --client, --status and --host"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			out := checkCommand(ctx, t, tc.args, nil, tc.wantErr, "", "owner-credential", "whsec_", "/in?")
			if tc.wantErr != "" {
				return
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			noun := tc.args[0]
			if last := lines[len(lines)-1]; last != fmt.Sprintf("%d %s", len(tc.ids), noun) {
				t.Fatalf("last line %q; want %d %s", last, len(tc.ids), noun)
			}
			var got []string
			for _, l := range lines[:len(lines)-1] {
				f := strings.Fields(l)
				if len(f) < 2 || f[0] != strings.TrimSuffix(noun, "s") {
					t.Fatalf("line %q is not a %s", l, strings.TrimSuffix(noun, "s"))
				}
				got = append(got, f[1])
				if noun == "subscriptions" {
					w := subs[f[1]]
					for _, field := range []string{"client=" + w.client, "status=" + w.status, "receiver=" + w.host} {
						if !strings.Contains(l, " "+field+" ") {
							t.Fatalf("line %q lacks %s", l, field)
						}
					}
				}
			}
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] || !tc.ids[id] {
					t.Fatalf("%s listed twice or not expected (%d listed, %d expected)", id, len(got), len(tc.ids))
				}
				seen[id] = true
			}
			if len(seen) != len(tc.ids) {
				t.Fatalf("%d listed; want %d", len(seen), len(tc.ids))
			}
			if tc.order != nil && strings.Join(got, " ") != strings.Join(tc.order, " ") {
				t.Fatalf("order %v; want %v", got, tc.order)
			}
		})
	}
}
