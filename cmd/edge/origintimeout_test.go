package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestHungOriginAnswered: an origin that takes the request and never
// answers (hung, or stopped with SIGSTOP) gets no hold on the client. After
// IW_ORIGIN_TIMEOUT the edge answers what it has: a stale copy within
// stale-if-error, else the JSON 503 with Retry-After. Neither names a
// fwd-status in Cache-Status: the origin returned no status (RFC 9211
// §2.3).
func TestHungOriginAnswered(t *testing.T) {
	hang := make(chan struct{})
	var hung atomic.Bool
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hung.Load() {
			<-hang
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=1, s-maxage=1, stale-if-error=600")
		w.Write([]byte(`{"count":0,"items":[]}`))
	}))
	t.Cleanup(func() { close(hang); upstream.Close() })
	t.Setenv("IW_ORIGIN_TIMEOUT", "1s")
	rd := redistest.Start(t)
	edge := startEdgeFor(t, upstream.Listener.Addr().String(), rd.URL(), "http://localhost", 100000)

	// The edge serves before its invalidation follower has subscribed, and
	// the follower's first resync clears the cache (nothing was seen
	// before it): warm the cache after that clear, or a busy machine's
	// late subscription wipes the copy the test needs.
	rdb := rd.Client()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m, _ := rdb.PubSubNumSub(context.Background(), "iw:invalidate").Result(); m["iw:invalidate"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edge never subscribed to invalidations")
		}
	}
	time.Sleep(300 * time.Millisecond) // the resync after the subscription
	if resp, _ := do(t, "GET", edge+"/api/v1/specs"); resp.StatusCode != http.StatusOK {
		t.Fatalf("warming the cache: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", edge+"/api/v1/specs"); !strings.Contains(resp.Header.Get("Cache-Status"), "; hit") {
		t.Fatalf("the copy was not stored: Cache-Status %q", resp.Header.Get("Cache-Status"))
	}
	hung.Store(true)
	time.Sleep(1100 * time.Millisecond) // the stored copy goes stale

	cases := []struct {
		desc        string
		path        string
		status      int
		cacheStatus string
	}{
		{desc: "stored: the stale copy", path: "/api/v1/specs", status: http.StatusOK,
			cacheStatus: "Invoicewire; fwd=stale; detail=stale-if-error"},
		{desc: "not stored: the JSON 503", path: "/api/v1/sources", status: http.StatusServiceUnavailable,
			cacheStatus: "Invoicewire; fwd=uri-miss; detail=no-response"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			start := time.Now()
			resp, body := do(t, "GET", edge+tc.path)
			took := time.Since(start)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d after %v: %s", resp.StatusCode, took, body)
			}
			if took > 5*time.Second {
				t.Fatalf("answered after %v, with IW_ORIGIN_TIMEOUT 1s", took)
			}
			if cs := resp.Header.Values("Cache-Status"); len(cs) != 1 || cs[0] != tc.cacheStatus {
				t.Errorf("Cache-Status %q; want %q", cs, tc.cacheStatus)
			}
			if tc.status == http.StatusOK {
				return
			}
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if json.Unmarshal(body, &e); e.Error.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s, Retry-After %q: want the JSON 503 unavailable", body, resp.Header.Get("Retry-After"))
			}
		})
	}
}
