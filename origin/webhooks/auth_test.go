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

// TestAuthenticatedMalformedBearer checks the origin's own bearer check
// (the edge's is bearerauth's): a Bearer credential that is no token at
// all, or Authorization sent twice, is a malformed token, 401 with
// error="invalid_token" (RFC 6750 §3.1) as a well-formed unknown token is:
// the contract answers a missing or invalid token with 401.
func TestAuthenticatedMalformedBearer(t *testing.T) {
	rs := redistest.New(t)
	svc := webhooks.New(webhooks.Config{SiteRoot: "https://iw.test"}, webhook.NewStore(rs.Client()))
	h := svc.Authenticated("webhooks:write", func(r *http.Request) (*respond.Response, error) {
		t.Error("the handler ran")
		return nil, nil
	})
	testCases := []struct {
		header []string
		status int
		code   string
		error  string // the challenge's error parameter
	}{
		{header: []string{"Bearer"}, status: 401, code: "unauthorized", error: `error="invalid_token"`},
		{header: []string{"Bearer "}, status: 401, code: "unauthorized", error: `error="invalid_token"`},
		{header: []string{"Bearer a b"}, status: 401, code: "unauthorized", error: `error="invalid_token"`},
		{header: []string{"Bearer unknown-token"}, status: 401, code: "unauthorized", error: `error="invalid_token"`},
		{header: []string{"Bearer unknown-token", "Bearer other-token"}, status: 401, code: "unauthorized", error: `error="invalid_token"`},
	}
	for _, tc := range testCases {
		t.Run(strings.Join(tc.header, " + "), func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/webhooks", nil)
			r.Header["Authorization"] = tc.header
			_, err := h(r)
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status != tc.status || ae.Code != tc.code {
				t.Fatalf("err %v, want %d %s", err, tc.status, tc.code)
			}
			// token's errors key the header as the contract spells it.
			if ch := strings.Join(ae.Header["WWW-Authenticate"], ""); !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, tc.error) {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge with %s", ch, tc.error)
			}
		})
	}
}
