package ask

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	metricsreg "github.com/invoicewire/invoicewire/internal/metrics"
)

// metrics are the engine's Prometheus series (docs/architecture.md). Labels are the
// answer's mode and status code only, never the question.
type metrics struct {
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	builds     *prometheus.CounterVec
	buildTime  prometheus.Histogram
	articles   prometheus.Gauge
	builtAtSec prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "invoicewire_ask_requests_total",
			Help: "POST /ask requests, by answer mode (json, stream) and status code.",
		}, []string{"mode", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "invoicewire_ask_request_duration_seconds",
			Help:    "Time from request to the last byte of the answer (the whole stream for a stream), by mode.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"mode"}),
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "invoicewire_ask_index_builds_total",
			Help: "Builds of the ask index from the store, by outcome (ok, error).",
		}, []string{"outcome"}),
		buildTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "invoicewire_ask_index_build_duration_seconds",
			Help:    "Time to read the articles from the store and build the ask index.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 30},
		}),
		articles: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "invoicewire_ask_index_articles",
			Help: "Articles in the current ask index.",
		}),
		builtAtSec: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "invoicewire_ask_index_built_timestamp_seconds",
			Help: "Unix time when the current ask index was swapped in.",
		}),
	}
	if err := metricsreg.Register(reg, m.requests, m.latency, m.builds, m.buildTime, m.articles, m.builtAtSec); err != nil {
		return nil, fmt.Errorf("ask: %w", err)
	}
	return m, nil
}

func (m *metrics) built(ix *Index, took time.Duration, err error) {
	if err != nil {
		m.builds.WithLabelValues("error").Inc()
		return
	}
	m.builds.WithLabelValues("ok").Inc()
	m.buildTime.Observe(took.Seconds())
	m.articles.Set(float64(ix.Len()))
	m.builtAtSec.Set(float64(time.Now().Unix()))
}

// statusWriter remembers the status code written through it. Unwrap lets
// http.ResponseController reach the server's writer to flush the stream.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (m *metrics) answered(mode string, code int, took time.Duration) {
	if code == 0 {
		code = http.StatusOK
	}
	m.requests.WithLabelValues(mode, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(mode).Observe(took.Seconds())
}
