// Package worker delivers Invoicewire's content events to webhook
// subscribers (docs/decisions.md, delivery).
//
// Two stages, both crash-safe:
//
//  1. Fan-out. A consumer group on the events stream (iw:{content}:events)
//     reads each event and turns it, in one idempotent Lua script, into one
//     delivery job per subscription to its kind that was active when the
//     event was published, however late it is read; then the entry is
//     acknowledged and deleted. An event a crashed worker had read but not
//     acknowledged is claimed by another with XAUTOCLAIM after ClaimIdle, and
//     fanning it out again finds the jobs already made.
//  2. Delivery. Jobs wait in a sorted set by due time. A worker leases a
//     batch by moving their scores to now+Lease in one script, delivers them,
//     and records each outcome with the lease as a fencing token. A worker
//     killed mid-delivery simply lets its leases run out, and the jobs come
//     due again for any worker; the event id stays the webhook-id, so
//     receivers can drop the duplicate.
//
// Every time the worker reasons about (due times, leases, the auto-disable
// window) comes from an injectable clock, and the retry schedule is
// configurable, so tests run the whole policy in seconds.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// Group is the consumer group of the events stream.
const Group = "iw-worker"

// Config configures a worker. Zero values take the defaults of docs/decisions.md (delivery).
type Config struct {
	// SiteRoot is {site_root}: the Signature-Agent and User-Agent name it.
	SiteRoot string
	// Key signs deliveries (RFC 9421).
	Key *signing.Key
	// Policy decides which receiver addresses may be dialled.
	Policy netguard.Policy
	// Schedule is the delay before each retry (config.DefaultRetrySchedule).
	Schedule []time.Duration
	// Jitter spreads each retry by ± this fraction of its delay (0.1).
	// Negative turns it off.
	Jitter float64
	// ThrottleFloor is the least a retry waits after a 429 or a timeout
	// (60 s; docs/decisions.md, "Retries"). Negative turns it off.
	ThrottleFloor time.Duration
	// Timeout bounds one attempt (10 s).
	Timeout time.Duration
	// Lease is how long a claimed delivery is invisible to other workers;
	// it must exceed Timeout (30 s).
	Lease time.Duration
	// ClaimIdle is how long an event may stay unacknowledged before
	// another worker claims it (60 s).
	ClaimIdle time.Duration
	// Concurrency bounds deliveries in flight (64).
	Concurrency int
	// PerReceiver bounds the deliveries in flight to one receiver (a
	// subscription URL's host:port, whatever subscriptions share it), so a
	// receiver that holds every request for the whole Timeout can take
	// only that many of the Concurrency slots (8; docs/decisions.md,
	// "Per-receiver bound"). It is per worker process.
	PerReceiver int
	// DisableAfter disables a subscription failing this long (72 h).
	DisableAfter time.Duration
	// DeadLetterMax caps the dead-letter stream (10000).
	DeadLetterMax int64
	// Poll is how often an idle worker looks for due deliveries (100 ms).
	Poll time.Duration
	// Clock is the scheduling clock; time.Now when nil.
	Clock func() time.Time
	// Consumer names this worker in the consumer group; host-pid-random
	// when empty.
	Consumer string
	// Registry receives the metrics; nil means a private registry.
	Registry prometheus.Registerer
	Log      *slog.Logger
}

