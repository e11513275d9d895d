package origin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// The origin's speed goal (issue 2, docs/architecture.md): a response served from the
// ristretto cache at ≥ 0.9× the rate of a bare net/http handler writing the
// same bytes. Both are measured in the same run, over loopback HTTP with
// keep-alive connections, and reported as a ratio:
//
//	go test -run '^$' -bench CacheHit -benchmem ./origin/
//
// The "handler" variants call ServeHTTP directly, without the network, to
// show the allocations a hit costs.

var benchPaths = []struct{ name, path string }{
	{"list", "/api/v1/articles?limit=25"},
	{"article", "/api/v1/articles/" + contenttest.Article(3).Slug},
}

func BenchmarkCacheHit(b *testing.B) {
	st := origintest.New(b, 100)
	for _, bp := range benchPaths {
		body := do(b, st.Server.URL, "GET", bp.path, nil).body // fills the cache
		bare := httptest.NewServer(bareHandler(body))
		b.Cleanup(bare.Close)

		// testing.Benchmark cannot nest inside a running benchmark (it
		// takes the same global lock), so each side records its own
		// ns/op and a third sub-benchmark reports the ratio.
		// With -count N each side runs N times; the ratio is of the medians.
		var originNs, bareNs []float64
		b.Run(bp.name+"/origin", func(b *testing.B) { originNs = append(originNs, loopback(b, st.Server.URL+bp.path)) })
		b.Run(bp.name+"/bare", func(b *testing.B) { bareNs = append(bareNs, loopback(b, bare.URL+bp.path)) })
		b.Run(bp.name+"/ratio", func(b *testing.B) {
			b.ReportMetric(median(bareNs)/median(originNs), "origin-rate/bare-rate")
			b.ReportMetric(float64(len(body)), "body-bytes")
		})
		b.Run(bp.name+"/handler", func(b *testing.B) {
			req := httptest.NewRequest("GET", bp.path, nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				st.Origin.ServeHTTP(w, req)
			}
			if w.status != 200 {
				b.Fatalf("status %d", w.status)
			}
		})
		b.Run(bp.name+"/bare-handler", func(b *testing.B) {
			req := httptest.NewRequest("GET", bp.path, nil)
			w := &discardWriter{h: http.Header{}}
			h := bareHandler(body)
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}

// bareHandler is the reference: the least a Go server can do to send body.
func bareHandler(body []byte) http.Handler {
	n := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", n)
		w.Write(body)
	})
}

// loopback drives url with parallel keep-alive clients and returns ns/op.
func loopback(b *testing.B, url string) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(s int)           { w.status = s }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
