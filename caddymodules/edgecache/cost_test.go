package edgecache

import (
	"fmt"
	"net/http"
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

// TestCostBoundsHeap fills a cache with the three codings of many
// responses, as the traffic benchmark does, and checks that the costs the
// cache counts against max_bytes are at least what the heap grew by: the
// soft memory limit is derived from max_bytes (docs/edge-gateway.md,
// "Memory"), so an undercount would let the cache outgrow it. It also
// checks the costs are not so high that the cache would hold much less
// than max_bytes of real memory.
func TestCostBoundsHeap(t *testing.T) {
	h := provisioned(t, &Handler{Name: "InvoicewireCost", MaxBytes: 1 << 30})

	const urls = 3000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var total int64
	now := time.Now()
	for i := range urls {
		target := fmt.Sprintf("/2026/11/a-slug-of-an-article-%d/", i)
		// Identity, then the compressed variants: smaller bodies, each
		// its own entry.
		for c, coding := range []string{"", "gzip", "zstd"} {
			body := make([]byte, (2000+i%7000)>>c)
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
			total += e.cost()
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	held := 0
	for i := range urls {
		for _, coding := range []string{"", "gzip", "zstd"} {
			if h.shared.get([]byte(fmt.Sprintf("example.com /2026/11/a-slug-of-an-article-%d/ %s", i, coding))) != nil {
				held++
			}
		}
	}
	if held != 3*urls {
		t.Fatalf("the cache holds %d entries, want %d", held, 3*urls)
	}
	t.Logf("%d entries: costs %d bytes, heap grew %d bytes (%.2f×)", 3*urls, total, grew, float64(total)/float64(grew))
	if total < grew {
		t.Errorf("costs %d bytes < heap growth %d bytes: max_bytes would not bound the cache's memory", total, grew)
	}
	if float64(total) > 1.5*float64(grew) {
		t.Errorf("costs %d bytes > 1.5 × heap growth %d bytes: the cache would hold far less than max_bytes", total, grew)
	}
	runtime.KeepAlive(h)
}