func (c *Config) defaults() {
	if c.Schedule == nil {
		c.Schedule = config.DefaultRetrySchedule
	}
	if c.Jitter == 0 {
		c.Jitter = 0.1
	}
	if c.ThrottleFloor == 0 {
		c.ThrottleFloor = 60 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Lease <= c.Timeout {
		c.Lease = c.Timeout + 5*time.Second
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = 60 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.PerReceiver <= 0 {
		c.PerReceiver = 8
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = 72 * time.Hour
	}
	if c.DeadLetterMax <= 0 {
		c.DeadLetterMax = 10000
	}
	if c.Poll <= 0 {
		c.Poll = 100 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Consumer == "" {
		host, _ := os.Hostname()
		c.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), events.NewID("", time.Now())[20:])
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// Worker consumes events and delivers them.
type Worker struct {
	cfg     Config
	rdb     redis.UniversalClient
	store   *webhook.Store
	clients clients
	metrics *metrics
	log     *slog.Logger

	wake     chan struct{}
	slots    chan struct{}
	finishes chan finishReq
	inflight sync.WaitGroup
	bodies   bodyCache

	// receivers holds the per-receiver bound (docs/decisions.md,
	// "Per-receiver bound").
	receivers *receivers
}

// New builds a worker on rdb.
func New(cfg Config, rdb redis.UniversalClient) (*Worker, error) {
	if cfg.Key == nil {
		return nil, errors.New("worker: a signing key is required")
	}
	cfg.defaults()
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Worker{
		cfg: cfg, rdb: rdb, store: webhook.NewStore(rdb), clients: newClients(cfg.Policy, cfg.Timeout),
		metrics: m, log: cfg.Log.With("consumer", cfg.Consumer),
		wake: make(chan struct{}, 1), slots: make(chan struct{}, cfg.Concurrency), finishes: make(chan finishReq, cfg.Concurrency),
		bodies:    bodyCache{m: map[string][]byte{}},
		receivers: newReceivers(cfg.PerReceiver, cfg.Concurrency, cfg.Timeout),
	}, nil
}

// Run works until ctx ends, then stops taking work and waits up to grace
// for deliveries in flight; those still running after it are cancelled and
// handed back to the queue for another worker. It has no error to return:
// what fails while it works (Redis, a receiver) is logged and retried, and
// a delivery left unfinished goes back to the queue.
func (w *Worker) Run(ctx context.Context, grace time.Duration) {
	hard, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	finisherDone := make(chan struct{})
	go w.finisher(finisherDone)
	defer func() { close(w.finishes); <-finisherDone }()
	var loops sync.WaitGroup
	for _, loop := range []func(context.Context){w.consume, w.reclaim, w.sample} {
		loops.Add(1)
		go func() { defer loops.Done(); loop(ctx) }()
	}
	w.deliverLoop(ctx, hard)
	loops.Wait()

	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		w.log.Warn("worker: grace period over; handing back deliveries in flight")
		abort()
		<-done
	}
}

// ensureGroup creates the consumer group, reading the stream from its
// start so events published before the first worker started are delivered.
func (w *Worker) ensureGroup(ctx context.Context) error {
	err := w.rdb.XGroupCreateMkStream(ctx, events.Stream, Group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("worker: creating the consumer group: %w", err)
	}
	return nil
}

// pause waits d or until ctx ends; it reports whether to go on.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// consume reads new events of the stream through the consumer group.
func (w *Worker) consume(ctx context.Context) {
	ready := false
	for ctx.Err() == nil {
		if !ready {
			if err := w.ensureGroup(ctx); err != nil {
				w.log.Error("worker: events stream unavailable", "err", err)
				pause(ctx, time.Second)
				continue
			}
			ready = true
		}
		res, err := w.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: Group, Consumer: w.cfg.Consumer, Streams: []string{events.Stream, ">"},
			Count: 100, Block: time.Second,
		}).Result()
		if errors.Is(err, redis.Nil) || ctx.Err() != nil {
			continue
		}
		if err != nil {
			if redis.HasErrorPrefix(err, "NOGROUP") {
				// Redis lost the group (a restart without persistence).
				ready = false
				continue
			}
			w.log.Error("worker: reading events", "err", err)
			pause(ctx, time.Second)
			continue
		}
		for _, s := range res {
			w.fanOut(ctx, s.Messages)
		}
	}
}

// reclaim takes over events that another consumer read but never
// acknowledged (it crashed), and removes consumers long gone.
func (w *Worker) reclaim(ctx context.Context) {
	every := w.cfg.ClaimIdle / 2
	for pause(ctx, every) {
		start := "0-0"
		for ctx.Err() == nil {
			msgs, next, err := w.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
				Stream: events.Stream, Group: Group, Consumer: w.cfg.Consumer,
				MinIdle: w.cfg.ClaimIdle, Start: start, Count: 100,
			}).Result()
			if err != nil {
				if ctx.Err() == nil && !redis.HasErrorPrefix(err, "NOGROUP") {
					w.log.Error("worker: claiming abandoned events", "err", err)
				}
				break
			}
			if len(msgs) > 0 {
				w.log.Info("worker: claimed events of a stalled consumer", "count", len(msgs))
				w.fanOut(ctx, msgs)
			}
			if next == "0-0" || next == "" {
				break
			}
			start = next
		}
		w.pruneConsumers(ctx)
	}
}

// pruneConsumers deletes consumers with nothing pending that have been
// idle for a long time: each restart adds a consumer name.
func (w *Worker) pruneConsumers(ctx context.Context) {
	cs, err := w.rdb.XInfoConsumers(ctx, events.Stream, Group).Result()
	if err != nil {
		return
	}
	for _, c := range cs {
		if c.Name != w.cfg.Consumer && c.Pending == 0 && c.Idle > time.Hour {
			w.rdb.XGroupDelConsumer(ctx, events.Stream, Group, c.Name)
		}
	}
}

