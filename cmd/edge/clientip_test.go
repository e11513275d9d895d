package main

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// k8sCaddyfile is deploy/k8s/base/Caddyfile with its admin API on the port
// admin, its public site on port, its metrics site on metrics and the
// origin pods' DNS name and port swapped for upstream (host:port), as
// deploy/check/stack rewrites it.
func k8sCaddyfile(t *testing.T, admin, port, metrics int, upstream string) string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/k8s/base/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	host, upPort, _ := strings.Cut(upstream, ":")
	cfg := string(raw)
	for _, r := range []struct{ re, repl string }{
		{`(?m)^\tadmin 127\.0\.0\.1:2019$`, fmt.Sprintf("\tadmin localhost:%d", admin)},
		{`(?m)^:8080 \{$`, fmt.Sprintf(":%d {", port)},
		{`(?m)^:9180 \{$`, fmt.Sprintf(":%d {\n\tbind 127.0.0.1", metrics)},
		{`(?m)^(\t+)name origin$`, "${1}name " + host},
		{`(?m)^(\t+)port 8081$`, "${1}port " + upPort},
	} {
		re := regexp.MustCompile(r.re)
		if !re.MatchString(cfg) {
			t.Fatalf("deploy/k8s/base/Caddyfile no longer has %s; update this test", r.re)
		}
		cfg = re.ReplaceAllString(cfg, r.repl)
	}
	return cfg
}

// TestClientIsRightMostUntrusted runs every shipped Caddyfile that trusts
// proxies (make run's when IW_TRUSTED_PROXIES is set) behind a "proxy" on
// loopback: the client the rate limit keys on is the right-most
// X-Forwarded-For entry that is not a trusted proxy, since a proxy appends
// to the right and everything to the left is whatever the client sent. A
// client that makes up a new left-most entry per request stays one client.
func TestClientIsRightMostUntrusted(t *testing.T) {
	const quota = 5
	for _, file := range []struct {
		desc string
		// config is the Caddyfile to load with its admin API on admin and
		// its site on port, in front of upstream.
		config func(t *testing.T, admin, port int, upstream string) string
	}{
		{desc: "caddyfile/Caddyfile", config: func(t *testing.T, admin, port int, upstream string) string {
			t.Setenv("IW_EDGE_ADMIN_ADDR", fmt.Sprintf("localhost:%d", admin))
			t.Setenv("IW_EDGE_PORT", fmt.Sprint(port))
			t.Setenv("IW_ORIGIN_ADDR", upstream)
			raw, err := os.ReadFile("../../caddyfile/Caddyfile")
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}},
		{desc: "caddyfile/Caddyfile.production", config: func(t *testing.T, admin, port int, upstream string) string {
			t.Setenv("IW_ORIGIN_ADDRS", upstream)
			return productionCaddyfile(t, admin, port)
		}},
		{desc: "deploy/k8s/base/Caddyfile", config: func(t *testing.T, admin, port int, upstream string) string {
			return k8sCaddyfile(t, admin, port, freeport.Ports(t, 1)[0], upstream)
		}},
	} {
		t.Run(file.desc, func(t *testing.T) {
			inst := origintest.Start(t)
			ports := freeport.Ports(t, 2)
			admin, port := ports[0], ports[1]
			t.Setenv("IW_REDIS_URL", inst.Redis.URL())
			t.Setenv("IW_PUBLIC_URL", inst.SiteRoot)
			t.Setenv("IW_RATELIMIT_QUOTA", fmt.Sprint(quota))
			t.Setenv("IW_TRUSTED_PROXIES", "127.0.0.0/8")
			pc := stillLimiters(t, inst.Redis.URL(), quota)
			loadCaddy(t, file.config(t, admin, port, strings.TrimPrefix(inst.SiteRoot, "http://")), admin)
			if !pc.Used() {
				t.Fatal("the edge did not take the rate limiters with the test's clock: the Caddyfile's limiter differs from the one pooled")
			}
			url := fmt.Sprintf("http://127.0.0.1:%d/api/v1/", port)

			// 203.0.113.7 spends its budget naming a new "client" to its
			// left on every request.
			for i := range quota {
				if resp, body := do(t, "GET", url, fmt.Sprintf("X-Forwarded-For: 198.51.100.%d, 203.0.113.7", i+1)); resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d of the budget: %d %s", i+1, resp.StatusCode, body)
				}
			}
			testCases := []struct {
				desc   string
				header []string
				status int
			}{
				{desc: "a new left-most entry does not escape the limit", header: []string{"X-Forwarded-For: 198.51.100.99, 203.0.113.7"}, status: http.StatusTooManyRequests},
				{desc: "the client alone is the same client", header: []string{"X-Forwarded-For: 203.0.113.7"}, status: http.StatusTooManyRequests},
				{desc: "trusted proxies to its right are skipped", header: []string{"X-Forwarded-For: 198.51.100.99, 203.0.113.7, 127.0.0.9"}, status: http.StatusTooManyRequests},
				{desc: "a second field line is read after the first", header: []string{"X-Forwarded-For: 198.51.100.99", "X-Forwarded-For: 203.0.113.7"}, status: http.StatusTooManyRequests},
				{desc: "the right-most untrusted entry is another client", header: []string{"X-Forwarded-For: 203.0.113.7, 203.0.113.8"}, status: http.StatusOK},
				{desc: "without the field the proxy is the client", status: http.StatusOK},
			}
			for _, tc := range testCases {
				t.Run(tc.desc, func(t *testing.T) {
					resp, body := do(t, "GET", url, tc.header...)
					if resp.StatusCode != tc.status {
						t.Errorf("status %d; want %d (%s)", resp.StatusCode, tc.status, body)
					}
					if tc.status == http.StatusTooManyRequests && !isJSONError(body, "rate_limited") {
						t.Errorf("429 body %s", body)
					}
				})
			}
		})
	}
}
