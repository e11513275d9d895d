package edgecache

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// discardWriter is a ResponseWriter that keeps nothing but a reused
// header map, so the benchmark counts the handler's own allocations.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkHit measures a cache hit of a 16 KB body in the module alone.
func BenchmarkHit(b *testing.B) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	h := &Handler{Name: "InvoicewireBench"}
	if err := h.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	defer h.Cleanup()
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