// fanOut queues one delivery per subscription active when it was published
// (publishedAt) for each event, then acknowledges and deletes the entries.
// The stream then holds only work not yet fanned out.
func (w *Worker) fanOut(ctx context.Context, msgs []redis.XMessage) {
	now := w.cfg.Clock()
	var done []string
	for _, m := range msgs {
		e, err := events.FromFields(m.Values)
		if err != nil {
			// A malformed entry can never be delivered; drop it loudly
			// rather than block the group on it forever.
			w.log.Error("worker: dropping a malformed event", "entry", m.ID, "err", err)
			w.metrics.events.WithLabelValues("malformed").Inc()
			done = append(done, m.ID)
			continue
		}
		subs, err := w.store.Active(ctx, e.Type, publishedAt(m.ID, e))
		if err != nil {
			w.log.Error("worker: fan-out failed; the event stays pending", "event", e.ID, "err", err)
			continue
		}
		body, err := webhook.Envelope(e)
		if err != nil {
			w.log.Error("worker: encoding an event", "event", e.ID, "err", err)
			continue
		}
		n := 0
		if len(subs) > 0 {
			n, err = w.store.FanOut(ctx, e, body, subs, now)
			if err != nil {
				w.log.Error("worker: fan-out failed; the event stays pending", "event", e.ID, "err", err)
				continue
			}
		}
		if n < 0 {
			w.metrics.events.WithLabelValues("duplicate").Inc()
		} else {
			w.metrics.events.WithLabelValues("fanned_out").Inc()
			w.metrics.fannedOut.Add(float64(n))
		}
		done = append(done, m.ID)
	}
	if len(done) == 0 {
		return
	}
	pipe := w.rdb.Pipeline()
	pipe.XAck(ctx, events.Stream, Group, done...)
	pipe.XDel(ctx, events.Stream, done...)
	if _, err := pipe.Exec(ctx); err != nil {
		// The events stay pending and are fanned out again later, which
		// finds the jobs already made.
		w.log.Error("worker: acknowledging events", "err", err)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// publishedAt is when an event was published: the time of its stream entry
// id, which the {content} node's clock gave it in the script that applied
// the change (XADD *), so the fan-out goes to the subscriptions active
// then, however long the event waited (webhook.Store.Active). The event's
// created_at is not that moment: the publishing process's clock made it
// before the change was applied, and a newsletter's is its sent_at,
// truncated to the second. created_at stands in only for an entry id that
// is not a time, which the stream never gives.
func publishedAt(entryID string, e events.Event) time.Time {
	ms, _, _ := strings.Cut(entryID, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return e.CreatedAt
	}
	return time.UnixMilli(n)
}

// deliverLoop leases due deliveries while there are free slots and runs
// each in its own goroutine.
func (w *Worker) deliverLoop(ctx, hard context.Context) {
	for ctx.Err() == nil {
		// Wait for at least one free slot.
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		free := 1 + w.cfg.Concurrency - len(w.slots)
		if free > 100 {
			free = 100
		}
		now := w.cfg.Clock()
		jobs, err := w.store.Claim(ctx, now, w.cfg.Lease, free)
		if err != nil {
			<-w.slots
			if ctx.Err() == nil {
				w.log.Error("worker: claiming deliveries", "err", err)
				pause(ctx, time.Second)
			}
			continue
		}
		if len(jobs) == 0 {
			<-w.slots
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			case <-time.After(w.cfg.Poll):
			}
			continue
		}
		subs, bodies, err := w.load(ctx, jobs)
		if err != nil {
			<-w.slots
			w.log.Error("worker: loading claimed deliveries; they come due again after their lease", "err", err)
			pause(ctx, time.Second)
			continue
		}
		// A delivery whose receiver is at its bound is handed back
		// instead of taking a slot (docs/decisions.md, "Per-receiver
		// bound"); the slot taken above goes to the first one launched.
		var deferred []*webhook.Job
		var until []time.Time
		launched := 0
		for _, j := range jobs {
			sub, body := subs[j.SubID], bodies[j.EventID]
			key, started := "", time.Time{}
			// Only a delivery that will be sent counts: one of a deleted
			// or disabled subscription, or with its body expired, is
			// settled without a connection.
			if sub != nil && sub.Status == webhook.StatusActive && body != nil {
				var ok bool
				key = receiverKey(sub.URL)
				if started, ok = w.receivers.acquire(key); !ok {
					deferred = append(deferred, j)
					until = append(until, w.receivers.deferUntil(key, now))
					continue
				}
			}
			if launched > 0 {
				w.slots <- struct{}{} // free counted them
			}
			launched++
			w.inflight.Add(1)
			go func() {
				defer w.inflight.Done()
				defer func() { <-w.slots }()
				w.deliver(hard, j, sub, body)
				if key != "" {
					w.receivers.release(key, started)
				}
			}()
		}
		if launched == 0 {
			<-w.slots
		}
		if len(deferred) > 0 {
			w.deferJobs(ctx, deferred, until, now)
		}
	}
}

// deferJobs hands back deliveries whose receiver is at its bound, each due
// again at its until. One that cannot be handed back (Redis unreachable)
// comes due again when its lease runs out, as after a crash.
func (w *Worker) deferJobs(ctx context.Context, jobs []*webhook.Job, until []time.Time, now time.Time) {
	w.metrics.deferred.Add(float64(len(jobs)))
	// Not cut short by shutdown: a delivery handed back now is due again
	// in a moment rather than after its lease.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i, err := range w.store.Defer(dctx, jobs, until, now) {
		if err != nil {
			w.log.Error("worker: deferring a delivery to a busy receiver; it comes due again after its lease", "delivery", jobs[i].ID, "err", err)
		}
	}
}

