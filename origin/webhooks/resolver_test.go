package webhooks_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/netguard/netguardtest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin/webhooks"
)

// TestCreateResolverFailure subscribes with receiver hosts resolved by a
// DNS server the test controls: a host that does not exist is the client's
// mistake (400); a resolver that fails or does not answer is the service's
// (503 unavailable with Retry-After), and stores nothing.
func TestCreateResolverFailure(t *testing.T) {
	rs := redistest.New(t)
	rdb := rs.Client()
	svc := webhooks.New(webhooks.Config{
		SiteRoot: "https://iw.test",
		Policy:   netguard.Policy{},
		Resolver: netguardtest.Resolver(t, map[string]netip.Addr{"ok": netip.MustParseAddr("93.184.216.34")}),
	}, webhook.NewStore(rdb))
	testCases := []struct {
		desc   string
		host   string
		status int
		code   string
	}{
		{desc: "NXDOMAIN", host: "nx.hooks.test", status: 400, code: "bad_request"},
		{desc: "SERVFAIL", host: "servfail.hooks.test", status: 503, code: "unavailable"},
		{desc: "resolver timeout", host: "silent.hooks.test", status: 503, code: "unavailable"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			body := `{"url":"https://` + tc.host + `/in","events":["article.published"]}`
			r := httptest.NewRequest("POST", "/api/v1/webhooks", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			_, err := svc.Create(r)
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status != tc.status || ae.Code != tc.code {
				t.Fatalf("Create: %v, want %d %s", err, tc.status, tc.code)
			}
			if ra := ae.Header.Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (ra != "") {
				t.Errorf("Retry-After %q with status %d", ra, ae.Status)
			}
			if !strings.Contains(ae.Message, tc.host) {
				t.Errorf("message %q does not name the host", ae.Message)
			}
			keys, err := redistest.Keys(t.Context(), rdb, "*")
			if err != nil || len(keys) != 0 {
				t.Errorf("Redis holds %v (%v) after a refused subscription, want nothing", keys, err)
			}
		})
	}
}
