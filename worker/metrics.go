package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	metricsreg "github.com/invoicewire/invoicewire/internal/metrics"

	"github.com/invoicewire/invoicewire/internal/events"
)

// metrics are the worker's Prometheus series. Labels are low-cardinality:
// outcomes and reasons, never a URL, subscription or client.
type metrics struct {
	attempts    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	endToEnd    prometheus.Histogram
	events      *prometheus.CounterVec
	fannedOut   prometheus.Counter
	deadLetters prometheus.Counter
	disabled    *prometheus.CounterVec
	dropped     prometheus.Counter
	deferred    prometheus.Counter
	queueDue    prometheus.Gauge
	queueLater  prometheus.Gauge
	deadLength  prometheus.Gauge
	streamLag   prometheus.Gauge
	pending     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iw_worker_deliveries_total",
			Help: "Delivery attempts by outcome: delivered (2xx), failed (any other answer, timeout, network error), refused (address not allowed at dial time).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "iw_worker_attempt_duration_seconds",
			Help:    "Duration of one delivery attempt, by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
		endToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "iw_worker_event_to_delivery_seconds",
			Help:    "Time from an event's creation to its successful delivery.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iw_worker_events_total",
			Help: "Events read from the stream: fanned_out, duplicate (already fanned out before a crash), malformed (dropped).",
		}, []string{"result"}),
		fannedOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iw_worker_fanout_deliveries_total",
			Help: "Deliveries created by fan-out.",
		}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iw_worker_dead_letters_total",
			Help: "Deliveries moved to the dead-letter stream (retries exhausted or subscription disabled).",
		}),
		disabled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iw_worker_subscriptions_disabled_total",
			Help: "Subscriptions disabled, by reason: gone (410) or failing (no success for too long).",
		}, []string{"reason"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iw_worker_deliveries_dropped_total",
			Help: "Deliveries dropped because their subscription was deleted, or their event body had expired.",
		}),
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iw_worker_deliveries_deferred_total",
			Help: "Deliveries handed back to the queue unattempted because their receiver already had IW_WORKER_PER_RECEIVER deliveries in flight from this worker; not attempts, and each is counted every time it is deferred.",
		}),
		queueDue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iw_worker_queue_due",
			Help: "Deliveries due now and not yet claimed (all workers).",
		}),
		queueLater: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iw_worker_retry_queue_depth",
			Help: "Deliveries scheduled for later: retries waiting, and deliveries leased to a worker (all workers).",
		}),
		deadLength: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iw_worker_dead_letter_length",
			Help: "Entries in the capped dead-letter stream.",
		}),
		streamLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iw_worker_stream_lag",
			Help: "Events in the stream not yet read by the consumer group.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iw_worker_stream_pending",
			Help: "Events read by a worker but not yet fanned out and acknowledged.",
		}),
	}
	cs := []prometheus.Collector{m.attempts, m.latency, m.endToEnd, m.events, m.fannedOut, m.deadLetters, m.disabled, m.dropped, m.deferred, m.queueDue, m.queueLater, m.deadLength, m.streamLag, m.pending}
	if err := metricsreg.Register(reg, cs...); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	for _, o := range []string{"delivered", "failed", "refused"} {
		m.attempts.WithLabelValues(o)
	}
	for _, r := range []string{"fanned_out", "duplicate", "malformed"} {
		m.events.WithLabelValues(r)
	}
	for _, r := range []string{"gone", "failing"} {
		m.disabled.WithLabelValues(r)
	}
	return m, nil
}

// sample refreshes the gauges that describe shared state in Redis.
func (w *Worker) sample(ctx context.Context) {
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if due, later, err := w.store.QueueDepth(sctx, w.cfg.Clock()); err == nil {
			w.metrics.queueDue.Set(float64(due))
			w.metrics.queueLater.Set(float64(later))
		}
		if n, err := w.store.DeadLetters(sctx); err == nil {
			w.metrics.deadLength.Set(float64(n))
		}
		if gs, err := w.rdb.XInfoGroups(sctx, events.Stream).Result(); err == nil {
			for _, g := range gs {
				if g.Name == Group {
					w.metrics.streamLag.Set(float64(g.Lag))
					w.metrics.pending.Set(float64(g.Pending))
				}
			}
		}
		cancel()
		if !pause(ctx, 5*time.Second) {
			return
		}
	}
}
