package connguard

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// serve starts a real net/http server behind the wrapper, with max header
// bytes small enough to reach, and tls when asked. Its handler answers 200
// in plain text with Connection: close, the fields net/http's own errors
// carry, so a test sees that handler responses pass unchanged.
func serve(t *testing.T, tls bool) *httptest.Server {
	t.Helper()
	w := &Wrapper{PerAddress: 16, open: &openCounts{byAddr: map[netip.Prefix]int{}}}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Header().Set("Connection", "close")
		io.WriteString(rw, "handler")
	}))
	ts.Config.MaxHeaderBytes = 4096
	ts.Listener = w.WrapListener(ts.Listener)
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts
}

// roundTrip writes raw to a new connection and reads one response.
func roundTrip(t *testing.T, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, body
}

// TestUnparsableRequestsAnsweredInJSON sends requests net/http refuses
// before any handler runs, and checks each answer is the service's JSON
// error with net/http's status.
func TestUnparsableRequestsAnsweredInJSON(t *testing.T) {
	ts := serve(t, false)
	addr := ts.Listener.Addr().String()
	testCases := []struct {
		desc     string
		raw      string
		status   int
		code     string
		mentions string
	}{
		{desc: "bad percent escape in the target", raw: "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, code: "bad_request", mentions: "hex escape"},
		{desc: "malformed request line", raw: "GET/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, code: "bad_request", mentions: "request line"},
		{desc: "missing Host", raw: "GET / HTTP/1.1\r\n\r\n", status: 400, code: "bad_request", mentions: "missing required Host header"},
		{desc: "two Host fields", raw: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, code: "bad_request"},
		{desc: "invalid header name", raw: "GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", status: 400, code: "bad_request", mentions: "invalid header name"},
		{desc: "header fields over the limit", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("x", 8192) + "\r\n\r\n", status: 431, code: "bad_request", mentions: "too large"},
		{desc: "request target over the limit", raw: "GET /" + strings.Repeat("x", 8192) + " HTTP/1.1\r\nHost: a\r\n\r\n", status: 414, code: "bad_request", mentions: "too long"},
		{desc: "a long target with header fields over the limit", raw: "GET /" + strings.Repeat("x", 4000) + " HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("x", 8192) + "\r\n\r\n", status: 431, code: "bad_request", mentions: "too large"},
		// 501 and 505 answer what the request used (RFC 9112 §6.1, RFC 9110
		// §15.6.6): the client's to change, so bad_request, as 414 and 431.
		{desc: "unknown transfer coding", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501, code: "bad_request", mentions: "transfer coding"},
		{desc: "a transfer coding before chunked", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", status: 501, code: "bad_request", mentions: "transfer coding"},
		{desc: "a misspelt chunked", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", status: 501, code: "bad_request", mentions: "transfer coding"},
		{desc: "unknown HTTP version", raw: "GET / HTTP/3.0\r\nHost: a\r\n\r\n", status: 505, code: "bad_request", mentions: "HTTP version"},
		{desc: "unsupported expectation", raw: "GET / HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\n\r\n", status: 417, code: "bad_request", mentions: "expectation"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := roundTrip(t, addr, tc.raw)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json; body %q", ct, body)
			}
			if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Date") == "" || !resp.Close {
				t.Errorf("fields %v: want Cache-Control no-store, a Date and Connection: close", resp.Header)
			}
			var e struct {
				Error struct{ Code, Message, Hint string }
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %q is not JSON: %v", body, err)
			}
			if e.Error.Code != tc.code || e.Error.Message == "" || e.Error.Hint == "" {
				t.Fatalf("error %+v, want code %s with a message and a hint", e.Error, tc.code)
			}
			if !strings.Contains(e.Error.Message+" "+e.Error.Hint, tc.mentions) {
				t.Errorf("error %+v does not mention %q", e.Error, tc.mentions)
			}
		})
	}

	t.Run("a handler's own plain text passes unchanged", func(t *testing.T) {
		resp, body := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp.StatusCode != 200 || string(body) != "handler" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("got %d %v %q, want the handler's 200", resp.StatusCode, resp.Header, body)
		}
	})
}

// TestPlainHTTPToTLSPortAnsweredInJSON: with the wrapper before tls, as
// Caddyfile.production places it, net/http's answer to plain HTTP on the
// TLS port goes through the wrapper.
func TestPlainHTTPToTLSPortAnsweredInJSON(t *testing.T) {
	ts := serve(t, true)
	resp, body := roundTrip(t, ts.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), "TLS") {
		t.Fatalf("got %d %v %q, want the JSON 400 naming TLS", resp.StatusCode, resp.Header, body)
	}
	if c := ts.Client(); c != nil {
		r, err := c.Get(ts.URL)
		if err != nil {
			t.Fatalf("a TLS request through the wrapper: %v", err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("a TLS request through the wrapper: status %d", r.StatusCode)
		}
	}
}

// FuzzRewriteRawError: whatever a write holds, the rewrite never panics,
// what it writes instead is a whole JSON error answer, and a response with
// net/http's usual framing (a Date among its fields) is never rewritten.
func FuzzRewriteRawError(f *testing.F) {
	f.Add([]byte("HTTP/1.1 400 Bad Request" + plainErrorFields + "400 Bad Request"))
	f.Add([]byte("HTTP/1.1 400 Bad Request: missing required Host header" + plainErrorFields + "x"))
	f.Add([]byte(httpToTLSPort))
	f.Add([]byte(expectationFailedPrefix + "Connection: close\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nDate: x\r\n\r\n{}"))
	f.Fuzz(func(t *testing.T, p []byte) {
		out, ok := rewriteRawError(p, time.Unix(0, 0), func() bool { return len(p)%2 == 0 })
		if !ok {
			return
		}
		if strings.Contains(string(p), "\r\nDate: ") && !strings.HasPrefix(string(p), expectationFailedPrefix) {
			t.Fatalf("rewrote a response with a Date: %q", p)
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
		if err != nil {
			t.Fatalf("the rewrite %q is no HTTP response: %v", out, err)
		}
		body, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if resp.StatusCode < 400 || json.Unmarshal(body, &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("the rewrite %q is no JSON error", out)
		}
	})
}
