package ratelimitheaders

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
	"go.uber.org/zap"
)

// counterLimit is the Limit given to the ulule/limiter Redis store, which
// here keeps the shared counts: its Increment adds a batch of requests and
// sets the window's expiry atomically, and Remaining = Limit - count is read
// back as the shared total. The quota is applied by the caller.
const counterLimit = math.MaxInt64 / 4

// shards splits the clients' counters so that requests of different
// clients rarely wait on one lock.
const shards = 64

// syncWorkers bounds the Increments in flight during one sync: the calls
// waiting together make one pipeline (pipelinedScripts).
const syncWorkers = 256

// A limiter counts requests per client in fixed windows aligned on the Unix
// epoch (window n covers [n*w, (n+1)*w)), so every edge agrees on when a
// window starts without talking to the others.
//
// The decision for a request is local: a counter per client holds what this
// edge counted and what the other edges had pushed to Redis at the last
// sync. Every interval the sync loop pushes, for the clients counted since
// the previous sync only (and past their push share, below), the new counts
// with the Redis store's Increment and reads back the shared total. So no
// request waits for Redis, and all edges converge on one budget.
//
// A client is pushed only once it made quota/unpushedShare requests here in
// the window (pushAfter): most clients of a public API send a few requests
// and leave, and pushing each of them cost the edge a Redis command per
// request and an eighth of its CPU under a million new clients a minute
// (docs/edge-gateway.md, "Traffic"). A client past that share is pushed at
// every sync where it has new counts.
//
// Bound: an edge does not see requests other edges admitted since their last
// push, so a window admits at most quota + Σ(edges) rate × (interval + Redis
// round trip) — with 2 edges at 500 requests/s each for one client and a 100
// ms interval, about 100 extra requests per window — plus, for a client
// whose count stays below the push share on some edges, what those edges
// never pushed: under quota/unpushedShare each, 0.5% of the quota per edge.
//
// Memory: a client costs one 32-byte slot of its shard's clientTable (a
// 64-bit key hash and a 20-byte counter; 43 to 85 bytes a client at the
// table's load), and at most maxClients are tracked. At the cap, a new client takes the place of the
// least recently seen of a few sampled ones, whose count goes into a
// count-min sketch of the window (countSketch); a client that returns after
// being evicted starts from the sketch's estimate, never below its true
// count. So the cap neither lets anyone start afresh by flooding the table
// nor refuses newcomers (docs/decisions.md, "Rate-limit state").
//
// When Redis is unreachable each edge keeps counting locally (the counts
// wait and are pushed when Redis returns, if their window is still open);
// a request is never failed for it.
//
// Refunds: a request counted by take can be given back (giveBack, for the
// register budget, whose unit is a client created). A refund takes back
// this edge's own count only, never what the other edges pushed: from the
// counts not yet pushed when there are any, else it is noted (refunds) and
// the next sync pushes it, netted with the new counts, as one Increment
// (INCRBY takes a negative amount). So the shared total falls by exactly
// the units given back, and an edge's own net count never goes below zero.
type limiter struct {
	window   time.Duration
	interval time.Duration
	prefix   string
	perShard int                   // the cap of each shard: maxClients / shards
	rdb      redis.UniversalClient // nil: local only
	log      *zap.Logger
	now      func() time.Time
	start    time.Time // seen times count from here

	shards  [shards]shard
	evicted countSketch

	mu      sync.Mutex
	jobs    []push      // the array of the last sync's pushes, for the next
	remote  ulule.Store // created lazily: it needs Redis to load its scripts
	failing bool        // the last sync failed
	stopped chan struct{}
	cancel  context.CancelFunc
}

// unpushedShare sets how much of a quota an edge may count for a client
// before it pushes the count: 1/unpushedShare of it (pushAfter).
const unpushedShare = 200

// pushAfter is the count at which a client with quota is first pushed in a
// window: quota/unpushedShare, at least 1 (every request of a small quota).
func pushAfter(quota int64) uint32 {
	return uint32(min(max(quota/unpushedShare, 1), math.MaxUint32))
}

// counter is one client's state in one window. It is 24 bytes, and its
// slot in a clientTable 32 with the hash, as it was at 20: refunds took
// room the alignment left.
type counter struct {
	window  uint32 // the window's number (mod 2^32) these counts belong to
	pending uint32 // counted here, not yet pushed
	pushed  uint32 // counted here and pushed, net of the refunds pushed
	others  uint32 // the other edges' count at the last sync
	seen    uint32 // when last counted, seconds since the limiter started
	// refunds are units given back here (giveBack) after their count was
	// pushed; the next sync subtracts them in Redis. pending + pushed ≥
	// refunds always: an edge gives back only what it counted.
	refunds uint32
}

