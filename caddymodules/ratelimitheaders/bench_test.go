package ratelimitheaders

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/internal/redistest"
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
	// The edge's GOGC (cmd/edge): the collector's pace then depends on the
	// limiter's heap, not mostly on this benchmark's millions of address
	// strings, which every cycle scans.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
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
	cpu0 := processCPU()
	for b.Loop() {
		vars[caddyhttp.ClientIPVarKey] = addrs[i%len(addrs)]
		i++
		clear(w.h)
		if err := h.ServeHTTP(w, r, next); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time, not only wall time: on a shared machine the wall time of
	// one op is mostly waiting for a core.
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/1000/float64(i), "cpu-µs/op")
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
// every request from a client it has not seen (the first four million;
// beyond the first million, each takes the place of another).
func BenchmarkServeFreshClients(b *testing.B) { benchServe(b, freshAddresses(1<<22)) }

// BenchmarkServeOneClient is the reference: one client over and over
// (make bench-edge's path).
func BenchmarkServeOneClient(b *testing.B) { benchServe(b, []string{"192.0.2.1"}) }

// BenchmarkSyncFreshClients is the limiter's Redis sync at make
// bench-traffic's rate of new clients: each op counts a new client and,
// every 1,000 of them, the sync pushes their counts to a real Redis. The
// cpu-µs/client metric is this process's CPU (the edge's share; Redis's
// own is not in it); compare with BenchmarkTakeFreshClients in the same run.
func BenchmarkSyncFreshClients(b *testing.B) {
	srv := redistest.New(b)
	l := newLimiter(limiterConfig{window: time.Hour, prefix: "iw:ratelimit:bench", rdb: srv.Client(), log: zap.NewNop()})
	defer l.Destruct()
	benchTake(b, l, true)
}

// BenchmarkTakeFreshClients is BenchmarkSyncFreshClients without Redis.
func BenchmarkTakeFreshClients(b *testing.B) {
	l := newLimiter(limiterConfig{window: time.Hour, prefix: "iw:ratelimit:bench", log: zap.NewNop()})
	defer l.Destruct()
	benchTake(b, l, false)
}

func benchTake(b *testing.B, l *limiter, sync bool) {
	ctx := context.Background()
	keys := make([]string, 1<<22)
	for i := range keys {
		keys[i] = clientKey(i)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		l.take(ctx, keys[i%len(keys)], 1000)
		if i++; sync && i%1000 == 0 {
			l.sync(ctx)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/1000/float64(i), "cpu-µs/client")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
