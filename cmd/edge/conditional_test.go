package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/origin/origintest"
)

// TestConditionalThroughTheEdge sends If-None-Match and If-Modified-Since
// through the real Caddyfile to a real origin (RFC 9110 §13.1.2, §13.1.3):
// a matching validator is a 304 without a body, from the edge's store and
// on a miss alike; a stale one is a 200.
func TestConditionalThroughTheEdge(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	art := edge + "/api/v1/articles/" + inst.Corpus.Articles[0].Slug

	resp, body := do(t, "GET", art)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || etag == "" {
		t.Fatalf("GET %s: %d, ETag %q", art, resp.StatusCode, etag)
	}
	testCases := []struct {
		desc   string
		header string
		status int
	}{
		{desc: "the current tag", header: "If-None-Match: " + etag, status: 304},
		{desc: "the tag in a list, weak", header: `If-None-Match: "other", W/` + strings.TrimPrefix(etag, "W/"), status: 304},
		{desc: "any tag", header: "If-None-Match: *", status: 304},
		{desc: "another tag", header: `If-None-Match: "not-this-one"`, status: 200},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			resp, b := do(t, "GET", art, test.header)
			if resp.StatusCode != test.status {
				t.Fatalf("%d; want %d", resp.StatusCode, test.status)
			}
			if test.status == 304 && (len(b) != 0 || resp.Header.Get("ETag") != etag) {
				t.Errorf("304 with %d body bytes and ETag %q; want none and %q", len(b), resp.Header.Get("ETag"), etag)
			}
			if test.status == 200 && string(b) != string(body) {
				t.Errorf("200 body differs from the first answer")
			}
		})
	}
	// A miss at the edge (Cache-Control: no-cache sends it to the origin)
	// still answers 304.
	if resp, b := do(t, "GET", art, "If-None-Match: "+etag, "Cache-Control: no-cache"); resp.StatusCode != 304 || len(b) != 0 {
		t.Errorf("revalidated at the origin: %d with %d bytes; want 304 without a body", resp.StatusCode, len(b))
	}

	// The article carries Last-Modified (its updated_at, else published_at),
	// so If-Modified-Since answers 304 when no If-None-Match is sent (RFC
	// 9110 §13.1.3): from the edge's store, on a miss revalidated at the
	// origin, and never for an earlier date or when a stale If-None-Match
	// wins (RFC 9110 §13.2.2).
	lastMod := resp.Header.Get("Last-Modified")
	lm, err := http.ParseTime(lastMod)
	if err != nil {
		t.Fatalf("Last-Modified %q: %v", lastMod, err)
	}
	before := lm.Add(-time.Second).Format(http.TimeFormat)
	imsCases := []struct {
		desc   string
		header []string
		status int
	}{
		{desc: "since Last-Modified, stored", header: []string{"If-Modified-Since: " + lastMod}, status: 304},
		{desc: "since a later date, stored", header: []string{"If-Modified-Since: Mon, 01 Jan 2035 00:00:00 GMT"}, status: 304},
		{desc: "since Last-Modified, at the origin", header: []string{"If-Modified-Since: " + lastMod, "Cache-Control: no-cache"}, status: 304},
		{desc: "since an earlier date", header: []string{"If-Modified-Since: " + before}, status: 200},
		{desc: "since an earlier date, at the origin", header: []string{"If-Modified-Since: " + before, "Cache-Control: no-cache"}, status: 200},
		{desc: "a stale If-None-Match wins", header: []string{"If-Modified-Since: " + lastMod, `If-None-Match: "stale"`}, status: 200},
		{desc: "a stale If-None-Match wins at the origin", header: []string{"If-Modified-Since: " + lastMod, `If-None-Match: "stale"`, "Cache-Control: no-cache"}, status: 200},
	}
	for _, test := range imsCases {
		t.Run(test.desc, func(t *testing.T) {
			resp, b := do(t, "GET", art, test.header...)
			if resp.StatusCode != test.status {
				t.Fatalf("%d; want %d", resp.StatusCode, test.status)
			}
			if test.status == 304 && (len(b) != 0 || resp.Header.Get("Last-Modified") != lastMod || resp.Header.Get("ETag") != etag) {
				t.Errorf("304 with %d body bytes, Last-Modified %q, ETag %q", len(b), resp.Header.Get("Last-Modified"), resp.Header.Get("ETag"))
			}
			if test.status == 200 && string(b) != string(body) {
				t.Errorf("200 body differs from the first answer")
			}
		})
	}
	// A list shows many articles and carries no Last-Modified: never 304
	// on a date alone.
	list := edge + "/api/v1/articles"
	for _, hit := range []string{"first", "again"} {
		resp, _ := do(t, "GET", list, "If-Modified-Since: Mon, 01 Jan 2035 00:00:00 GMT")
		if resp.StatusCode != 200 || resp.Header.Get("Last-Modified") != "" {
			t.Errorf("%s list read with If-Modified-Since: %d, Last-Modified %q; want 200 without it", hit, resp.StatusCode, resp.Header.Get("Last-Modified"))
		}
	}
}

// TestBodyOver64KiBThroughTheEdge posts bodies over the origin's 64 KiB
// bound through the edge: the JSON 413, whether the edge buffered the body
// or streamed it, and nothing registered.
func TestBodyOver64KiBThroughTheEdge(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	for _, size := range []int{64<<10 + 1, 1 << 20} {
		body := `{"client_name":"` + strings.Repeat("x", size) + `"}`
		resp, b := post(t, edge+"/api/v1/agent-auth/register", body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !isJSONError(b, "payload_too_large") || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%d-byte body: %d %q %.200s; want the JSON 413", len(body), resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	keys, err := inst.Redis.Client().Keys(t.Context(), "iw:client:*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("clients registered by refused bodies: %v %v", keys, err)
	}
}
