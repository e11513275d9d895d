package bearerauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

const siteRoot = "https://invoicewire.example"

const (
	challenge        = `Bearer realm="invoicewire", resource_metadata="https://invoicewire.example/.well-known/oauth-protected-resource"`
	challengeInvalid = challenge + `, error="invalid_token"`
)

// origin is a fake origin recording what reached it.
type origin struct {
	mu   sync.Mutex
	seen []http.Header
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.seen = append(o.seen, r.Header.Clone())
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.Contains(r.URL.Path, "agent-auth") && r.URL.Path != "/api/v1/webhooks" {
		w.WriteHeader(http.StatusMethodNotAllowed)
		w.Write([]byte(`{"error":{"code":"method_not_allowed","message":"no"}}`))
		return
	}
	w.Write([]byte(`{"ok":true}`))
}

func (o *origin) last() http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		return nil
	}
	return o.seen[len(o.seen)-1]
}

func (o *origin) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

func writeToken(t *testing.T, srv redistest.Backend, raw, client string) {
	t.Helper()
	b, _ := json.Marshal(token.Record{ClientID: client, Scope: "webhooks:read webhooks:write", ExpiresAt: time.Now().Add(time.Hour).UTC()})
	if err := srv.Client().Set(context.Background(), token.Key(raw), b, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestBearerAuth(t *testing.T) {
	srv := redistest.New(t)
	writeToken(t, srv, "good-token", "cli_owner")
	o := &origin{}
	up := httptest.NewServer(o)
	defer up.Close()
	edge := edgetest.Start(t, fmt.Sprintf(`
	bearer_auth {
		redis %s
		site_root %s
	}
	reverse_proxy %s
	handle_errors {
		json_errors
	}`, srv.URL(), siteRoot, strings.TrimPrefix(up.URL, "http://")))

	long := "Authorization: Bearer " + strings.Repeat("a", 5000)
	testCases := []struct {
		desc      string
		method    string
		path      string
		header    []string
		status    int
		challenge string // expected WWW-Authenticate on 401
		client    string // expected X-Invoicewire-Client at the origin
	}{
		{desc: "subscribe without token", method: "POST", path: "/api/v1/webhooks", status: 401, challenge: challenge},
		{desc: "subscribe with unknown token", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer wrong"}, status: 401, challenge: challengeInvalid},
		{desc: "subscribe with empty bearer is malformed", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer "}, status: 401, challenge: challengeInvalid},
		{desc: "subscribe with a bare Bearer is malformed", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer"}, status: 401, challenge: challengeInvalid},
		{desc: "subscribe with two tokens is malformed", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer a b"}, status: 401, challenge: challengeInvalid},
		{desc: "subscribe with garbage token is malformed", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer a b\"c"}, status: 401, challenge: challengeInvalid},
		{desc: "a valid token beside a second Authorization is malformed", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer good-token", "Authorization: Bearer wrong"}, status: 401, challenge: challengeInvalid},
		{desc: "a valid token after a second Authorization is malformed", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Basic dXNlcjpwYXNz", "Authorization: Bearer good-token"}, status: 401, challenge: challengeInvalid},
		{desc: "subscribe with oversized token", method: "POST", path: "/api/v1/webhooks", header: []string{long}, status: 401, challenge: challengeInvalid},
		{desc: "basic credentials count as none", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Basic dXNlcjpwYXNz"}, status: 401, challenge: challenge},
		{desc: "subscribe with valid token", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer good-token"}, status: 200, client: "cli_owner"},
		{desc: "scheme is case-insensitive", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: bearer good-token"}, status: 200, client: "cli_owner"},
		{desc: "owner list needs a token", method: "GET", path: "/api/v1/webhooks/subscriptions", status: 401, challenge: challenge},
		{desc: "owner read needs a token", method: "GET", path: "/api/v1/webhooks/subscriptions/sub_1", status: 401, challenge: challenge},
		{desc: "owner read with a trailing slash needs a token", method: "GET", path: "/api/v1/webhooks/subscriptions/sub_1/", status: 401, challenge: challenge},
		{desc: "a read below an owner route, which no route has, reaches the origin for its 404", method: "GET", path: "/api/v1/webhooks/subscriptions/sub_1/x", status: 200},
		{desc: "a write below an owner route is still an API write", method: "DELETE", path: "/api/v1/webhooks/subscriptions/sub_1/x", status: 401, challenge: challenge},
		{desc: "owner delete with token", method: "DELETE", path: "/api/v1/webhooks/subscriptions/sub_1", header: []string{"Authorization: Bearer good-token"}, status: 405, client: "cli_owner"},
		{desc: "other write without token", method: "PUT", path: "/api/v1/articles/x", status: 401, challenge: challenge},
		{desc: "other write with token reaches origin 405", method: "PATCH", path: "/api/v1/articles/x", header: []string{"Authorization: Bearer good-token"}, status: 405, client: "cli_owner"},
		{desc: "write on the API root", method: "POST", path: "/api/v1", status: 401, challenge: challenge},
		{desc: "traversal out of a public path", method: "POST", path: "/api/v1/agent-auth/register/../../webhooks", status: 401, challenge: challenge},
		{desc: "register is public", method: "POST", path: "/api/v1/agent-auth/register", status: 200},
		{desc: "claim is public", method: "POST", path: "/api/v1/agent-auth/claim", status: 200},
		{desc: "revoke is public even with a bad token", method: "POST", path: "/api/v1/agent-auth/revoke", header: []string{"Authorization: Bearer wrong"}, status: 200},
		{desc: "RFC 7592 client read passes its token", method: "GET", path: "/api/v1/agent-auth/register/cli_x", header: []string{"Authorization: Bearer reg-token"}, status: 200},
		{desc: "RFC 7592 client delete passes its token", method: "DELETE", path: "/api/v1/agent-auth/register/cli_x", header: []string{"Authorization: Bearer reg-token"}, status: 200},
		{desc: "reads ignore a bad token", method: "GET", path: "/api/v1/articles", header: []string{"Authorization: Bearer wrong"}, status: 200},
		{desc: "webhook catalog read is public", method: "GET", path: "/api/v1/webhooks", status: 200},
		{desc: "site writes are not the API's", method: "POST", path: "/ask", status: 405},
		{desc: "spoofed client header is dropped", method: "GET", path: "/api/v1/articles", header: []string{"X-Invoicewire-Client: cli_owner"}, status: 200},
		{desc: "a CORS preflight of an owner item needs no token", method: "OPTIONS", path: "/api/v1/webhooks/subscriptions/sub_1", header: []string{"Origin: https://app.example", "Access-Control-Request-Method: DELETE", "Access-Control-Request-Headers: authorization"}, status: 405},
		{desc: "a CORS preflight of the owner list needs no token", method: "OPTIONS", path: "/api/v1/webhooks/subscriptions", header: []string{"Origin: https://app.example", "Access-Control-Request-Method: GET", "Access-Control-Request-Headers: authorization"}, status: 405},
		{desc: "a CORS preflight asserts no client", method: "OPTIONS", path: "/api/v1/webhooks/subscriptions", header: []string{"Origin: https://app.example", "Access-Control-Request-Method: GET", "X-Invoicewire-Client: cli_owner"}, status: 405},
		{desc: "an OPTIONS without Access-Control-Request-Method is no preflight", method: "OPTIONS", path: "/api/v1/webhooks/subscriptions", header: []string{"Origin: https://app.example"}, status: 401, challenge: challenge},
		{desc: "an OPTIONS without Origin is no preflight", method: "OPTIONS", path: "/api/v1/webhooks/subscriptions/sub_1", header: []string{"Access-Control-Request-Method: DELETE"}, status: 401, challenge: challenge},
		{desc: "spoofed client header replaced", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer good-token", "X-Invoicewire-Client: cli_evil"}, status: 200, client: "cli_owner"},
		// The proxy deletes the fields Connection names (RFC 9110 §7.6.1):
		// a client naming the client field must not take it off.
		{desc: "the client field named in Connection still reaches the origin", method: "POST", path: "/api/v1/webhooks", header: []string{"Authorization: Bearer good-token", "Connection: x-invoicewire-client"}, status: 200, client: "cli_owner"},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			before := o.count()
			resp, body := edge.Do(t, test.method, test.path, "", test.header...)
			if resp.StatusCode != test.status {
				t.Fatalf("status %d; want %d (%s)", resp.StatusCode, test.status, body)
			}
			if test.status == 401 || test.status == 400 {
				if got := resp.Header.Get("WWW-Authenticate"); got != test.challenge {
					t.Errorf("WWW-Authenticate\n got %s\nwant %s", got, test.challenge)
				}
				if n, want := len(resp.Header.Values("WWW-Authenticate")), min(len(test.challenge), 1); n != want {
					t.Errorf("%d WWW-Authenticate fields; want %d", n, want)
				}
				var eb struct {
					Error struct{ Code, Message string } `json:"error"`
				}
				code := map[int]string{400: "bad_request", 401: "unauthorized"}[test.status]
				if json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Code != code {
					t.Errorf("%d body %q; want %s JSON", test.status, body, code)
				}
				// Reads are anonymous: the message names this request, not
				// every request of its method under the API.
				if test.challenge == challenge && eb.Error.Message != "A bearer token is required for "+test.method+" requests to this resource." {
					t.Errorf("401 message %q; want one about this resource", eb.Error.Message)
				}
				if strings.Contains(body, "good-token") || strings.Contains(body, "wrong") {
					t.Errorf("body echoes the token: %s", body)
				}
				if o.count() != before {
					t.Errorf("a refused request reached the origin")
				}
				return
			}
			got := o.last().Get("X-Invoicewire-Client")
			if got != test.client {
				t.Errorf("origin saw X-Invoicewire-Client %q; want %q", got, test.client)
			}
			if strings.Contains(test.path, "/register/") && o.last().Get("Authorization") != "Bearer reg-token" {
				t.Errorf("registration access token not passed to the origin")
			}
		})
	}
}

func TestRevokedTokenRefusedAtOnce(t *testing.T) {
	srv := redistest.New(t)
	writeToken(t, srv, "soon-revoked", "cli_r")
	up := httptest.NewServer(&origin{})
	defer up.Close()
	edge := edgetest.Start(t, fmt.Sprintf(`
	bearer_auth {
		redis %s
		site_root %s
	}
	reverse_proxy %s
	handle_errors {
		json_errors
	}`, srv.URL(), siteRoot, strings.TrimPrefix(up.URL, "http://")))
	auth := "Authorization: Bearer soon-revoked"
	if resp, _ := edge.Do(t, "POST", "/api/v1/webhooks", "", auth); resp.StatusCode != 200 {
		t.Fatalf("valid token: %d", resp.StatusCode)
	}
	ctx := context.Background()
	srv.Client().Del(ctx, token.Key("soon-revoked"))
	srv.Client().Publish(ctx, token.ChannelRevocations, token.Hash("soon-revoked"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, _ := edge.Do(t, "POST", "/api/v1/webhooks", "", auth)
		if resp.StatusCode == 401 {
			if resp.Header.Get("WWW-Authenticate") != challengeInvalid {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("revoked token still accepted (the cache keeps valid answers 30 s; the revocation must clear them)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRedisDownIsUnavailable(t *testing.T) {
	srv := redistest.New(t)
	up := httptest.NewServer(&origin{})
	defer up.Close()
	edge := edgetest.Start(t, fmt.Sprintf(`
	bearer_auth {
		redis %s
		site_root %s
	}
	reverse_proxy %s
	handle_errors {
		json_errors
	}`, srv.URL(), siteRoot, strings.TrimPrefix(up.URL, "http://")))
	srv.Stop()
	resp, body := edge.Do(t, "POST", "/api/v1/webhooks", "", "Authorization: Bearer some-token")
	if resp.StatusCode != 503 || !strings.Contains(body, `"unavailable"`) || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q, body %s; want 503 unavailable", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Reads never depend on Redis.
	if resp, _ := edge.Do(t, "GET", "/api/v1/articles", "", "Authorization: Bearer some-token"); resp.StatusCode != 200 {
		t.Errorf("read with Redis down: %d", resp.StatusCode)
	}
}

func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  x==", "Basic Zm9v", "Bearer", "Bearer a=b", "Bearer ~+/._-", "", "Bearer \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Authorization": {v}}
		raw, kind := bearer(h)
		if kind == credentialsNone && raw != "" {
			t.Fatalf("no credentials but a token %q", raw)
		}
		if raw != "" && (kind != credentialsBearer || !token.B64Token(raw) || len(raw) > token.MaxLength || strings.ContainsAny(raw, " \t\"\r\n")) {
			t.Fatalf("bearer(%q) accepted %q", v, raw)
		}
	})
}