func (c *counter) total() int64 {
	return int64(c.pending) + int64(c.pushed) - int64(c.refunds) + int64(c.others)
}

// own is what this edge counted, net of what it gave back.
func (c *counter) own() int64 { return int64(c.pending) + int64(c.pushed) - int64(c.refunds) }

type shard struct {
	mu       sync.Mutex
	counters clientTable // by client hash
	// dirty lists the clients counted since the last sync and past their
	// push share (pushAfter), the only ones the sync pushes; spare is the
	// array of the list the last sync took, reused for the next one.
	dirty, spare []uint64
}

// decision is the outcome for one request.
type decision struct {
	allowed bool
	// window is the number (mod 2^32) of the window the request was
	// counted in: what giveBack needs to find its unit again.
	window    uint32
	remaining int64
	reset     time.Duration // until the window ends
}

// DefaultMaxClients is the cap of tracked clients when none is configured:
// about 100 MiB at the measured cost per client, within the 256 MiB the
// edge grants its limiter.
const DefaultMaxClients = 1_000_000

// limiterConfig is what a limiter is made of.
type limiterConfig struct {
	window time.Duration
	// interval is how often counts are synced with rdb; 0 never.
	interval time.Duration
	// prefix prefixes the shared counters' Redis keys.
	prefix string
	// maxClients caps the clients tracked at once; DefaultMaxClients when
	// 0 or less.
	maxClients int
	// rdb holds the shared counts; nil counts locally only.
	rdb redis.UniversalClient
	log *zap.Logger
	// now is the time source, time.Now when nil. Tests choose where in a
	// window they run rather than leave it to the wall clock.
	now func() time.Time
}

