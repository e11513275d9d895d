package ratelimitheaders

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// headerWriter keeps nothing but a reused header map, so the benchmark
// counts the handler's own allocations.
type headerWriter struct{ h http.Header }

func (d *headerWriter) Header() http.Header         { return d.h }
func (d *headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *headerWriter) WriteHeader(int)             {}

// benchServe runs the handler (no Redis) over requests from the client
// addresses addrs, in turn.
func benchServe(b *testing.B, addrs []string) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	h := &Handler{Quota: 1 << 30}
	if err := h.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	defer h.Cleanup()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusOK)
		return nil
	})
	vars := map[string]any{}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/articles/a-slug", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	w := &headerWriter{h: make(http.Header, 16)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		vars[caddyhttp.ClientIPVarKey] = addrs[i%len(addrs)]
		i++
		clear(w.h)
		if err := h.ServeHTTP(w, r, next); err != nil {
			b.Fatal(err)
		}
	}
}

// freshAddresses are n distinct client addresses as Caddy reports them,
// half IPv4, half IPv6 in distinct /64s (make bench-traffic's clients).
func freshAddresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}).String()
		} else {
			out[i] = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 0xaa, 0xbb, 0, 0, 0, 0, 0, 1}).String()
		}
	}
	return out
}

// BenchmarkServeFreshClients is the limiter on make bench-traffic's path:
// every request from a client it has not seen (the first million).
func BenchmarkServeFreshClients(b *testing.B) { benchServe(b, freshAddresses(1<<20)) }

// BenchmarkServeOneClient is the reference: one client over and over
// (make bench-edge's path).
func BenchmarkServeOneClient(b *testing.B) { benchServe(b, []string{"192.0.2.1"}) }
