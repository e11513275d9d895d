package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadResponse: the generator's parser reads net/http's answers in
// every framing on one keep-alive connection, keeps the fields the report
// uses, and counts each response's bytes whole.
func TestReadResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("ETag", `"e1-zstd"`)
			w.Header().Set("Cache-Status", "Invoicewire; hit; ttl=30")
			w.Write([]byte(strings.Repeat("a", 5000)))
		case "/chunked":
			w.Header().Set("Cache-Status", "Invoicewire; fwd=uri-miss; stored")
			for range 3 {
				w.Write([]byte(strings.Repeat("b", 40000)))
				w.(http.Flusher).Flush()
			}
		case "/304":
			w.Header().Set("ETag", `W/"e2"`)
			w.WriteHeader(http.StatusNotModified)
		case "/429":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"code":"rate_limited","message":"m"}}`))
		}
	}))
	defer srv.Close()
	k := &conn{addr: strings.TrimPrefix(srv.URL, "http://")}
	defer k.close()
	testCases := []struct {
		desc, method, path string
		status             int
		hit                bool
		etag               string
		// body is the body's length; the status line and fields add
		// less than 300 bytes.
		body int64
	}{
		{desc: "Content-Length", method: "GET", path: "/length", status: 200, hit: true, etag: `"e1-zstd"`, body: 5000},
		{desc: "chunked", method: "GET", path: "/chunked", status: 200, body: 120000},
		{desc: "304 without a body", method: "GET", path: "/304", status: 304, etag: `W/"e2"`},
		{desc: "HEAD with Content-Length", method: "HEAD", path: "/length", status: 200, hit: true, etag: `"e1-zstd"`},
		{desc: "429 with a body", method: "GET", path: "/429", status: 429, body: 47},
		{desc: "after the others, same connection", method: "GET", path: "/length", status: 200, hit: true, etag: `"e1-zstd"`, body: 5000},
	}
	var first any
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			k.req = []byte(test.method + " " + test.path + " HTTP/1.1\r\nHost: " + k.addr + "\r\n\r\n")
			before := k.received
			status, hit, err := k.do()
			if err != nil {
				t.Fatalf("do: %v", err)
			}
			if status != test.status || hit != test.hit || string(k.etag) != test.etag {
				t.Errorf("got %d hit=%v ETag %q; want %d hit=%v ETag %q", status, hit, k.etag, test.status, test.hit, test.etag)
			}
			if got := k.received - before; got <= test.body || got > test.body+300 {
				t.Errorf("counted %d bytes; want the %d of the body and under 300 more", got, test.body)
			}
			if first == nil {
				first = k.c
			} else if k.c != first {
				t.Errorf("the connection was not kept alive")
			}
		})
	}
}

// TestOpenLoopChargesStalls: one stall of the server delays every request
// due during it when no other connection is free, and the open loop counts
// each of those from the time it was due; with another connection free,
// the others go on time; the closed loop charges the stall to one request
// only.
func TestOpenLoopChargesStalls(t *testing.T) {
	const stall = 300 * time.Millisecond
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 10 {
			time.Sleep(stall)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	m := &mix{urls: []string{"/a"}, hot: 1, fixedClients: 1}
	testCases := []struct {
		desc      string
		conns     int
		perSecond float64
		// wantSlowMin and wantSlowMax bound how many requests took a third
		// of the stall or more.
		wantSlowMin, wantSlowMax int
		// wantSlowFromSend is how many took that long counted from when
		// they were sent: the stalled request only (the closed loop keeps
		// no such figure).
		wantSlowFromSend int
	}{
		// Every 10 ms: about 30 requests fall due in the stall.
		{desc: "open loop, one connection", conns: 1, perSecond: 100, wantSlowMin: 10, wantSlowMax: 1 << 30, wantSlowFromSend: 1},
		{desc: "open loop, another connection free", conns: 2, perSecond: 100, wantSlowMin: 1, wantSlowMax: 3, wantSlowFromSend: 1},
		{desc: "closed loop", conns: 1, perSecond: 0, wantSlowMin: 1, wantSlowMax: 2},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			served.Store(0)
			res := run(context.Background(), addr, m, tc.conns, time.Second, 1, tc.perSecond)
			slow := 0
			for _, l := range res.latencies {
				if l >= stall/3 {
					slow++
				}
			}
			if slow < tc.wantSlowMin || slow > tc.wantSlowMax {
				t.Errorf("%d of %d requests took %s or more; want %d to %d", slow, res.requests, stall/3, tc.wantSlowMin, tc.wantSlowMax)
			}
			slowFromSend := 0
			for _, l := range res.fromSend {
				if l >= stall/3 {
					slowFromSend++
				}
			}
			if slowFromSend != tc.wantSlowFromSend {
				t.Errorf("%d requests took %s or more from when sent; want %d", slowFromSend, stall/3, tc.wantSlowFromSend)
			}
			// Only an open loop waits for due times, so only it can lag
			// behind them.
			if open := tc.perSecond > 0; open != (len(res.wakeLags) > 0) {
				t.Errorf("%d wake-up lags recorded; want some only in an open loop", len(res.wakeLags))
			}
		})
	}
}

// TestFreshClientsAreNotTheProxy: no fresh client lies in 127.0.0.0/8, the
// proxies the edge trusts under this benchmark, which it skips when it
// reads X-Forwarded-For from the right: such a client would count as
// 127.0.0.1, one client that the benchmark's traffic soon limits.
func TestFreshClientsAreNotTheProxy(t *testing.T) {
	trusted := netip.MustParsePrefix("127.0.0.0/8")
	r := rand.New(rand.NewPCG(1, 2))
	var b []byte
	v4 := 0
	for range 100_000 {
		b = appendFreshClient(b[:0], r)
		a, err := netip.ParseAddr(string(b))
		if err != nil {
			t.Fatalf("fresh client %q: %v", b, err)
		}
		if trusted.Contains(a) {
			t.Fatalf("fresh client %s is a trusted proxy's address", a)
		}
		if a.Is4() {
			v4++
		}
	}
	// About half are IPv4; drawn uniformly, some 200 would fall in 127/8.
	if v4 < 45_000 || v4 > 55_000 {
		t.Errorf("%d of 100000 fresh clients are IPv4; want about half", v4)
	}
}
