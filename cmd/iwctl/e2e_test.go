package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/worker"
)

// receiver is a real webhook receiver that counts what it gets and answers
// with status (204 unless changed).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []string // event ids, in order
	status atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.status.Store(http.StatusNoContent)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.got = append(rc.got, r.Header.Get("webhook-id"))
		rc.mu.Unlock()
		w.WriteHeader(int(rc.status.Load()))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// TestOperatorCommandsEndToEnd runs the operator's commands against a real
// origin, a real worker and a real receiver sharing one Redis, as the
// processes of a deployment do, step by step: a disabled subscription's
// receiver gets nothing (neither its retry pending at the time nor new
// events), its owner sees it disabled, enabling resumes it; a revoked token
// gets 401 from the origin on its next request; a deleted client can
// neither claim nor use a token, and its receiver gets nothing more.
func TestOperatorCommandsEndToEnd(t *testing.T) {
	inst := origintest.Start(t, func(c *origin.Config) {
		c.WebhookPolicy = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	t.Setenv("IW_REDIS_URL", inst.Redis.URL())
	t.Setenv("IW_PUBLIC_URL", inst.SiteRoot)
	ctx := context.Background()
	rdb := inst.Redis.Client()
	ws := webhook.NewStore(rdb)

	// A worker, with a retry schedule short enough for a test and long
	// enough to disable the subscription between a failure and its retry.
	key, err := signing.NewSource(rdb, "").Key(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{
		SiteRoot: inst.SiteRoot, Key: key,
		Policy:   netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Schedule: []time.Duration{2 * time.Second, 2 * time.Second}, Jitter: -1, ThrottleFloor: -1,
		Timeout: time.Second, Lease: 3 * time.Second, ClaimIdle: time.Second, Poll: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, rdb)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan struct{})
	go func() { w.Run(wctx, 5*time.Second); close(workerDone) }()
	t.Cleanup(func() { stopWorker(); <-workerDone })

	// idle: every event fanned out and no delivery pending.
	idle := func() bool {
		return rdb.XLen(ctx, events.Stream).Val() == 0 && rdb.ZCard(ctx, webhook.KeyDue).Val() == 0
	}
	eventually(t, "the worker to fan out the corpus's events", idle)

	call := func(method, path, bearer, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, inst.SiteRoot+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := inst.Server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	decode := func(b []byte, v any) {
		t.Helper()
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
	}
	claim := func(client string) (int, string) {
		status, b := call("POST", "/api/v1/agent-auth/claim", "", `{"client_id":"`+client+`"}`)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if status == 200 {
			decode(b, &tok)
		}
		return status, tok.AccessToken
	}

	// An agent registers, claims a token and subscribes a real receiver.
	_, b := call("POST", "/api/v1/agent-auth/register", "", `{"client_name":"e2e agent"}`)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	decode(b, &reg)
	status, tok := claim(reg.ClientID)
	if status != 200 {
		t.Fatalf("claim: %d", status)
	}
	rc := newReceiver(t)
	status, b = call("POST", "/api/v1/webhooks", tok, fmt.Sprintf(`{"url":%q,"events":["article.published","article.retracted"]}`, rc.URL+"/hook"))
	if status != 201 {
		t.Fatalf("subscribe: %d %s", status, b)
	}
	var sub struct{ ID string }
	decode(b, &sub)

	// Events to deliver: retracting and restoring one article in turn.
	slug := contenttest.Article(0).Slug
	retracted := false
	publish := func(t *testing.T) {
		t.Helper()
		var err error
		if retracted {
			_, err = inst.Publisher.Restore(ctx, slug)
		} else {
			_, err = inst.Publisher.Retract(ctx, slug, "End-to-end test.")
		}
		if err != nil {
			t.Fatal(err)
		}
		retracted = !retracted
	}
	iwctl := func(t *testing.T, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, &out); err != nil {
			t.Fatalf("iwctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	deadOf := func() []webhook.DeadLetterEntry {
		list, err := ws.DeadLettersOf(ctx, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	ownerStatus := func(t *testing.T) string {
		t.Helper()
		status, b := call("GET", "/api/v1/webhooks/subscriptions/"+sub.ID, tok, "")
		if status != 200 {
			t.Fatalf("the owner reads the subscription: %d %s", status, b)
		}
		var s struct{ Status string }
		decode(b, &s)
		return s.Status
	}

	steps := []struct {
		desc string
		run  func(t *testing.T)
	}{
		{"an active subscription's receiver gets the event", func(t *testing.T) {
			before := rc.count()
			publish(t)
			eventually(t, "the delivery", func() bool { return rc.count() == before+1 })
			if s := ownerStatus(t); s != webhook.StatusActive {
				t.Fatalf("the owner sees %q", s)
			}
		}},
		{"a retry pending when the subscription is disabled becomes a dead letter, unattempted", func(t *testing.T) {
			rc.status.Store(http.StatusInternalServerError)
			before := rc.count()
			publish(t)
			eventually(t, "the first, failed attempt", func() bool { return rc.count() == before+1 })
			out := iwctl(t, "subscriptions", "disable", sub.ID)
			if !strings.Contains(out, "disabled") {
				t.Fatalf("disable printed %q", out)
			}
			rc.status.Store(http.StatusNoContent)
			eventually(t, "the pending retry to become a dead letter", func() bool {
				d := deadOf()
				return len(d) == 1 && d[0].Reason == "subscription disabled: operator" && d[0].Attempts == 1
			})
			if got := rc.count(); got != before+1 {
				t.Fatalf("the receiver got %d requests after the disable", got-before-1)
			}
		}},
		{"the owner sees the subscription disabled", func(t *testing.T) {
			if s := ownerStatus(t); s != webhook.StatusDisabled {
				t.Fatalf("the owner sees %q", s)
			}
			status, b := call("GET", "/api/v1/webhooks/subscriptions", tok, "")
			if status != 200 || !strings.Contains(string(b), `"status":"disabled"`) {
				t.Fatalf("the owner's list: %d %s", status, b)
			}
		}},
		{"a disabled subscription's receiver gets no new event", func(t *testing.T) {
			before, deadBefore := rc.count(), len(deadOf())
			publish(t)
			eventually(t, "the worker to fan the event out", idle)
			time.Sleep(200 * time.Millisecond) // ten polls of the worker
			if got := rc.count(); got != before {
				t.Fatalf("the receiver got %d deliveries while disabled", got-before)
			}
			if got := len(deadOf()); got != deadBefore {
				t.Fatalf("%d dead letters made for an event published while disabled", got-deadBefore)
			}
		}},
		{"enabling resumes deliveries, and the dead letter can be replayed", func(t *testing.T) {
			out := iwctl(t, "subscriptions", "enable", sub.ID)
			if !strings.Contains(out, "enabled") {
				t.Fatalf("enable printed %q", out)
			}
			if s := ownerStatus(t); s != webhook.StatusActive {
				t.Fatalf("the owner sees %q", s)
			}
			before := rc.count()
			publish(t)
			eventually(t, "the delivery after enabling", func() bool { return rc.count() == before+1 })
			iwctl(t, "deadletters", "replay", "--subscription", sub.ID)
			eventually(t, "the replayed delivery", func() bool { return rc.count() == before+2 })
		}},
		{"a revoked token gets 401 from the origin on its next request", func(t *testing.T) {
			if status, _ := call("GET", "/api/v1/webhooks/subscriptions", tok, ""); status != 200 {
				t.Fatalf("before the revocation: %d", status)
			}
			out := iwctl(t, "tokens", "revoke", "--client", reg.ClientID)
			if !strings.Contains(out, "revoked 1 tokens") || strings.Contains(out, tok) {
				t.Fatalf("tokens revoke printed %q", out)
			}
			status, b := call("GET", "/api/v1/webhooks/subscriptions", tok, "")
			if status != 401 || !strings.Contains(string(b), `"unauthorized"`) {
				t.Fatalf("a read with the revoked token: %d %s", status, b)
			}
			status, _ = call("POST", "/api/v1/webhooks", tok, fmt.Sprintf(`{"url":%q,"events":["spec.updated"]}`, rc.URL+"/other"))
			if status != 401 {
				t.Fatalf("a subscription with the revoked token: %d", status)
			}
		}},
		{"a deleted client can neither use nor claim a token, and its receiver gets nothing more", func(t *testing.T) {
			var fresh string
			if status, fresh = claim(reg.ClientID); status != 200 {
				t.Fatalf("a registered client claims again after the revocation: %d", status)
			}
			out := iwctl(t, "clients", "delete", reg.ClientID)
			if !strings.Contains(out, "1 tokens revoked, 1 subscriptions deleted") {
				t.Fatalf("clients delete printed %q", out)
			}
			if status, _ := call("GET", "/api/v1/webhooks/subscriptions", fresh, ""); status != 401 {
				t.Fatalf("the deleted client's token: %d", status)
			}
			if status, _ := claim(reg.ClientID); status != 400 {
				t.Fatalf("the deleted client claims: %d", status)
			}
			before := rc.count()
			publish(t)
			eventually(t, "the worker to fan the event out", idle)
			time.Sleep(200 * time.Millisecond)
			if got := rc.count(); got != before {
				t.Fatalf("the deleted client's receiver got %d deliveries", got-before)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.desc, s.run) {
			t.FailNow() // each step starts from the state the previous one left
		}
	}
}

// eventually polls cond until it holds, failing after 15 s: a safety net
// for a broken build, not a speed assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
