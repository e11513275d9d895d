package edgecache

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestHitBuffersReused: a hit reads its record into a buffer that later
// requests read theirs into (hitBuffers). What a response keeps after the
// handler returned, its header values and the body it was written, must
// not change when later hits reuse the buffer; stale hits, whose entry a
// background refresh keeps, must not share it either.
func TestHitBuffersReused(t *testing.T) {
	h := provisioned(t, &Handler{Name: "InvoicewireBuffers"})
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		name := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Cache-Control", readCC)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Etag", `"`+name+`"`)
		w.Header().Set("Link", "</"+name+".md>")
		_, _ = w.Write(bytes.Repeat([]byte(name), 300))
		return nil
	})
	serve := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil), next); err != nil {
			t.Fatal(err)
		}
		return w
	}
	paths := []string{"/aaaa", "/bbbbbbbb", "/cc"}
	for _, p := range paths {
		serve(p)
	}
	var answers []*httptest.ResponseRecorder
	for i := range 30 {
		answers = append(answers, serve(paths[i%len(paths)]))
	}
	for i, w := range answers {
		name := strings.TrimPrefix(paths[i%len(paths)], "/")
		if cs := w.Header().Get("Cache-Status"); !strings.Contains(cs, "hit") {
			t.Fatalf("answer %d: Cache-Status %q, want a hit", i, cs)
		}
		if got, want := w.Header().Get("Etag"), `"`+name+`"`; got != want {
			t.Errorf("answer %d: ETag %q after later hits, want %q", i, got, want)
		}
		if got, want := w.Header().Get("Link"), "</"+name+".md>"; got != want {
			t.Errorf("answer %d: Link %q after later hits, want %q", i, got, want)
		}
		if !bytes.Equal(w.Body.Bytes(), bytes.Repeat([]byte(name), 300)) {
			t.Errorf("answer %d: body %.40q…, want %s repeated", i, w.Body.Bytes(), name)
		}
	}
}

func TestLookupOwn(t *testing.T) {
	h := provisioned(t, &Handler{Name: "InvoicewireOwn"})
	for _, body := range []string{"", "a body of its own"} {
		e := &entry{key: "example.com /own " + body, status: http.StatusOK, body: []byte(body), etag: `"e"`,
			header: packFields(http.Header{"Content-Type": {"text/plain"}}, nil, nil)}
		if !h.shared.put(e, h.shared.generation()) {
			t.Fatal("not stored")
		}
		buf := new([]byte)
		got := h.shared.lookup([]byte(e.key), buf)
		if got == nil || string(got.body) != body {
			t.Fatalf("lookup = %+v, want the body %q", got, body)
		}
		got.own()
		clear(*buf)
		clear((*buf)[:cap(*buf)])
		if string(got.body) != body || got.etag != `"e"` || got.key != e.key {
			t.Errorf("after the buffer changed: body %q, ETag %q, key %q", got.body, got.etag, got.key)
		}
	}
}

// TestHitReusesBuffer: a hit of a large body reads its record into a
// pooled buffer rather than a new one, so what it allocates does not grow
// with the body (make bench-edge's 15 KB list allocated its size on every
// hit while the buffer kept the record's value but not its header).
func TestHitReusesBuffer(t *testing.T) {
	h := provisioned(t, &Handler{Name: "InvoicewireReuse"})
	body := bytes.Repeat([]byte("x"), 16<<10)
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", readCC)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
		return nil
	})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/articles?limit=18", nil)
	if err := h.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
		t.Fatal(err)
	}
	w := &discardWriter{h: make(http.Header, 32)}
	const hits = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range hits {
		clear(w.h)
		if err := h.ServeHTTP(w, req, next); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if !strings.Contains(w.h.Get("Cache-Status"), "hit") {
		t.Fatalf("not a hit: %v", w.h)
	}
	// Half the body: a new buffer a hit is more than the whole body, and
	// under the race detector sync.Pool drops a quarter of what it is
	// given (about 6 KB a hit then, against 1 KB without it).
	if perHit := (after.TotalAlloc - before.TotalAlloc) / hits; perHit > uint64(len(body)/2) {
		t.Errorf("a hit of a %d-byte body allocates %d bytes: the record is not read into a reused buffer", len(body), perHit)
	}
}
