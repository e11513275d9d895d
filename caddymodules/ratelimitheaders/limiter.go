package ratelimitheaders

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
	"go.uber.org/zap"
)

// counterLimit is the Limit given to the limiter stores. The stores serve
// here as exact counters (Remaining = Limit - count, never clamped); the
// quota is applied by the caller, so a change of quota needs no new counts.
const counterLimit = math.MaxInt64 / 4

// A limiter counts requests per client in fixed windows aligned on the Unix
// epoch (window n covers [n*w, (n+1)*w)), so every edge agrees on when a
// window starts without talking to the others.
//
// The decision for a request is local: the ulule/limiter memory store counts
// this edge's requests, and others[key] holds the count the other edges had
// pushed to Redis at the last sync. Every interval the sync loop pushes the
// local counts accumulated since the previous sync with the Redis store's
// Increment and reads back the shared total. So no request waits for Redis,
// and all edges converge on one budget.
//
// Bound: an edge does not see requests other edges admitted since their last
// push, so a window admits at most quota + Σ(edges) rate × (interval + Redis
// round trip) — with 2 edges at 500 requests/s each for one client and a 100
// ms interval, about 100 extra requests per window.
//
// When Redis is unreachable each edge keeps counting locally (the counts
// wait and are pushed when Redis returns, if their window is still open);
// a request is never failed for it.
type limiter struct {
	window   time.Duration
	interval time.Duration
	prefix   string
	local    ulule.Store
	rdb      redis.UniversalClient // nil: local only
	log      *zap.Logger
	now      func() time.Time

	mu      sync.Mutex
	keys    map[string]*keyState // by window key
	remote  ulule.Store          // created lazily: it needs Redis to load its scripts
	failing bool                 // the last sync failed
	stopped chan struct{}
	cancel  context.CancelFunc
}

type keyState struct {
	windowEnd time.Time
	pending   int64 // counted here, not yet pushed
	pushed    int64 // pushed by this edge in this window
	others    int64 // other edges' count at the last sync
}

// decision is the outcome for one request.
type decision struct {
	allowed   bool
	remaining int64
	reset     time.Duration // until the window ends
}

// Clock is the time source of the limiters created after it is set. Only
// tests replace it (before they provision the handler), so that where in a
// window a test runs is theirs to choose rather than the wall clock's.
var Clock = time.Now

func newLimiter(window, interval time.Duration, prefix string, rdb redis.UniversalClient, log *zap.Logger) *limiter {
	l := &limiter{
		window:   window,
		interval: interval,
		prefix:   prefix,
		local:    memory.NewStoreWithOptions(ulule.StoreOptions{Prefix: prefix, CleanUpInterval: window}),
		rdb:      rdb,
		log:      log,
		now:      Clock,
		keys:     make(map[string]*keyState),
		stopped:  make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	if rdb != nil && interval > 0 {
		go l.run(ctx)
	} else {
		close(l.stopped)
	}
	return l
}

// Destruct stops the sync loop.
func (l *limiter) Destruct() error {
	l.cancel()
	<-l.stopped
	return nil
}

// windowKey names client's counter in the window holding now, and returns
// the window's end.
func (l *limiter) windowKey(client string, now time.Time) (string, time.Time) {
	n := now.UnixNano() / int64(l.window)
	end := time.Unix(0, (n+1)*int64(l.window))
	return client + ":" + strconv.FormatInt(n, 36), end
}

// take counts one request of client and decides it against quota.
func (l *limiter) take(ctx context.Context, client string, quota int64) decision {
	now := l.now()
	key, end := l.windowKey(client, now)
	lctx, _ := l.local.Increment(ctx, key, 1, ulule.Rate{Period: l.window, Limit: counterLimit})
	count := counterLimit - lctx.Remaining

	l.mu.Lock()
	ks := l.keys[key]
	if ks == nil {
		ks = &keyState{windowEnd: end}
		l.keys[key] = ks
	}
	ks.pending++
	total := count + ks.others
	l.mu.Unlock()

	d := decision{allowed: total <= quota, remaining: max(quota-total, 0), reset: end.Sub(now)}
	return d
}

func (l *limiter) run(ctx context.Context) {
	defer close(l.stopped)
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.sync(ctx)
		}
	}
}

// sync pushes the pending counts of every key of the open windows and
// refreshes what the other edges have counted.
func (l *limiter) sync(ctx context.Context) {
	now := l.now()
	type job struct {
		key   string
		delta int64
	}
	var jobs []job
	l.mu.Lock()
	for k, ks := range l.keys {
		if !now.Before(ks.windowEnd) {
			delete(l.keys, k) // window over; counts expire in Redis too
			continue
		}
		// Keys without new requests are refreshed too (Increment by 0), so
		// a client returning to this edge is judged on current counts.
		jobs = append(jobs, job{k, ks.pending})
		ks.pending = 0
	}
	remote := l.remote
	l.mu.Unlock()
	if len(jobs) == 0 {
		return
	}
	if remote == nil {
		var err error
		remote, err = redisstore.NewStoreWithOptions(l.rdb, ulule.StoreOptions{Prefix: l.prefix})
		if err != nil {
			l.fail(err, func() {
				for _, j := range jobs {
					l.restore(j.key, j.delta)
				}
			})
			return
		}
		l.mu.Lock()
		l.remote = remote
		l.mu.Unlock()
	}
	rate := ulule.Rate{Period: l.window + l.interval, Limit: counterLimit}
	failed := false
	for _, j := range jobs {
		if failed {
			l.restore(j.key, j.delta)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, max(l.interval, 500*time.Millisecond))
		rc, err := remote.Increment(cctx, j.key, j.delta, rate)
		cancel()
		if err != nil {
			// Redis is down or slow: stop this round, keep the counts.
			failed = true
			l.fail(err, func() { l.restore(j.key, j.delta) })
			continue
		}
		total := counterLimit - rc.Remaining
		l.mu.Lock()
		if ks := l.keys[j.key]; ks != nil {
			ks.pushed += j.delta
			ks.others = max(total-ks.pushed, 0)
		}
		l.mu.Unlock()
	}
	if !failed {
		syncs.WithLabelValues("ok").Inc()
		l.mu.Lock()
		recovered := l.failing
		l.failing = false
		l.mu.Unlock()
		if recovered {
			l.log.Info("rate limit sync with Redis recovered")
		}
	}
}

// restore puts back counts that could not be pushed.
func (l *limiter) restore(key string, delta int64) {
	l.mu.Lock()
	if ks := l.keys[key]; ks != nil {
		ks.pending += delta
	}
	l.mu.Unlock()
}

// fail records a failed sync. It logs once per outage, not once per
// interval.
func (l *limiter) fail(err error, undo func()) {
	undo()
	syncs.WithLabelValues("error").Inc()
	l.mu.Lock()
	first := !l.failing
	l.failing = true
	l.mu.Unlock()
	if first {
		l.log.Warn("rate limit sync with Redis failed; counting locally until it returns", zap.Error(err))
	}
}
