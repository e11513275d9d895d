package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/clients"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestTokensAndClients revokes tokens and deletes clients through iwctl
// against a real Redis, in order, checking what each command prints, what
// is left in Redis, and what was announced on the revocations channel that
// every edge's token cache follows. No token itself ever appears in the
// output.
func TestTokensAndClients(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	rdb := rs.Client()
	ctx := context.Background()
	now := time.Now()

	// What the revocations channel carries.
	ps := rs.Client().Subscribe(ctx, token.ChannelRevocations)
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var announced []string
	go func() {
		for m := range ps.Channel() {
			mu.Lock()
			announced = append(announced, m.Payload)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { ps.Close() })
	wasAnnounced := func(hash string) bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			for _, a := range announced {
				if a == hash {
					mu.Unlock()
					return true
				}
			}
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}

	// Two clients registered and claimed as the origin does it.
	raw := map[string][]string{}
	for _, c := range []struct {
		id     string
		tokens int
	}{{"cli_a", 2}, {"cli_b", 1}} {
		rec, _ := json.Marshal(clients.Record{ClientID: c.id, ClientName: "client " + c.id, IdentityType: "anonymous", IssuedAt: now.Unix()})
		if err := rdb.Set(ctx, clients.Key(c.id), rec, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		for range c.tokens {
			tok, _, err := token.Issue(ctx, rdb, c.id, token.Lifetime, now)
			if err != nil {
				t.Fatal(err)
			}
			if err := clients.RecordToken(ctx, rdb, c.id, token.Hash(tok), token.Lifetime, time.Hour); err != nil {
				t.Fatal(err)
			}
			raw[c.id] = append(raw[c.id], tok)
		}
	}
	ws := webhook.NewStore(rdb)
	sub := &webhook.Subscription{ID: "sub_b", ClientID: "cli_b", URL: "https://hooks.example.test/in?key=owner-credential",
		Events: []string{events.ArticlePublished}, Secret: "whsec_never-shown-anywhere", CreatedAt: now, Status: webhook.StatusActive}
	if err := ws.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}
	live := func(tok string) bool {
		_, err := token.Lookup(ctx, rdb, tok, time.Now())
		return err == nil
	}
	a0, a1, b0 := raw["cli_a"][0], raw["cli_a"][1], raw["cli_b"][0]
	h := token.Hash

	cases := []struct {
		desc    string
		args    []string
		want    []string // output lines contain these, in order
		wantErr string   // a usage error (exit 2)
		failErr string   // a failure (exit 1)
		live    []string // tokens valid afterwards
		dead    []string // tokens invalid afterwards
		notice  []string // hashes announced on the revocations channel
		setup   func(t *testing.T)
		check   func(t *testing.T)
	}{
		{desc: "clients show lists the tokens by hash and the subscription by host",
			args: []string{"clients", "show", "cli_b"},
			want: []string{`client cli_b name="client cli_b"`, "token " + h(b0) + " expires=",
				"subscription sub_b client=cli_b status=active reason=- events=article.published receiver=hooks.example.test created="},
			live: []string{a0, a1, b0}},
		{desc: "one token revoked by its hash", args: []string{"tokens", "revoke", h(a0)},
			want: []string{h(a0) + ": revoked", "revoked 1 of 1"}, live: []string{a1, b0}, dead: []string{a0}, notice: []string{h(a0)},
			check: func(t *testing.T) {
				if rdb.SIsMember(ctx, clients.TokensKey("cli_a"), h(a0)).Val() {
					t.Fatal("the revoked token is still in its client's set")
				}
			}},
		{desc: "the same again finds nothing, and fails", args: []string{"tokens", "revoke", strings.ToUpper(h(a0))},
			want: []string{h(a0) + ": skipped: no such token", "revoked 0 of 1"}, failErr: "not every token", live: []string{a1, b0},
			notice: []string{h(a0)}},
		{desc: "a token itself instead of its hash is refused without repeating it", args: []string{"tokens", "revoke", a1},
			wantErr: "argument 1 is not a token hash", live: []string{a1, b0}},
		{desc: "hashes and --client together", args: []string{"tokens", "revoke", h(a1), "--client", "cli_a"},
			wantErr: "not both", live: []string{a1, b0}},
		{desc: "neither hashes nor --client", args: []string{"tokens", "revoke"}, wantErr: "--client CLIENT", live: []string{a1, b0}},
		{desc: "a subcommand other than revoke", args: []string{"tokens", "list"}, wantErr: "subcommand revoke", live: []string{a1, b0}},
		{desc: "every token of a client; it stays registered", args: []string{"tokens", "revoke", "--client", "cli_a"},
			want: []string{"client cli_a: revoked 1 tokens", "still registered"}, live: []string{b0}, dead: []string{a1}, notice: []string{h(a1)},
			check: func(t *testing.T) {
				if rdb.Exists(ctx, clients.Key("cli_a")).Val() != 1 {
					t.Fatal("revoking a client's tokens deleted the client")
				}
			}},
		{desc: "a client's tokens again: nothing left, not a failure", args: []string{"tokens", "revoke", "--client", "cli_a"},
			want: []string{"client cli_a: revoked 0 tokens", "still registered"}, live: []string{b0}},
		{desc: "the tokens of an unknown client", args: []string{"tokens", "revoke", "--client", "cli_nobody"},
			failErr: "no such client cli_nobody", live: []string{b0}},
		{desc: "delete a client with a token and a subscription", args: []string{"clients", "delete", "cli_b"},
			want: []string{"client cli_b: deleted (registration deleted, 1 tokens revoked, 1 subscriptions deleted)"},
			dead: []string{b0}, notice: []string{h(b0)},
			check: func(t *testing.T) {
				if n := rdb.Exists(ctx, clients.Key("cli_b"), clients.TokensKey("cli_b"), clients.DeletingKey("cli_b")).Val(); n != 0 {
					t.Fatalf("%d keys of the deleted client left", n)
				}
				if _, err := ws.Get(ctx, "", "sub_b"); !errors.Is(err, webhook.ErrNotFound) {
					t.Fatalf("the deleted client's subscription: %v", err)
				}
				if ids, _ := ws.Active(ctx, events.ArticlePublished, time.Now()); len(ids) != 0 {
					t.Fatalf("the deleted client's subscription still gets events: %v", ids)
				}
				// A claim that loaded the client before the deletion gets
				// its token revoked instead of recorded.
				tok, _, err := token.Issue(ctx, rdb, "cli_b", token.Lifetime, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if err := clients.RecordToken(ctx, rdb, "cli_b", token.Hash(tok), token.Lifetime, time.Hour); !errors.Is(err, clients.ErrGone) || live(tok) {
					t.Fatalf("a token issued to the deleted client: RecordToken = %v, live %v", err, live(tok))
				}
			}},
		{desc: "delete it again: nothing left, and fails", args: []string{"clients", "delete", "cli_b"}, failErr: "no such client cli_b"},
		{desc: "show a deleted client", args: []string{"clients", "show", "cli_b"}, failErr: "no such client cli_b"},
		{desc: "delete finishes a run cut short after its first step",
			setup: func(t *testing.T) {
				tok, _, err := token.Issue(ctx, rdb, "cli_a", token.Lifetime, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if err := clients.RecordToken(ctx, rdb, "cli_a", token.Hash(tok), token.Lifetime, time.Hour); err != nil {
					t.Fatal(err)
				}
				raw["cut"] = []string{tok}
				rdb.Set(ctx, clients.DeletingKey("cli_a"), "1", 0) // the first step of an earlier run
				// From then on, a claim gets no token.
				late, _, err := token.Issue(ctx, rdb, "cli_a", token.Lifetime, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if err := clients.RecordToken(ctx, rdb, "cli_a", token.Hash(late), token.Lifetime, time.Hour); !errors.Is(err, clients.ErrGone) || live(late) {
					t.Fatalf("a token issued to a client being deleted: RecordToken = %v, live %v", err, live(late))
				}
			},
			args: []string{"clients", "delete", "cli_a"},
			want: []string{"client cli_a: deleted (registration deleted, 1 tokens revoked, 0 subscriptions deleted)"},
			check: func(t *testing.T) {
				if live(raw["cut"][0]) || !wasAnnounced(token.Hash(raw["cut"][0])) {
					t.Fatal("the token left by the run cut short is still valid, or its revocation was not announced")
				}
				if n := rdb.Exists(ctx, clients.Key("cli_a"), clients.TokensKey("cli_a"), clients.DeletingKey("cli_a")).Val(); n != 0 {
					t.Fatalf("%d keys of the deleted client left", n)
				}
			}},
		{desc: "delete takes one client id", args: []string{"clients", "delete", "cli_a", "cli_b"}, wantErr: "exactly one client id"},
		{desc: "not a client id", args: []string{"clients", "show", "https://iw.test/api/v1/agent-auth/register/cli_a"}, wantErr: "exactly one client id"},
		{desc: "clients without a subcommand", args: []string{"clients"}, wantErr: "show or delete"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			mu.Lock()
			announced = nil
			mu.Unlock()
			if tc.setup != nil {
				tc.setup(t)
			}
			checkCommand(ctx, t, tc.args, tc.want, tc.wantErr, tc.failErr, append([]string{"owner-credential", "whsec_", "iwt_"}, a0, a1, b0)...)
			for _, tok := range tc.live {
				if !live(tok) {
					t.Fatalf("token %s… was revoked", token.Hash(tok)[:8])
				}
			}
			for _, tok := range tc.dead {
				if live(tok) {
					t.Fatalf("token %s… is still valid", token.Hash(tok)[:8])
				}
			}
			for _, n := range tc.notice {
				if !wasAnnounced(n) {
					t.Fatalf("the revocation of %s… was not announced", n[:8])
				}
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}
