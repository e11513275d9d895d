package edgecache

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// discardWriter is a ResponseWriter that keeps nothing but a reused
// header map, so the benchmark counts the handler's own allocations.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// benchHandler is a provisioned cache with the default settings, cleaned up
// when the benchmark ends.
func benchHandler(b *testing.B) *Handler { return provisioned(b, &Handler{Name: "InvoicewireBench"}) }

// provisioned provisions h, cleaned up when the test ends.
func provisioned(tb testing.TB, h *Handler) *Handler {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	tb.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Cleanup() })
	return h
}

// BenchmarkHit measures a cache hit of a 16 KB body in the module alone.
func BenchmarkHit(b *testing.B) {
	h := benchHandler(b)
	body := []byte(strings.Repeat("x", 16<<10))
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", readCC)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Surrogate-Key", "list section:mandates")
		w.Write(body)
		return nil
	})
	req := httptest.NewRequest("GET", "/api/v1/articles?limit=18", nil)
	req.Header.Set("Accept-Encoding", "gzip, zstd")
	if err := h.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
		b.Fatal(err)
	}
	w := &discardWriter{h: make(http.Header, 32)}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clear(w.h)
		if err := h.ServeHTTP(w, req, next); err != nil {
			b.Fatal(err)
		}
	}
	if !strings.Contains(w.h.Get("Cache-Status"), "hit") {
		b.Fatalf("not a hit: %v", w.h)
	}
}

// BenchmarkHitManyURLs is the hit path of make bench-traffic: 30,000 URLs
// in three codings, picked with Zipf popularity (exponent 1.1) and asked
// for with the generator's Accept-Encoding values. Compare with
// BenchmarkHit (one URL) in the same run.
func BenchmarkHitManyURLs(b *testing.B) {
	// The soft memory limit the cache would set counts the edge's memory,
	// not this benchmark's: leave the runtime's.
	b.Setenv("GOMEMLIMIT", strconv.FormatInt(debug.SetMemoryLimit(-1), 10))
	h := benchHandler(b)
	body := []byte(strings.Repeat("x", 4<<10))
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", readCC)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Surrogate-Key", "article:"+r.URL.Path)
		if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
			w.Header().Set("Content-Encoding", ae)
		}
		w.Write(body)
		return nil
	})
	const urls = 30_000
	codings := []string{"zstd", "br", "gzip, deflate", "identity", "zstd, br, gzip", "gzip"}
	for i := range urls {
		for _, ae := range []string{"zstd", "gzip", "identity"} {
			req := httptest.NewRequest("GET", "/api/v1/articles/a-slug-"+strconv.Itoa(i), nil)
			req.Header.Set("Accept-Encoding", ae)
			if err := h.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
				b.Fatal(err)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, urls-1)
	reqs := make([]*http.Request, 1<<12)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/api/v1/articles/a-slug-"+strconv.FormatUint(zipf.Uint64(), 10), nil)
		reqs[i].Header.Set("Accept-Encoding", codings[r.IntN(len(codings))])
	}
	w := &discardWriter{h: make(http.Header, 32)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clear(w.h)
		if err := h.ServeHTTP(w, reqs[i%len(reqs)], next); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if !strings.Contains(w.h.Get("Cache-Status"), "hit") {
		b.Fatalf("not a hit: %v", w.h)
	}
}

// BenchmarkGCFullCache is what a collection costs the edge with its cache
// full: 30,000 URLs in three codings with an origin's header each, as under
// make bench-traffic, where a collection runs every second or two and
// marking was the largest part of the edge's CPU after the system calls
// (docs/edge-gateway.md, "Traffic"). Each op is one full collection; the
// metrics are the process's CPU per collection and the heap objects a
// stored variant leaves for the collector to mark.
func BenchmarkGCFullCache(b *testing.B) {
	b.Setenv("GOMEMLIMIT", strconv.FormatInt(debug.SetMemoryLimit(-1), 10))
	h := provisioned(b, &Handler{Name: "InvoicewireGC", MaxBytes: 1 << 30})
	const urls = 30_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	now := time.Now()
	for i := range urls {
		target := "/2026/11/a-slug-of-an-article-" + strconv.Itoa(i) + "/"
		for c, coding := range []string{"", "gzip", "zstd"} {
			e := h.newEntry("example.com "+target+" "+coding, http.StatusOK, originHeader(i, coding), make([]byte, (2000+i%7000)>>c), now, now)
			e.uriTag = uriTag("example.com", target)
			if !h.shared.put(e, h.shared.generation()) {
				b.Fatal("not stored")
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// CPU time from the kernel: on a shared machine a collection's wall
	// time is mostly waiting for a core (and runtime/metrics' GC CPU
	// estimate counts the workers' wall time).
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	n := 0
	for b.Loop() {
		runtime.GC()
		n++
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(n), "cpu-ms/op")
	b.ReportMetric(float64(after.HeapObjects-before.HeapObjects)/(3*urls), "objects/variant")
	runtime.KeepAlive(h)
}
