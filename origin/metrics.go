package origin

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	metricsreg "github.com/invoicewire/invoicewire/internal/metrics"
	"github.com/invoicewire/invoicewire/internal/tagcache"
)

// metrics are the origin's Prometheus series. Labels are route patterns and
// status codes only: never a path, an IP or a token.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, cache *tagcache.Cache[string, *entry]) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "invoicewire_origin_requests_total",
			Help: "Requests answered by the origin, by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "invoicewire_origin_request_duration_seconds",
			Help:    "Time to answer a request at the origin, by route pattern.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"route"}),
	}
	hits := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "invoicewire_origin_cache_hits_total",
		Help: "Requests answered from the origin's in-process response cache.",
	}, func() float64 { h, _ := cache.Stats(); return float64(h) })
	misses := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "invoicewire_origin_cache_misses_total",
		Help: "Cacheable requests the origin had to answer from Redis.",
	}, func() float64 { _, m := cache.Stats(); return float64(m) })
	if err := metricsreg.Register(reg, m.requests, m.latency, hits, misses); err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	return m, nil
}