func newLimiter(cfg limiterConfig) *limiter {
	if cfg.maxClients <= 0 {
		cfg.maxClients = DefaultMaxClients
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if cfg.log == nil {
		cfg.log = zap.NewNop()
	}
	l := &limiter{
		window:   cfg.window,
		interval: cfg.interval,
		prefix:   cfg.prefix,
		perShard: max(cfg.maxClients/shards, 1),
		rdb:      cfg.rdb,
		log:      cfg.log,
		now:      cfg.now,
		stopped:  make(chan struct{}),
	}
	l.start = l.now()
	for i := range l.shards {
		l.shards[i].counters = newClientTable()
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	if cfg.rdb != nil && cfg.interval > 0 {
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

// windowOf returns the number of the window holding now and its end.
func (l *limiter) windowOf(now time.Time) (int64, time.Time) {
	n := now.UnixNano() / int64(l.window)
	return n, time.Unix(0, (n+1)*int64(l.window))
}

// hashOf names a client by a 64-bit hash, the same on every edge (the
// shared counts are keyed by it). xxhash is not keyed, but a client chooses
// its key only within its own address or token, so it cannot aim at
// another's counter.
func hashOf(client string) uint64 { return xxhash.Sum64String(client) }

// hashOfBytes is hashOf of a key made in a buffer.
func hashOfBytes(client []byte) uint64 { return xxhash.Sum64(client) }

// sharedKey is the Redis key (after the store's prefix) of a client's count
// in window n.
func sharedKey(h uint64, n int64) string {
	// One allocation: the sync loop makes a key per pushed client, 16,700
	// a second at a million new clients a minute.
	var b [32]byte
	k := strconv.AppendUint(b[:0], h, 36)
	k = append(k, ':')
	k = strconv.AppendInt(k, n, 36)
	return string(k)
}

// windowKey names client's shared counter in the window holding now, and
// returns the window's end.
func (l *limiter) windowKey(client string, now time.Time) (string, time.Time) {
	n, end := l.windowOf(now)
	return sharedKey(hashOf(client), n), end
}

// take counts one request of client and decides it against quota.
func (l *limiter) take(_ context.Context, client string, quota int64) decision {
	return l.takeHash(hashOf(client), quota)
}

// takeHash is take for the client whose key hashes to h (hashOf).
func (l *limiter) takeHash(h uint64, quota int64) decision {
	now := l.now()
	n, end := l.windowOf(now)
	w := uint32(n)
	seen := uint32(now.Sub(l.start) / time.Second)
	s := &l.shards[h%shards]

	s.mu.Lock()
	c, ok := s.counters.get(h)
	if !ok || c.window != w {
		if !ok && s.counters.len() >= l.perShard {
			l.evictOne(s, w)
		}
		c = counter{window: w, others: l.evicted.estimate(h, w)}
	}
	c.pending++
	if l.rdb != nil && (c.pushed > 0 && c.pending == 1 || c.pushed == 0 && c.pending == pushAfter(quota)) {
		s.dirty = append(s.dirty, h)
	}
	c.seen = seen
	s.counters.put(h, c)
	total := c.total()
	s.mu.Unlock()

	return decision{allowed: total <= quota, window: w, remaining: max(quota-total, 0), reset: end.Sub(now)}
}

// giveBack undoes the count of one request of the client whose key hashes
// to h, which takeHash counted in window w (its decision's window), and
// returns where the client stands now against quota. Each request taken
// may be given back once; the caller sees to that. Nothing is given back
// (ok false) once window w is over, or when the client has no count of
// this edge left in it: evicted, and counted afresh since (its evicted
// count stays in the sketch, whose estimate is never below it).
func (l *limiter) giveBack(h uint64, w uint32, quota int64) (d decision, ok bool) {
	now := l.now()
	n, end := l.windowOf(now)
	if uint32(n) != w {
		return decision{}, false
	}
	s := &l.shards[h%shards]
	s.mu.Lock()
	c, found := s.counters.get(h)
	if !found || c.window != w || c.own() <= 0 {
		s.mu.Unlock()
		return decision{}, false
	}
	if c.pending > 0 {
		// Not pushed yet: the unit never leaves this edge.
		c.pending--
	} else {
		// Pushed: the next sync subtracts it in Redis. A client with
		// nothing else to push joins the sync's list here.
		if c.refunds == 0 && l.rdb != nil {
			s.dirty = append(s.dirty, h)
		}
		c.refunds++
	}
	s.counters.put(h, c)
	total := c.total()
	s.mu.Unlock()
	return decision{allowed: total <= quota, window: w, remaining: max(quota-total, 0), reset: end.Sub(now)}, true
}

// evictSample is how many entries an eviction compares.
const evictSample = 8

// evictOne makes room in the full shard s: the first counter of a closed
// window it meets goes at once; otherwise the least recently seen of a few
// sampled from a random place, whose count is kept in the sketch. s.mu is
// held.
func (l *limiter) evictOne(s *shard, w uint32) {
	var victim uint64
	var oldest counter
	closed, i := false, 0
	s.counters.sample(evictSample, func(h uint64, c counter) bool {
		if c.window != w {
			victim, closed = h, true
			return false
		}
		if i == 0 || c.seen < oldest.seen {
			victim, oldest = h, c
		}
		i++
		return true
	})
	if !closed {
		l.evicted.add(victim, w, oldest.total())
	}
	s.counters.delete(victim)
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

// push is one client's new count on its way to Redis: add counted, sub
// given back, sent as one Increment of add - sub.
type push struct {
	hash     uint64
	window   int64
	add, sub uint32
	dropSub  bool // see maybeApplied
}

// sync pushes the new counts of the clients counted since the last sync and
// refreshes what the other edges have counted for them.
func (l *limiter) sync(ctx context.Context) {
	n, _ := l.windowOf(l.now())
	// The jobs' array is reused from one sync to the next (a sync running
	// meanwhile, as tests call them, makes its own).
	l.mu.Lock()
	jobs := l.jobs[:0]
	l.jobs = nil
	// While Redis fails, refunds wait here (holdRefunds).
	holdRefunds := l.failing
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.jobs = jobs[:0]
		l.mu.Unlock()
	}()
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		dirty := s.dirty
		s.dirty, s.spare = s.spare[:0], nil
		for _, h := range dirty {
			c, ok := s.counters.get(h)
			if !ok || c.pending == 0 && c.refunds == 0 || c.window != uint32(n) {
				continue // evicted, or its window is over (Redis lets it expire)
			}
			j := push{hash: h, window: n, add: c.pending}
			if holdRefunds {
				// Redis failed at the last sync: a push that fails again
				// may fail after reaching Redis, and a refund must not
				// then be pushed twice (maybeApplied). So only the new
				// count goes, an increment of 0 when there is none, which
				// tells when Redis is back; the refunds wait for that.
				if c.refunds > 0 {
					s.dirty = append(s.dirty, h)
				}
			} else {
				j.sub = c.refunds
				c.refunds = 0
			}
			jobs = append(jobs, j)
			// pushed stays ≥ 0: pending + pushed ≥ refunds.
			c.pushed = c.pushed + j.add - j.sub
			c.pending = 0
			s.counters.put(h, c)
		}
		s.spare = dirty[:0]
		s.mu.Unlock()
	}
	if len(jobs) == 0 {
		return
	}
	remote, err := l.remoteStore()
	if err != nil {
		l.fail(err)
		l.restore(jobs) // nothing was sent
		return
	}
	rate := ulule.Rate{Period: l.window + l.interval, Limit: counterLimit}
	var (
		wg       sync.WaitGroup
		failedMu sync.Mutex
		failed   []push
		firstErr error
	)
	// One deadline for the whole sync: its pushes travel in a few
	// pipelines, not one round trip each.
	cctx, cancel := context.WithTimeout(ctx, max(4*l.interval, 2*time.Second))
	defer cancel()
	next := make(chan push)
	for range min(syncWorkers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				rc, err := remote.Increment(cctx, sharedKey(j.hash, j.window), int64(j.add)-int64(j.sub), rate)
				if err != nil {
					if !unsent(err) {
						j.maybeApplied()
					}
					failedMu.Lock()
					failed = append(failed, j)
					if firstErr == nil {
						firstErr = err
					}
					failedMu.Unlock()
					continue
				}
				l.learn(j, counterLimit-rc.Remaining)
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		// Redis is down or slow: keep the counts for the next sync.
		l.fail(firstErr)
		l.restore(failed)
		return
	}
	syncs.WithLabelValues("ok").Inc()
	l.mu.Lock()
	recovered := l.failing
	l.failing = false
	l.mu.Unlock()
	if recovered {
		l.log.Info("rate limit sync with Redis recovered")
	}
}

// remoteStore returns the ulule Redis store, created on first use.
func (l *limiter) remoteStore() (ulule.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.remote == nil {
		st, err := redisstore.NewStoreWithOptions(&pipelinedScripts{UniversalClient: l.rdb}, ulule.StoreOptions{Prefix: l.prefix})
		if err != nil {
			return nil, err
		}
		l.remote = st
	}
	return l.remote, nil
}

// learn records the shared total Redis answered for a push.
func (l *limiter) learn(j push, total int64) {
	s := &l.shards[j.hash%shards]
	s.mu.Lock()
	if c, ok := s.counters.get(j.hash); ok && c.window == uint32(j.window) {
		c.others = uint32(min(max(total-int64(c.pushed), 0), math.MaxUint32))
		s.counters.put(j.hash, c)
	}
	s.mu.Unlock()
}

// maybeApplied marks a push whose Increment failed after it may have
// reached Redis (a timeout, a connection lost while reading the answer):
// pushed again, it would count twice. Counted twice, added requests only
// make the budget stricter, as they always have; but a refund applied
// twice would take from Redis a unit that was charged. So a push that
// gives back more than it adds keeps its refund only when it was surely
// not sent (unsent); otherwise the refund is dropped and the units count
// again, which errs on the strict side.
func (j *push) maybeApplied() {
	if j.sub > j.add {
		j.dropSub = true
	}
}

// unsent reports whether a failed Increment surely never reached Redis:
// no connection could be had (dialling failed, the pool timed out, the
// client is closed).
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, redis.ErrClosed)
}

// restore puts back counts that could not be pushed: the requests added
// are counted as not pushed again, and the refunds are noted again unless
// the push was marked dropSub (maybeApplied), in which case they count
// again.
func (l *limiter) restore(jobs []push) {
	for _, j := range jobs {
		s := &l.shards[j.hash%shards]
		s.mu.Lock()
		if c, ok := s.counters.get(j.hash); ok && c.window == uint32(j.window) {
			if c.pending == 0 && c.refunds == 0 {
				s.dirty = append(s.dirty, j.hash)
			}
			// Undo the sync's c.pushed += add - sub.
			c.pushed = c.pushed - j.add + j.sub
			c.pending += j.add
			if !j.dropSub {
				c.refunds += j.sub
			}
			s.counters.put(j.hash, c)
		}
		s.mu.Unlock()
	}
}

// fail records a failed sync. It logs once per outage, not once per
// interval.
func (l *limiter) fail(err error) {
	syncs.WithLabelValues("error").Inc()
	l.mu.Lock()
	first := !l.failing
	l.failing = true
	l.mu.Unlock()
	if first {
		l.log.Warn("rate limit sync with Redis failed; counting locally until it returns", zap.Error(err))
	}
}

// tracked is the number of clients with a counter.
func (l *limiter) tracked() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += s.counters.len()
		s.mu.Unlock()
	}
	return n
}
