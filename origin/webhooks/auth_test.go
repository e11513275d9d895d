package webhooks_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/redistest"
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
			// token's errors key the header as the contract spells it.
			ch := strings.Join(ae.Header["WWW-Authenticate"], "")
			if got := strings.Contains(ch, `error="invalid_token"`); !strings.HasPrefix(ch, "Bearer ") || got != tc.invalid {
				t.Errorf("WWW-Authenticate %q; want a Bearer challenge, error=\"invalid_token\" %v", ch, tc.invalid)
			}
		})
	}
}
