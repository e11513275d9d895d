package opsserver_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/opsserver"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// serve starts the operator listener over rdb on a free port of 127.0.0.1.
func serve(t *testing.T, rdb redis.UniversalClient, options ...opsserver.Option) string {
	t.Helper()
	return serveOn(t, "127.0.0.1", rdb, options...)
}

// serveOn starts the operator listener over rdb on a free port of host and
// returns its address through 127.0.0.1.
func serveOn(t *testing.T, host string, rdb redis.UniversalClient, options ...opsserver.Option) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := opsserver.New(addr, rdb, options...)
	errc := make(chan error, 1)
	go func() { errc <- s.ListenAndServe() }()
	t.Cleanup(func() {
		s.Shutdown(t.Context())
		if err := <-errc; err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	})
	_, port, _ := net.SplitHostPort(addr)
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(base + "/metrics"); err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatal("operator listener did not start")
		}
	}
}

// gauge parses /metrics with Prometheus's own text parser and returns the
// value of the unlabelled gauge name, if exported.
func gauge(t *testing.T, base, name string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	f, ok := families[name]
	if !ok {
		return 0, false
	}
	if len(f.GetMetric()) != 1 {
		t.Fatalf("/metrics has %d %s series, want one", len(f.GetMetric()), name)
	}
	return f.GetMetric()[0].GetGauge().GetValue(), true
}

// waitGauge waits for the background probe to report want.
func waitGauge(t *testing.T, base, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, ok := gauge(t, base, name)
		if ok && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v (exported: %v), want %v", name, got, ok, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func healthz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestRedisProbe checks that both probes follow Redis: up while every node
// answers, down as soon as one does not, and up again when it returns,
// without restarting the process.
func TestRedisProbe(t *testing.T) {
	tests := []struct {
		desc  string
		start func(t *testing.T) (rdb redis.UniversalClient, down, up func())
	}{
		{
			desc: "single server",
			start: func(t *testing.T) (redis.UniversalClient, func(), func()) {
				s := redistest.Start(t)
				return s.Client(), s.Stop, func() { s.Restart(false) }
			},
		},
		{
			desc: "cluster, one master of three lost",
			start: func(t *testing.T) (redis.UniversalClient, func(), func()) {
				c := redistest.StartCluster(t)
				n := c.Nodes[1]
				return c.Client(), n.Stop, func() { n.Restart(false) }
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rdb, down, up := tc.start(t)
			base := serve(t, rdb, opsserver.WithProbeInterval(50*time.Millisecond))

			waitGauge(t, base, "invoicewire_redis_up", 1)
			if code, body := healthz(t, base); code != http.StatusOK || body != "ok\n" {
				t.Errorf("with Redis up: /healthz = %d %q, want 200 ok", code, body)
			}

			down()
			waitGauge(t, base, "invoicewire_redis_up", 0)
			if got, _ := gauge(t, base, "invoicewire_redis_ping_seconds"); got > 2*opsserver.PingTimeout.Seconds() {
				t.Errorf("with Redis down: the probe took %vs, beyond its timeout", got)
			}
			if code, _ := healthz(t, base); code != http.StatusServiceUnavailable {
				t.Errorf("with Redis down: /healthz = %d, want 503", code)
			}

			// The client reconnects on its own, without a restart.
			up()
			waitGauge(t, base, "invoicewire_redis_up", 1)
			if code, _ := healthz(t, base); code != http.StatusOK {
				t.Errorf("after Redis returned: /healthz = %d, want 200", code)
			}
		})
	}
}

// TestHeapProfile reads the heap profile an operator takes of a running
// process (docs/scale.md): a gzip-compressed protobuf, as go tool pprof reads;
// a listener on every address serves none.
func TestHeapProfile(t *testing.T) {
	rs := redistest.New(t)
	if resp, err := http.Get(serveOn(t, "0.0.0.0", rs.Client()) + "/debug/pprof/heap"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a listener on every address served its profiles: %d", resp.StatusCode)
	}
	base := serve(t, rs.Client())
	resp, err := http.Get(base + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/pprof/heap: %d %s", resp.StatusCode, body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("heap profile is not gzip: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Fatalf("heap profile: %d bytes, %v", len(raw), err)
	}
}

// TestHealthzFrozenRedis checks /healthz against a Redis that accepts
// connections but does not answer (a SIGSTOPped redis-server), through the
// client the processes build: it answers 503 within its 1 s probe timeout
// (docs/operations.md, "Probes"), not after go-redis's own read timeouts.
func TestHealthzFrozenRedis(t *testing.T) {
	s := redistest.Start(t)
	rdb, err := store.NewClient(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	base := serve(t, rdb, opsserver.WithProbeInterval(time.Hour))
	if code, _ := healthz(t, base); code != http.StatusOK {
		t.Fatalf("with Redis up: /healthz = %d, want 200", code)
	}

	info, err := s.Client().Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatal("INFO server gave no process_id")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })

	start := time.Now()
	code, body := healthz(t, base)
	took := time.Since(start)
	if code != http.StatusServiceUnavailable || body != "redis unreachable\n" {
		t.Errorf("with Redis frozen: /healthz = %d %q, want 503 redis unreachable", code, body)
	}
	if limit := opsserver.PingTimeout + 500*time.Millisecond; took > limit {
		t.Errorf("with Redis frozen: /healthz answered after %v, want within %v", took, limit)
	}
}
