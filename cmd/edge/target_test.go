package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/origin/origintest"
)

// target is a request target of exactly n bytes: a read of the articles
// with a query parameter the origin ignores.
func target(n int) string {
	const p = "/api/v1/articles?pad="
	return p + strings.Repeat("x", n-len(p))
}

// TestLongTargetIs414: a request target longer than 8 KiB is answered 414
// URI Too Long (RFC 9110 §15.5.15) with the JSON bad_request, by every
// shipped Caddyfile, for every method (CORS preflights excepted), before
// the edge cache or the register budget sees it, with the fields the
// edge's errors carry (docs/decisions.md, "Request-target length"). Header
// fields too large stay 431. Through caddyfile/Caddyfile and Caddyfile.production in front
// of a real origin over a real Redis.
func TestLongTargetIs414(t *testing.T) {
	testCases := []struct {
		desc   string
		method string // GET when empty
		target string
		header []string
		// raw sends the request on a connection of its own: net/http
		// refuses it before any handler runs.
		raw    bool
		status int
	}{
		{desc: "a target of 8 KiB is served", target: target(8192), status: 200},
		{desc: "a target one byte over 8 KiB", target: target(8193), status: 414},
		{desc: "HEAD", method: "HEAD", target: target(8193), status: 414},
		{desc: "a registration", method: "POST", target: "/api/v1/agent-auth/register?pad=" + strings.Repeat("x", 9000),
			header: []string{"Content-Type: application/json"}, status: 414},
		// Answered by the Caddyfile, as over the budget: refused, the
		// browser would hide from the page the 414 its request then gets.
		{desc: "a CORS preflight is let through", method: "OPTIONS", target: target(8193),
			header: []string{"Origin: https://app.example", "Access-Control-Request-Method: GET"}, status: 204},
		{desc: "an OPTIONS that is no preflight", method: "OPTIONS", target: target(8193), status: 414},
		{desc: "a target of 100 KiB, which cmd/origin's 64 KiB of header bytes refuse with 431", target: target(100 << 10), status: 414},
		{desc: "a target over the edge's max_header_size", target: target(2 << 20), raw: true, status: 414},
		{desc: "header fields over the edge's max_header_size stay 431", target: target(100),
			header: []string{"X-Big: " + strings.Repeat("x", 2<<20)}, raw: true, status: 431},
	}
	edges := []struct {
		desc  string
		start func(*testing.T, *origintest.Instance) string
	}{
		{desc: "make run", start: func(t *testing.T, inst *origintest.Instance) string { return startEdge(t, inst, 100000) }},
		{desc: "production example", start: startProductionEdge},
	}
	for _, e := range edges {
		t.Run(e.desc, func(t *testing.T) {
			inst := origintest.Start(t)
			edge := e.start(t, inst)
			for _, tc := range testCases {
				t.Run(tc.desc, func(t *testing.T) {
					method := tc.method
					if method == "" {
						method = "GET"
					}
					var resp *http.Response
					var body []byte
					if tc.raw {
						c := rawConn(t, edge)
						raw := method + " " + tc.target + " HTTP/1.1\r\nHost: localhost\r\n"
						for _, h := range tc.header {
							raw += h + "\r\n"
						}
						go fmt.Fprint(c, raw+"\r\n") // the edge answers before it has read all of it
						resp, body = readResponse(t, bufio.NewReader(c))
					} else {
						resp, body = do(t, method, edge+tc.target, tc.header...)
					}
					if resp.StatusCode != tc.status {
						t.Fatalf("%s of a %d-byte target: %d %.200s; want %d", method, len(tc.target), resp.StatusCode, body, tc.status)
					}
					if tc.status < 400 {
						return
					}
					if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" ||
						resp.Header.Get("Access-Control-Allow-Origin") != "*" {
						t.Errorf("fields %v: want the JSON error's Content-Type, Cache-Control no-store and CORS", resp.Header)
					}
					if method == "HEAD" {
						if len(body) != 0 {
							t.Errorf("HEAD answered with a body: %q", body)
						}
					} else if !isJSONError(body, "bad_request") {
						t.Errorf("body %.200s; want the JSON bad_request", body)
					}
					if tc.raw {
						// net/http's own answer, rewritten by conn_guard: no
						// handler ran, so no RateLimit fields, and the
						// connection closes.
						if !resp.Close {
							t.Error("the connection stays open")
						}
						return
					}
					// Answered by the handlers: the fields every edge error
					// carries, and nothing from the cache.
					for _, h := range []string{"RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-Request-Id"} {
						if resp.Header.Get(h) == "" {
							t.Errorf("no %s: %v", h, resp.Header)
						}
					}
					if tc.status == 414 {
						if cs := resp.Header.Get("Cache-Status"); cs != "" {
							t.Errorf("Cache-Status %q: the edge cache saw the request", cs)
						}
						// Refused before the register budget counted it.
						if rl := resp.Header.Get("RateLimit"); strings.Contains(rl, "register") {
							t.Errorf("RateLimit %q: the register budget counted it", rl)
						}
					}
				})
			}
		})
	}
}
