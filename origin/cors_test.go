package origin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/origin/origintest"
)

// notForScripts are the response fields a page's script has no use for:
// CORS's own, the ones that only the browser or a cache acts on, and the
// ones meant for the edge, which it strips (the purge tags and the content
// version an answer reflects, docs/decisions.md). Everything else a route sends must be in
// Access-Control-Expose-Headers, or a script calling the API from a page
// cannot read it.
var notForScripts = map[string]bool{
	"Access-Control-Allow-Origin": true, "Access-Control-Expose-Headers": true,
	"Content-Security-Policy": true, "X-Content-Type-Options": true, "Vary": true, "Date": true,
	"Content-Encoding": true, "Surrogate-Key": true, "Invoicewire-Content-Version": true,
}

// corsSafelisted are the response fields a script reads without them being
// exposed (Fetch standard, "CORS-safelisted response-header name").
var corsSafelisted = map[string]bool{
	"Cache-Control": true, "Content-Language": true, "Content-Length": true, "Content-Type": true,
	"Expires": true, "Last-Modified": true, "Pragma": true,
}

// TestWriteFlowFieldsReadableFromPages: a browser agent following the
// registration walkthrough must read the 401's challenge (its
// resource_metadata), the Location of what it created, the mark of a
// replayed write and a 405's Allow, as the rest of the API's fields.
func TestWriteFlowFieldsReadableFromPages(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	register := `{"client_name":"browser agent"}`
	cases := []struct {
		desc   string
		method string
		path   string
		body   string
		header http.Header
		status int
		field  string
	}{
		{desc: "subscription without a token", method: "POST", path: "/api/v1/webhooks", body: `{}`, status: 401, field: "WWW-Authenticate"},
		{desc: "registration", method: "POST", path: "/api/v1/agent-auth/register", body: register, header: http.Header{"Idempotency-Key": {"cors-1"}}, status: 201, field: "Location"},
		{desc: "registration replayed", method: "POST", path: "/api/v1/agent-auth/register", body: register, header: http.Header{"Idempotency-Key": {"cors-1"}}, status: 201, field: "Idempotency-Replayed"},
		{desc: "method a path does not take", method: "POST", path: "/openapi.json", body: `{}`, status: 405, field: "Allow"},
		{desc: "a read", method: "GET", path: "/api/v1/articles?limit=1", status: 200, field: "ETag"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := call(t, inst, tc.method, tc.path, "application/json", tc.body, tc.header)
			if resp.StatusCode != tc.status || resp.Header.Get(tc.field) == "" {
				t.Fatalf("%d with %s %q, want %d with it; body %s", resp.StatusCode, tc.field, resp.Header.Get(tc.field), tc.status, body)
			}
			exposed := map[string]bool{}
			for _, name := range strings.Split(resp.Header.Get("Access-Control-Expose-Headers"), ",") {
				exposed[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
			}
			for name := range resp.Header {
				if !exposed[name] && !corsSafelisted[name] && !notForScripts[name] {
					t.Errorf("%s is sent but not in Access-Control-Expose-Headers", name)
				}
			}
		})
	}
}