// load fetches the subscriptions and bodies of claimed jobs.
func (w *Worker) load(ctx context.Context, jobs []*webhook.Job) (map[string]*webhook.Subscription, map[string][]byte, error) {
	subIDs := map[string]bool{}
	var ids []string
	bodies := map[string][]byte{}
	var missing []string
	for _, j := range jobs {
		if !subIDs[j.SubID] {
			subIDs[j.SubID] = true
			ids = append(ids, j.SubID)
		}
		if _, ok := bodies[j.EventID]; ok {
			continue
		}
		if b, ok := w.bodies.get(j.EventID); ok {
			bodies[j.EventID] = b
		} else {
			bodies[j.EventID] = nil
			missing = append(missing, j.EventID)
		}
	}
	subs, err := w.store.Subscriptions(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	got, err := w.store.Bodies(ctx, missing)
	if err != nil {
		return nil, nil, err
	}
	for id, b := range got {
		bodies[id] = b
		w.bodies.put(id, b)
	}
	return subs, bodies, nil
}

// deliver makes one attempt of j and records its outcome.
func (w *Worker) deliver(ctx context.Context, j *webhook.Job, sub *webhook.Subscription, body []byte) {
	finish := func(o webhook.Outcome) webhook.FinishResult {
		done := make(chan finishDone, 1)
		w.finishes <- finishReq{webhook.Finished{Job: j, Sub: sub, Outcome: o, Now: w.cfg.Clock()}, done}
		d := <-done
		if d.err != nil {
			w.log.Error("worker: recording a delivery; it comes due again after its lease", "delivery", j.ID, "err", d.err)
		}
		return d.res
	}
	if sub == nil {
		// The owner deleted the subscription and so asked for its
		// deliveries to stop: nothing is kept.
		w.log.Info("worker: dropping a delivery of a deleted subscription", "delivery", j.ID, "subscription", j.SubID, "event", j.EventID)
		w.metrics.dropped.Inc()
		finish(webhook.Outcome{Mode: webhook.FinishDrop})
		return
	}
	if sub.Status != webhook.StatusActive {
		// Disabled by a 410 or the failing rule on another delivery, or by
		// an operator (iwctl subscriptions disable): this one was not
		// refused by anyone, so it is kept as a dead letter for an operator
		// to replay rather than lost, and nothing is sent to the receiver
		// (docs/operations.md, dead letters).
		w.log.Warn("worker: dead-lettering a delivery of a disabled subscription", "delivery", j.ID, "subscription", sub.ID, "event", j.EventID, "reason", sub.DisabledReason, "attempts", j.Attempts)
		w.metrics.deadLetters.Inc()
		// The dead letter keeps how the last attempt failed, if one was
		// made: that is what an operator replaying it needs to know.
		o := webhook.Outcome{Mode: webhook.FinishShelve, Reason: sub.DisabledReason, LastStatus: j.LastStatus, LastError: j.LastError}
		switch {
		case j.Attempts == 0:
			o.LastError = "not attempted: the subscription had been disabled"
		case o.LastError == "":
			// A job retried before the last error was kept with it.
			o.LastError = "not attempted again: the subscription had been disabled"
		}
		finish(o)
		return
	}
	if body == nil {
		w.log.Error("worker: a delivery's event body has expired; dropping it", "delivery", j.ID, "event", j.EventID)
		w.metrics.dropped.Inc()
		finish(webhook.Outcome{Mode: webhook.FinishDrop})
		return
	}
	// The log's attempted_at is when the attempt began (openapi
	// DeliveryAttempt; its length is duration_ms): taken after it ended, a
	// timed-out attempt was logged 10 s after the receiver got it. The
	// retry wait still counts from the end (docs/decisions.md, "Retries").
	started := w.cfg.Clock()
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	r := w.attempt(actx, sub, j, body)
	cancel()
	if r.aborted {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := w.store.Release(rctx, []*webhook.Job{j}, w.cfg.Clock()); err != nil {
			w.log.Error("worker: handing back a delivery", "delivery", j.ID, "err", err)
		}
		return
	}
	now := w.cfg.Clock()
	n := j.Attempts + 1
	w.metrics.attempts.WithLabelValues(r.outcome).Inc()
	w.metrics.latency.WithLabelValues(r.outcome).Observe(r.duration.Seconds())
	a := &webhook.Attempt{EventID: j.EventID, EventType: j.EventType, Attempt: n, AttemptedAt: started.UTC(), Outcome: r.outcome, DurationMS: r.duration.Milliseconds()}
	if r.status != 0 {
		a.StatusCode = &r.status
	}
	if r.err != "" {
		a.Error = &r.err
	}
	o := webhook.Outcome{Attempt: a, LastStatus: r.status, LastError: r.err}
	switch {
	case r.outcome == webhook.OutcomeDelivered:
		o.Mode = webhook.FinishDelivered
		w.metrics.endToEnd.Observe(now.Sub(j.EventCreated).Seconds())
	case r.status == 410:
		// The receiver is gone for good (Standard Webhooks): stop.
		o.Mode, o.Reason = webhook.FinishDisable, "gone"
	case !sub.FailingSince.IsZero() && now.Sub(sub.FailingSince) >= w.cfg.DisableAfter:
		o.Mode, o.Reason = webhook.FinishDisable, "failing"
	case n > len(w.cfg.Schedule):
		o.Mode = webhook.FinishDead
	default:
		delay := retryWait(retryDelay(w.cfg.Schedule[n-1], w.cfg.Jitter), w.cfg.ThrottleFloor, r)
		o.Mode, o.Next = webhook.FinishRetry, now.Add(delay)
		next := o.Next.UTC()
		a.NextAttemptAt = &next
	}
	if o.Mode == webhook.FinishDead || o.Mode == webhook.FinishDisable {
		w.metrics.deadLetters.Inc()
	}
	// Only the finish that disabled the subscription counts and logs it:
	// another delivery's 410 or an operator may have disabled it first,
	// and then it keeps that reason (docs/decisions.md, operator commands).
	if finish(o) == webhook.RecordedDisabled {
		w.metrics.disabled.WithLabelValues(o.Reason).Inc()
		w.log.Warn("worker: subscription disabled", "subscription", sub.ID, "reason", o.Reason)
	}
}

// finishReq asks the finisher to record one outcome.
type finishReq struct {
	f    webhook.Finished
	done chan<- finishDone
}

// finishDone is what the finisher did with one outcome.
type finishDone struct {
	res webhook.FinishResult
	err error
}

// finisher records outcomes in batches: whatever has queued up while the
// previous pipeline was in flight goes in the next one, so under load one
// round trip records many deliveries and an idle worker adds no delay.
// It runs until finishes is closed, after the last delivery.
func (w *Worker) finisher(stopped chan<- struct{}) {
	defer close(stopped)
	for first := range w.finishes {
		batch := []finishReq{first}
	gather:
		for len(batch) < 256 {
			select {
			case r, ok := <-w.finishes:
				if !ok {
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		items := make([]webhook.Finished, len(batch))
		for i, r := range batch {
			items[i] = r.f
		}
		// Recording is never cut short by shutdown: its own context.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, errs := w.store.FinishBatch(ctx, items, w.cfg.DeadLetterMax)
		cancel()
		for i, r := range batch {
			r.done <- finishDone{res[i], errs[i]}
		}
	}
}

// bodyCache keeps recent event bodies: every subscriber of an event needs
// the same bytes, and they never change.
type bodyCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *bodyCache) get(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[id]
	return b, ok
}

func (c *bodyCache) put(id string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 4096 {
		// Bodies are small and refetched on a miss; starting over is
		// cheaper than tracking recency.
		clear(c.m)
	}
	c.m[id] = b
}
