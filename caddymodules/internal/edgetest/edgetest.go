// Package edgetest runs the edge modules inside a real Caddy for tests, the
// way net/http/httptest runs real HTTP servers: caddytest starts one Caddy
// in the test process, and each test loads its own Caddyfile into it.
//
// caddytest's Caddy listens on a fixed admin port; edgetest picks a free
// admin port and a free HTTP port once per test process, so the edge
// packages' tests can run side by side (`go test ./caddymodules/...`).
// Tests within one package share the one Caddy and must not be parallel.
package edgetest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/invoicewire/invoicewire/internal/freeport"
)

var (
	once      sync.Once
	adminPort int
	httpPort  int
	httpsPort int
)

// Edge is a loaded configuration.
type Edge struct {
	// URL is the site's base URL, http://127.0.0.1:<port>.
	URL string
	// Client does not follow redirects, keeps no cookies and asks for no
	// compression by itself.
	Client *http.Client
	// Tester is the caddytest tester that loaded the config.
	Tester *caddytest.Tester
}

// Options adds to the generated Caddyfile.
type Options struct {
	// Global holds extra global options (e.g. a servers block).
	Global string
}

// Start loads a Caddyfile whose single site, on a free port, holds site
// (directives, handle_errors and all).
func Start(t *testing.T, site string, opts ...Options) *Edge {
	t.Helper()
	once.Do(func() {
		ports := freeport.Ports(t, 3)
		adminPort, httpPort, httpsPort = ports[0], ports[1], ports[2]
	})
	var global string
	for _, o := range opts {
		global += o.Global + "\n"
	}
	cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	auto_https off
	skip_install_trust
	grace_period 1ns
	%s
}
:%d {
	%s
}
`, adminPort, httpPort, httpsPort, global, httpPort, site)
	// caddytest skips, rather than fails, a test whose Caddy did not start
	// (admin port taken, certificates missing); a skipped edge test would
	// hide a broken edge, so it fails instead. (Under -short, skip.)
	if !testing.Short() {
		t.Cleanup(func() {
			if t.Skipped() {
				t.Errorf("edgetest: caddytest skipped the test: Caddy did not start")
			}
		})
	}
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          adminPort,
		LoadRequestTimeout: 20 * time.Second,
		TestRequestTimeout: 20 * time.Second,
	})
	tester.InitServer(cfg, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return &Edge{
		URL:    fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		Tester: tester,
		Client: &http.Client{
			Timeout:       20 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16},
		},
	}
}

// Do sends a request to the edge; header is "Name: value" lines.
func (e *Edge) Do(t *testing.T, method, path string, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
		req.ContentLength = 0
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, string(b)
}
