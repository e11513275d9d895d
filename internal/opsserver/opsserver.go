// Package opsserver is the private listener the origin and the worker serve
// to operators (docs/architecture.md): GET /metrics, the Prometheus exposition of the
// process's registry, GET /healthz, the readiness probe, and, when it listens
// on a loopback address only, the Go runtime's profiles under /debug/pprof/
// (heap, CPU, goroutines), which is how the origin's memory at archive scale
// is examined (docs/scale.md). It is never reachable through the edge.
//
// Redis is probed in the background while the listener serves, and the last
// result is exported as invoicewire_redis_up: a process whose Redis is gone
// is alive but cannot do its work, and Prometheus should say so even when no
// client traffic would surface the errors. A scrape never waits for Redis,
// because Kubernetes' readiness probe reads /metrics (deploy/k8s) and must
// not fail, and so empty the Service, while Redis is away.
package opsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// PingTimeout bounds one Redis probe, so neither the background probe nor
// /healthz hangs on a Redis that accepts connections but does not answer.
const PingTimeout = time.Second

// ProbeInterval is how often Redis is probed for invoicewire_redis_up by
// default: well under Prometheus's usual 15 s scrape interval, so every
// scrape sees a fresh result.
const ProbeInterval = 5 * time.Second

// Option adjusts a Server built by New.
type Option func(*Server)

// WithProbeInterval probes Redis every d instead of every ProbeInterval
// (tests shorten it to watch the gauge follow an outage).
func WithProbeInterval(d time.Duration) Option {
	return func(s *Server) { s.probeInterval = d }
}

// Server is a process's operator listener.
type Server struct {
	// Registry holds the process's collectors: the Go runtime's, the
	// process's, and the Redis probe; the process registers its own on it.
	Registry *prometheus.Registry

	http          *http.Server
	redis         redis.UniversalClient
	probe         *redisCollector
	probeInterval time.Duration
	// serving ends when Shutdown is called; it stops the background probe.
	serving context.Context
	stop    context.CancelFunc
}

// New builds the listener for addr over the process's Redis client.
func New(addr string, rdb redis.UniversalClient, options ...Option) *Server {
	s := &Server{Registry: prometheus.NewRegistry(), redis: rdb, probe: &redisCollector{}, probeInterval: ProbeInterval}
	for _, o := range options {
		o(s)
	}
	s.serving, s.stop = context.WithCancel(context.Background())
	s.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.probe,
	)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", s.healthz)
	if loopback(addr) {
		// The profiles are registered on this private mux, not on
		// http.DefaultServeMux, so no other listener of the process serves
		// them; and only on a loopback listener, since a CPU profile or a
		// trace costs the process while it runs and the listener on a pod
		// address (deploy/k8s) is open to the cluster's network.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	s.http = &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return s
}

// loopback reports whether addr (host:port) listens on a loopback address
// only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ListenAndServe probes Redis and serves until Shutdown; it returns nil
// after a shutdown.
func (s *Server) ListenAndServe() error {
	go s.probeRedis(s.serving)
	defer s.stop()
	if err := s.http.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("operator listener on %s: %w", s.http.Addr, err)
	}
	return nil
}

// Shutdown stops the listener, waiting for scrapes in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	return s.http.Shutdown(ctx)
}

// probeRedis records a probe at once and then every probe interval.
func (s *Server) probeRedis(ctx context.Context) {
	t := time.NewTicker(s.probeInterval)
	defer t.Stop()
	for {
		start := time.Now()
		err := s.pingRedis(ctx)
		if ctx.Err() != nil {
			return
		}
		s.probe.record(err == nil, time.Since(start))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// healthz answers 200 while Redis answers, 503 otherwise. It is the startup
// probe of origin and worker in Kubernetes: a new pod waits for Redis
// (docs/operations.md, "Probes").
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pingRedis(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("redis unreachable\n"))
		return
	}
	w.Write([]byte("ok\n"))
}

// pingRedis sends PING to the server, or to every master of a Redis Cluster:
// one unreachable master leaves a third of the keys unavailable, which is
// the process failing as surely as a lost single server.
func (s *Server) pingRedis(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	if cc, ok := s.redis.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
	}
	return s.redis.Ping(ctx).Err()
}

// redisCollector exports the last background probe of Redis.
type redisCollector struct {
	mu     sync.Mutex
	probed bool
	up     bool
	took   time.Duration
}

func (c *redisCollector) record(up bool, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probed, c.up, c.took = true, up, took
}

var (
	redisUpDesc = prometheus.NewDesc("invoicewire_redis_up",
		"1 when this process's Redis (every master, for a Cluster) answered the last PING, probed every 5 s with a 1 s timeout; else 0.", nil, nil)
	redisPingDesc = prometheus.NewDesc("invoicewire_redis_ping_seconds",
		"Time the last PING of this process's Redis took (up to the 1 s timeout).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *redisCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- redisUpDesc
	ch <- redisPingDesc
}

// Collect implements prometheus.Collector. Before the first probe nothing
// is exported: an absent series is not a false 0 or 1.
func (c *redisCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	probed, up, took := c.probed, c.up, c.took
	c.mu.Unlock()
	if !probed {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(redisUpDesc, prometheus.GaugeValue, v)
	ch <- prometheus.MustNewConstMetric(redisPingDesc, prometheus.GaugeValue, took.Seconds())
}

// Interface guard.
var _ prometheus.Collector = (*redisCollector)(nil)
