package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
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

// TestPreconditionsThroughTheEdge sends If-Match and If-Unmodified-Since
// through the real Caddyfile to a real origin (RFC 9110 §13.1.1, §13.1.4,
// §13.2.2): a false one is the JSON 412 with no-store on a miss, on a hit
// and at the origin (Cache-Control: no-cache) alike, and never takes the
// place of the stored 200; a true one (the current tag, the gzip coding's
// own tag for a gzip client, "*", a date no earlier than Last-Modified)
// is the 200.
func TestPreconditionsThroughTheEdge(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	a := inst.Corpus.Articles[0]
	testCases := []struct {
		desc   string
		path   string
		header []string
		status int
	}{
		{desc: "a list, another tag", path: "/api/v1/articles", header: []string{`If-Match: "nomatch"`}, status: 412},
		{desc: "a list, star", path: "/api/v1/articles", header: []string{"If-Match: *"}, status: 200},
		{desc: "a list, the current tag", path: "/api/v1/articles", header: []string{"If-Match: {etag}"}, status: 200},
		{desc: "a list, the identity tag for gzip", path: "/api/v1/articles", header: []string{"Accept-Encoding: gzip", "If-Match: {etag}"}, status: 412},
		{desc: "a list, the gzip coding's tag", path: "/api/v1/articles", header: []string{"Accept-Encoding: gzip", "If-Match: {gzip-etag}"}, status: 200},
		{desc: "a list, another tag, at the origin", path: "/api/v1/articles", header: []string{`If-Match: "nomatch"`, "Cache-Control: no-cache"}, status: 412},
		{desc: "a list without Last-Modified ignores If-Unmodified-Since", path: "/api/v1/articles", header: []string{"If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT"}, status: 200},
		{desc: "a page, modified since", path: a.Path() + "/", header: []string{"If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT"}, status: 412},
		{desc: "a page, modified since, at the origin", path: a.Path() + "/", header: []string{"If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT", "Cache-Control: no-cache"}, status: 412},
		{desc: "a page, not modified since", path: a.Path() + "/", header: []string{"If-Unmodified-Since: Mon, 01 Jan 2035 00:00:00 GMT"}, status: 200},
		{desc: "a page, another tag", path: a.Path() + "/", header: []string{`If-Match: "nomatch"`}, status: 412},
		{desc: "a missing article ignores them", path: "/api/v1/articles/not-an-article", header: []string{`If-Match: "nomatch"`}, status: 404},
	}
	// Each path is first asked with a false precondition, a miss at the
	// edge: the 412 must come back, and must not be what is stored.
	for _, path := range []string{"/api/v1/articles", a.Path() + "/"} {
		if resp, b := do(t, "GET", edge+path, `If-Match: "nomatch"`); resp.StatusCode != 412 || !isJSONError(b, "precondition_failed") || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s, a miss: %d %q %.200s; want the JSON 412 with no-store", path, resp.StatusCode, resp.Header.Get("Cache-Control"), b)
		}
	}
	etags := map[string][2]string{}
	for _, path := range []string{"/api/v1/articles", a.Path() + "/"} {
		resp, _ := do(t, "GET", edge+path)
		gz, _ := do(t, "GET", edge+path, "Accept-Encoding: gzip")
		if resp.StatusCode != 200 || gz.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: %d, gzip %q", path, resp.StatusCode, gz.Header.Get("Content-Encoding"))
		}
		etags[path] = [2]string{resp.Header.Get("ETag"), gz.Header.Get("ETag")}
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var header []string
			for _, h := range tc.header {
				h = strings.ReplaceAll(h, "{etag}", etags[tc.path][0])
				header = append(header, strings.ReplaceAll(h, "{gzip-etag}", etags[tc.path][1]))
			}
			resp, b := do(t, "GET", edge+tc.path, header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d; want %d (Cache-Status %q)", resp.StatusCode, tc.status, resp.Header.Get("Cache-Status"))
			}
			if tc.status == 412 && (!isJSONError(b, "precondition_failed") || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("ETag") != "") {
				t.Errorf("412: Cache-Control %q, ETag %q, body %.200s; want the JSON error with no-store and no ETag", resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"), b)
			}
		})
	}
	// The 412s stored nothing: a plain read is the stored 200.
	for _, path := range []string{"/api/v1/articles", a.Path() + "/"} {
		if resp, _ := do(t, "GET", edge+path); resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Errorf("%s after the 412s: %d, Cache-Status %q; want a stored 200", path, resp.StatusCode, resp.Header.Get("Cache-Status"))
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

// TestRefusedBodyTakenBeforeClose: a client that sends its head, then its
// body while the edge has already answered 413 (it refuses on the
// Content-Length alone), can send all of it, then reads the JSON 413 and
// the close. Closed with the body unread, the connection was reset under
// the client's later writes, and Go's transport reported "broken pipe"
// instead of the 413 it had received (a flaky TestBodyOver64KiBThroughTheEdge).
func TestRefusedBodyTakenBeforeClose(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	testCases := []struct {
		desc string
		size int
	}{
		{desc: "one byte over the bound", size: 64<<10 + 1},
		{desc: "200 KiB, within what net/http drains", size: 200 << 10},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(edge, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			head := "POST /api/v1/agent-auth/register HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(tc.size) + "\r\n\r\n"
			if _, err := c.Write([]byte(head)); err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer to the head: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !isJSONError(b, "payload_too_large") {
				t.Fatalf("answer before the body: %d %.200s; want the JSON 413", resp.StatusCode, b)
			}
			// The body, in the pieces a client's buffer writes, after the
			// answer: the connection must still take it.
			piece := bytes.Repeat([]byte("x"), 4<<10)
			for sent := 0; sent < tc.size; sent += len(piece) {
				if _, err := c.Write(piece[:min(len(piece), tc.size-sent)]); err != nil {
					t.Fatalf("writing the body after %d of %d bytes: %v; the edge closed with the body unread", sent, tc.size, err)
				}
			}
			if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("after the body: read %d bytes, %v; want the edge's close (EOF)", n, err)
			}
		})
	}
}
