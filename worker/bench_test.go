package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
)

// The webhook benchmarks of docs/architecture.md, run by make bench-webhooks against
// the real worker binary, a real Redis and a local receiver in this
// process. Each runs once (-benchtime 1x); the figures are reported as
// custom metrics.

// benchReceiver answers 204 at once and records when each delivery of each
// event arrived.
type benchReceiver struct {
	srv   *httptest.Server
	n     atomic.Int64
	mu    sync.Mutex
	times map[string][]time.Time // event id → arrival times
}

func newBenchReceiver(b *testing.B) *benchReceiver {
	br := &benchReceiver{times: map[string][]time.Time{}}
	br.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		id := r.Header.Get("webhook-id")
		br.mu.Lock()
		br.times[id] = append(br.times[id], now)
		br.mu.Unlock()
		br.n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(br.srv.Close)
	return br
}

// benchSetup starts Redis, 10 subscriptions to the receiver and one worker
// process, and waits until the worker has joined the consumer group.
func benchSetup(b *testing.B, subs int) (*harness, *benchReceiver, *exec.Cmd) {
	h := newHarness(b)
	br := newBenchReceiver(b)
	for i := range subs {
		h.subscribe(b, fmt.Sprintf("%s/s%d", br.srv.URL, i), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", events.ArticlePublished)
	}
	cmd := h.startWorkerProcess(b)
	deadline := time.Now().Add(30 * time.Second)
	for {
		gs, err := h.rdb.XInfoGroups(context.Background(), events.Stream).Result()
		if err == nil && len(gs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the worker did not join the consumer group")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return h, br, cmd
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

func publishBatch(ctx context.Context, rdb redis.UniversalClient, n int) map[string]time.Time {
	out := make(map[string]time.Time, n)
	pipe := rdb.Pipeline()
	for i := range n {
		now := time.Now()
		e, _ := events.New(events.ArticlePublished, now, map[string]any{"slug": fmt.Sprintf("bench-%d", i), "title": "A benchmark article about Peppol"})
		out[e.ID] = now
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: events.Stream, Values: e.Fields()})
	}
	pipe.Exec(ctx)
	return out
}

// BenchmarkWebhookBurst: 1,000 events × 10 subscribers at once. Reports
// deliveries per second (first event appended → last delivery received)
// and the worker process's peak memory. Goal: ≥ 2,000 deliveries/s.
func BenchmarkWebhookBurst(b *testing.B) {
	const evts, subs = 1000, 10
	h, br, cmd := benchSetup(b, subs)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	publishBatch(ctx, h.rdb, evts)
	for br.n.Load() < evts*subs {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("only %d of %d deliveries after 5 min", br.n.Load(), evts*subs)
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(evts*subs)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(peakRSS(cmd.Process.Pid)/(1<<20), "worker-peak-MiB")
	b.ReportMetric(elapsed.Seconds(), "burst-s")
}

// BenchmarkWebhookSteady: 200 events/s to 10 subscribers for 30 s. Reports
// the p50 and p99 of event creation → delivery received. Goal: p99 < 1 s.
func BenchmarkWebhookSteady(b *testing.B) {
	const rate, subs = 200, 10
	dur := 30 * time.Second
	if v := os.Getenv("IW_BENCH_STEADY"); v != "" {
		dur, _ = time.ParseDuration(v)
	}
	h, br, cmd := benchSetup(b, subs)
	ctx := context.Background()
	published := map[string]time.Time{}
	b.ResetTimer()
	tick := time.NewTicker(50 * time.Millisecond) // 10 events per tick
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		<-tick.C
		for id, at := range publishBatch(ctx, h.rdb, rate/20) {
			published[id] = at
		}
	}
	tick.Stop()
	want := int64(len(published) * subs)
	deadline := time.Now().Add(2 * time.Minute)
	for br.n.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	var lat []float64
	br.mu.Lock()
	for id, ts := range br.times {
		for _, at := range ts {
			lat = append(lat, at.Sub(published[id]).Seconds())
		}
	}
	br.mu.Unlock()
	if os.Getenv("IW_BENCH_DEBUG") != "" {
		info, _ := h.rdb.Info(ctx, "persistence").Result()
		for _, l := range strings.Split(info, "\n") {
			if strings.HasPrefix(l, "aof_rewrites") || strings.HasPrefix(l, "aof_current_size") || strings.HasPrefix(l, "rdb_saves") {
				fmt.Fprintln(os.Stderr, strings.TrimSpace(l))
			}
		}
		// p99 per second of the run, to see when latency grows.
		per := map[int][]float64{}
		var t0 time.Time
		for _, at := range published {
			if t0.IsZero() || at.Before(t0) {
				t0 = at
			}
		}
		br.mu.Lock()
		for id, ts := range br.times {
			for _, at := range ts {
				sec := int(published[id].Sub(t0).Seconds())
				per[sec] = append(per[sec], at.Sub(published[id]).Seconds())
			}
		}
		br.mu.Unlock()
		for sec := 0; sec < len(per); sec++ {
			l := per[sec]
			sort.Float64s(l)
			if len(l) > 0 {
				fmt.Fprintf(os.Stderr, "second %2d: p50 %.0f ms p99 %.0f ms\n", sec, l[len(l)/2]*1000, l[len(l)*99/100]*1000)
			}
		}
	}
	sort.Float64s(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))]
	}
	b.ReportMetric(q(0.50)*1000, "p50-ms")
	b.ReportMetric(q(0.99)*1000, "p99-ms")
	b.ReportMetric(q(1)*1000, "max-ms")
	b.ReportMetric(float64(len(lat)), "deliveries")
	b.ReportMetric(peakRSS(cmd.Process.Pid)/(1<<20), "worker-peak-MiB")
	if int64(len(lat)) < want {
		b.Errorf("%d of %d deliveries arrived", len(lat), want)
	}
}
