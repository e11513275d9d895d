package origintest

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/invoicewire/invoicewire/origin/openapi/contract"
)

// Untrusted sends one request made of untrusted input (a fuzzer's) to the
// running origin and fails t on every way the answer breaks the contract:
// a 5xx, an error that is not the JSON error, a status or body openapi.json
// does not describe. It returns the status, or 0 when the request could not
// even be built or sent (the fuzzer made a header Go's client refuses to
// send), which is no finding.
func (inst *Instance) Untrusted(t testing.TB, checker *contract.Checker, method, path string, header http.Header, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, inst.SiteRoot+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	for k, v := range header {
		req.Header[k] = v
	}
	// The answer judged is this request's: a redirect (docs/decisions.md,
	// "One address per resource") is checked as it is, not where it leads.
	client := *inst.Server.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	if resp.StatusCode >= 500 {
		t.Fatalf("%s %s with %q: %d for untrusted input: %s", method, path, body, resp.StatusCode, got)
	}
	for _, p := range checker.Problems(req, resp, got) {
		t.Errorf("contract: %s %s with %q → %d: %s", method, path, body, resp.StatusCode, p)
	}
	return resp.StatusCode
}
