package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin/respond"
	"github.com/invoicewire/invoicewire/origin/webhooks"
)

// TestAuthenticatedChallenge checks the origin's own bearer check (the
// edge's is bearerauth's): a Bearer credential that is no token at all, or
// Authorization sent twice, is a malformed token, 401 with
// error="invalid_token" (RFC 6750 §3.1) as a well-formed unknown token is;
// no Authorization, or another scheme (Basic, DPoP), presented no bearer
// token, and its challenge carries no error code. The contract answers a
// missing or invalid token with 401.
func TestAuthenticatedChallenge(t *testing.T) {
	rs := redistest.New(t)
	svc := webhooks.New(webhooks.Config{SiteRoot: "https://iw.test"}, webhook.NewStore(rs.Client()))
	h := svc.Authenticated("webhooks:write", func(r *http.Request) (*respond.Response, error) {
		t.Error("the handler ran")
		return nil, nil
	})
	testCases := []struct {
		desc    string
		header  []string
		invalid bool // the challenge carries error="invalid_token"
	}{
		{desc: "no Authorization"},
		{desc: "Basic credentials", header: []string{"Basic dXNlcjpwYXNz"}},
		{desc: "a DPoP token", header: []string{"DPoP some-token"}},
		{desc: "the scheme alone", header: []string{"Bearer"}, invalid: true},
		{desc: "the scheme and a space", header: []string{"Bearer "}, invalid: true},
		{desc: "two words", header: []string{"Bearer a b"}, invalid: true},
		{desc: "an unknown token", header: []string{"Bearer unknown-token"}, invalid: true},
		{desc: "two Authorization fields", header: []string{"Bearer unknown-token", "Bearer other-token"}, invalid: true},
		{desc: "a Basic and a Bearer field", header: []string{"Basic dXNlcjpwYXNz", "Bearer other-token"}, invalid: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/webhooks", nil)
			if tc.header != nil {
				r.Header["Authorization"] = tc.header
			}
			_, err := h(r)
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != "unauthorized" {
				t.Fatalf("err %v, want 401 unauthorized", err)
			}
			// Under the canonical key, once: Get, Set and Del find it.
			if n := len(ae.Header.Values("WWW-Authenticate")); n != 1 {
				t.Fatalf("%d WWW-Authenticate values in %q; want 1", n, ae.Header)
			}
			ch := ae.Header.Get("WWW-Authenticate")
			if got := strings.Contains(ch, `error="invalid_token"`); !strings.HasPrefix(ch, "Bearer ") || got != tc.invalid {
				t.Errorf("WWW-Authenticate %q; want a Bearer challenge, error=\"invalid_token\" %v", ch, tc.invalid)
			}
		})
	}
}

// TestAuthenticatedInsufficientScope checks the 403 of a valid token that
// lacks the scope asked for: its challenge names the scope (RFC 6750 §3.1),
// once, under the canonical key, where Get, Set and Del find it.
func TestAuthenticatedInsufficientScope(t *testing.T) {
	rs := redistest.New(t)
	rdb := rs.Client()
	svc := webhooks.New(webhooks.Config{SiteRoot: "https://iw.test"}, webhook.NewStore(rdb))
	h := svc.Authenticated("webhooks:write", func(r *http.Request) (*respond.Response, error) {
		t.Error("the handler ran")
		return nil, nil
	})
	rec, err := json.Marshal(token.Record{ClientID: "cli_1", Scope: "webhooks:read", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(context.Background(), token.Key("read-only-token"), rec, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/api/v1/webhooks", nil)
	r.Header.Set("Authorization", "Bearer read-only-token")
	_, err = h(r)
	var ae *apierror.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("err %v; want 403", err)
	}
	want := token.Challenge("https://iw.test", false) + `, error="insufficient_scope", scope="webhooks:write"`
	if got := ae.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != want {
		t.Fatalf("WWW-Authenticate %q in %q; want once %q", got, ae.Header, want)
	}
}
