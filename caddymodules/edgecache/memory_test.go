package edgecache

import (
	"bytes"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// originHeader is a response header as the reverse proxy hands it over:
// every value a string of its own, as parsed off the wire.
func originHeader(i int, coding string) http.Header {
	h := http.Header{
		"Content-Type":     {fmt.Sprint("application/json; charset=utf-8")},
		"Cache-Control":    {fmt.Sprint(readCC)},
		"Etag":             {fmt.Sprintf(`"a%08x-%s"`, i, coding)},
		"Last-Modified":    {time.Unix(int64(i), 0).UTC().Format(http.TimeFormat)},
		"Date":             {time.Unix(int64(i), 0).UTC().Format(http.TimeFormat)},
		"Surrogate-Key":    {fmt.Sprintf("article:a-slug-of-an-article-%d section:mandates country:be list", i)},
		"Vary":             {fmt.Sprint("Accept-Encoding")},
		"Link":             {fmt.Sprintf(`</2026/11/a-slug-of-an-article-%d.md>; rel="alternate"; type="text/markdown"`, i)},
		"Content-Length":   {fmt.Sprint(100 + i)},
		"X-Request-Id":     {fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)},
		"Content-Language": {fmt.Sprint("en")},
	}
	if coding != "" {
		h["Content-Encoding"] = []string{fmt.Sprint(coding)}
	}
	return h
}

// TestCacheMemoryBounded fills a cache with twice max_bytes of the three
// codings of many responses, as the traffic benchmark does, and checks what
// the soft memory limit is derived from (docs/edge-gateway.md, "Memory"):
// the heap grows by at most max_bytes and the index's share reserved with
// it, and it leaves the collector no object to mark per stored variant
// (docs/decisions.md, "Edge cache storage"). The last variants stored are
// read back as they were stored.
func TestCacheMemoryBounded(t *testing.T) {
	const maxBytes = 16 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h := provisioned(t, &Handler{Name: "InvoicewireMemory", MaxBytes: maxBytes})

	const urls = 6000
	var stored int64
	now := time.Now().Truncate(time.Second)
	var last []*entry
	for i := range urls {
		target := fmt.Sprintf("/2026/11/a-slug-of-an-article-%d/", i)
		// Identity, then the compressed variants: smaller bodies, each
		// its own entry.
		for c, coding := range []string{"", "gzip", "zstd"} {
			body := make([]byte, (3000+i%7000)>>c)
			body[0] = byte(i)
			key := "example.com " + target + " " + coding
			e := h.newEntry(key, http.StatusOK, originHeader(i, coding), body, now, now)
			if e == nil {
				t.Fatal("not storable")
			}
			e.uriTag = uriTag("example.com", target)
			if !h.shared.put(e, h.shared.generation()) {
				t.Fatal("not stored")
			}
			stored += int64(len(body))
			if i >= urls-10 {
				last = append(last, e)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if stored < 2*maxBytes {
		t.Fatalf("stored %d bytes of bodies, want at least twice max_bytes", stored)
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	objects := int64(after.HeapObjects) - int64(before.HeapObjects)
	t.Logf("%d variants, %d bytes of bodies: heap grew %d bytes (max_bytes %d), %d objects, %d entries held",
		3*urls, stored, grew, maxBytes, objects, h.shared.cache.Len())
	// Beyond the cache and its index: the handler itself (its encoders),
	// a few MiB.
	if limit := reservedBytes(int64(maxBytes)) + 8<<20; grew > limit {
		t.Errorf("heap grew %d bytes > %d: max_bytes does not bound the cache", grew, limit)
	}
	if held := h.shared.cache.Len(); objects*2 > held {
		t.Errorf("%d heap objects for %d entries held: the collector has entries to mark", objects, held)
	}
	for _, want := range last {
		got := h.shared.get([]byte(want.key))
		if got == nil {
			t.Fatalf("%s: one of the last entries stored is gone", want.key)
		}
		if diff := entryDiff(got, want); diff != "" {
			t.Errorf("%s: read back with %s", want.key, diff)
		}
	}
	runtime.KeepAlive(h)
}

// entryDiff names what differs between two entries, times compared as
// instants (a record keeps no time zone) and empty lists as nil.
func entryDiff(got, want *entry) string {
	if !bytes.Equal(got.body, want.body) {
		return fmt.Sprintf("a body of %d bytes, want %d bytes", len(got.body), len(want.body))
	}
	// The fields compare as the header they make: a record may keep
	// some of them in the cache's dictionary.
	if gh, wh := got.header.header(0), want.header.header(0); !reflect.DeepEqual(gh, wh) {
		return fmt.Sprintf("the fields %v, want %v", gh, wh)
	}
	g, w := *got, *want
	g.body, w.body = nil, nil
	for _, e := range []*entry{&g, &w} {
		e.respTime, e.lastMod = e.respTime.UTC(), e.lastMod.UTC()
		e.header = fields{}
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("\n%+v\nwant\n%+v", g, w)
	}
	return ""
}
