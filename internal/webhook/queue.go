package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
)

// BodyTTL bounds how long an event's envelope is kept for its deliveries:
// longer than the whole retry schedule (about 28 h) plus the auto-disable
// window, so no pending delivery loses its body.
const BodyTTL = 7 * 24 * time.Hour

// DeliveryID is the id of the delivery of one event to one subscription. It
// is derived from both, so fanning the same event out twice (after a crash)
// finds the jobs it already made.
func DeliveryID(eventID, subID string) string {
	sum := sha256.Sum256([]byte(eventID + "\x00" + subID))
	return "dlv_" + hex.EncodeToString(sum[:13])
}

// Envelope is the body of every delivery (docs/decisions.md, delivery): exactly the event. The
// bytes are produced once and stored, so every attempt sends and signs the
// same bytes.
func Envelope(e events.Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("webhook: encoding event %s: %w", e.ID, err)
	}
	return b, nil
}

// luaNewJob is the Lua function that schedules one delivery: the job hash,
// with no attempt made yet, and its id in the queue, due at now. A job that
// already exists is left alone (it returns 0), so creating a delivery twice
// is harmless. Every script that makes deliveries (fan-out, test events,
// dead-letter replay) embeds it, so a job always has the same fields.
const luaNewJob = `
local function newJob(due, job, now, sub, delivery, evt, typ, created)
  if redis.call('EXISTS', job) == 1 then return 0 end
  redis.call('HSET', job, 'sub', sub, 'evt', evt, 'type', typ, 'attempt', 0, 'created', created, 'enq', now)
  redis.call('ZADD', due, 'NX', now, delivery)
  return 1
end
`

// enqueueScript creates delivery jobs for one event. KEYS: fanned marker,
// body, due, then one job key per delivery. ARGV: now ms,
// body TTL s, body, event id, type, created ms, then (subscription,
// delivery) id pairs. A job that already exists is left alone, and an event
// whose marker is set is skipped whole: fan-out is idempotent.
var enqueueScript = redis.NewScript(luaNewJob + `
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[2])
local n = 0
for i = 7, #ARGV, 2 do
  local job = KEYS[4 + (i - 7) / 2]
  n = n + newJob(KEYS[3], job, ARGV[1], ARGV[i], ARGV[i + 1], ARGV[4], ARGV[5], ARGV[6])
end
redis.call('SET', KEYS[1], '1', 'EX', ARGV[2])
return n
`)

// FanOut creates one delivery of e per subscription id, due at now. It
// returns the number of deliveries created, or -1 when the event had
// already been fanned out.
func (s *Store) FanOut(ctx context.Context, e events.Event, body []byte, subIDs []string, now time.Time) (int, error) {
	return s.enqueue(ctx, keyFanned(e.ID), e, body, subIDs, now)
}

// EnqueueTest queues synthetic events for one subscription only, outside
// the events stream (the subscriptions rule's (docs/decisions.md) test=true).
func (s *Store) EnqueueTest(ctx context.Context, subID string, evs []events.Event, now time.Time) error {
	for _, e := range evs {
		body, err := Envelope(e)
		if err != nil {
			return err
		}
		// Test event ids are unique, so the fan-out marker costs nothing
		// and keeps the script's keys in one slot.
		if _, err := s.enqueue(ctx, keyFanned(e.ID), e, body, []string{subID}, now); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) enqueue(ctx context.Context, marker string, e events.Event, body []byte, subIDs []string, now time.Time) (int, error) {
	keys := []string{marker, keyBody(e.ID), KeyDue}
	args := []any{msec(now), int64(BodyTTL / time.Second), body, e.ID, e.Type, msec(e.CreatedAt)}
	for _, id := range subIDs {
		d := DeliveryID(e.ID, id)
		keys = append(keys, keyJob(d))
		args = append(args, id, d)
	}
	n, err := enqueueScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("webhook: queueing deliveries of %s: %w", e.ID, err)
	}
	return n, nil
}

// Job is one pending delivery.
type Job struct {
	ID        string
	SubID     string
	EventID   string
	EventType string
	// Attempts is the number of attempts already made.
	Attempts int
	// LastStatus and LastError are how the last of them failed (0 and ""
	// before the first): a delivery dead-lettered later without an
	// attempt of its own (FinishShelve) keeps them on its dead letter.
	LastStatus int
	LastError  string
	// EventCreated is the event's created_at; Enqueued when the job was made.
	EventCreated time.Time
	Enqueued     time.Time
	// Lease is the job's score in the queue while this claim holds it; it
	// fences a worker whose lease expired from changing a job another
	// worker has claimed since.
	Lease int64
}

// claimScript leases up to ARGV[2] due deliveries until ARGV[3] (ms).
var claimScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], id) end
return ids
`)

// Claim leases up to n deliveries due at now until now+lease. A delivery
// whose job has vanished (finished by a worker whose lease had run out) is
// removed from the queue and not returned.
func (s *Store) Claim(ctx context.Context, now time.Time, lease time.Duration, n int) ([]*Job, error) {
	until := msec(now.Add(lease))
	ids, err := claimScript.Run(ctx, s.rdb, []string{KeyDue}, msec(now), n, until).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("webhook: claiming deliveries: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, keyJob(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("webhook: reading claimed deliveries: %w", err)
	}
	jobs := make([]*Job, 0, len(ids))
	var orphans []any
	for i, c := range cmds {
		h := c.Val()
		if h["sub"] == "" {
			orphans = append(orphans, ids[i])
			continue
		}
		j := &Job{ID: ids[i], SubID: h["sub"], EventID: h["evt"], EventType: h["type"], Lease: until}
		if n, ok := parseMsec(h["attempt"]); ok {
			j.Attempts = int(n)
		}
		if n, ok := parseMsec(h["last_status"]); ok {
			j.LastStatus = int(n)
		}
		j.LastError = h["last_error"]
		if ms, ok := parseMsec(h["created"]); ok {
			j.EventCreated = fromMsec(ms)
		}
		if ms, ok := parseMsec(h["enq"]); ok {
			j.Enqueued = fromMsec(ms)
		}
		jobs = append(jobs, j)
	}
	if len(orphans) > 0 {
		s.rdb.ZRem(ctx, KeyDue, orphans...)
	}
	return jobs, nil
}

// Release hands claimed deliveries back at once (a worker shutting down
// before it could try them), unless another worker holds them by now.
func (s *Store) Release(ctx context.Context, jobs []*Job, now time.Time) error {
	for _, j := range jobs {
		if err := finishScript.Run(ctx, s.rdb, []string{KeyDue, keyJob(j.ID), keySub(j.SubID), keyLog(j.SubID), KeyDead},
			j.ID, j.Lease, FinishRelease, msec(now), msec(now), "", 0, 0, "", "", j.SubID, 0, "").Err(); err != nil {
			return fmt.Errorf("webhook: releasing %s: %w", j.ID, err)
		}
	}
	return nil
}

// Defer hands claimed deliveries back unattempted, each due again at its
// until[i], in one round trip: their receiver already has as many
// deliveries in flight from this worker as it may (docs/decisions.md,
// "Per-receiver bound"). Nothing else of the job changes: no attempt is
// logged or counted, and the failure clock is not touched. Like every
// finish it is fenced by the lease, so a delivery another worker has
// claimed since (this one's lease ran out) is left alone; and if Defer
// never runs (a crash, Redis unreachable), the lease runs out and the
// delivery comes due again as after any crash. errs[i] belongs to jobs[i].
func (s *Store) Defer(ctx context.Context, jobs []*Job, until []time.Time, now time.Time) []error {
	batch := make([]Finished, len(jobs))
	for i, j := range jobs {
		batch[i] = Finished{Job: j, Outcome: Outcome{Mode: FinishRelease, Next: until[i]}, Now: now}
	}
	_, errs := s.FinishBatch(ctx, batch, 0)
	return errs
}

// Bodies returns the stored envelopes of events; a missing one is absent
// from the map.
func (s *Store) Bodies(ctx context.Context, eventIDs []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(eventIDs) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(eventIDs))
	for i, id := range eventIDs {
		cmds[i] = pipe.Get(ctx, keyBody(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhook: reading event bodies: %w", err)
	}
	for i, c := range cmds {
		if b, err := c.Bytes(); err == nil {
			out[eventIDs[i]] = b
		}
	}
	return out, nil
}

// Subscriptions returns subscriptions by id; deleted ones are absent.
func (s *Store) Subscriptions(ctx context.Context, ids []string) (map[string]*Subscription, error) {
	subs, err := s.getMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Subscription, len(subs))
	for _, sub := range subs {
		out[sub.ID] = sub
	}
	return out, nil
}

// Modes of Finish.
const (
	// FinishDelivered: the delivery succeeded; the job is removed and the
	// subscription's failure clock reset.
	FinishDelivered = "done"
	// FinishRetry: the attempt failed; the job is due again at Next.
	FinishRetry = "retry"
	// FinishDead: the last retry failed; the job goes to the dead letters.
	FinishDead = "dead"
	// FinishDisable: the subscription is disabled (410, or failing too
	// long) as an operator's Disable disables it (luaDisable: one already
	// disabled keeps its reason); the job goes to the dead letters.
	FinishDisable = "disable"
	// FinishShelve: the subscription was disabled before this attempt (by
	// a 410 or the failing rule, on another delivery, or by an operator);
	// the job goes to the dead letters unattempted, so what the
	// subscription missed stays on record (iwctl deadletters list;
	// docs/operations.md, dead letters) rather than vanishing. They are not
	// replayed to it while it is disabled; once an operator enables it
	// again (iwctl subscriptions enable) they can be. The subscription is
	// left as it is.
	FinishShelve = "shelve"
	// FinishDrop: the subscription was deleted by its owner, who asked for
	// its deliveries to stop; the job is dropped.
	FinishDrop = "drop"
	// FinishRelease: the delivery was not attempted (the worker is
	// stopping, or its receiver is at its bound); it is due again at Next,
	// with nothing else changed.
	FinishRelease = "release"
)

// Outcome is how one claimed delivery ended.
type Outcome struct {
	Mode string
	// Attempt is logged to the subscription's log when not nil.
	Attempt *Attempt
	// Next is when a retried delivery is due.
	Next time.Time
	// Reason is the disabled reason for FinishDisable and FinishShelve.
	Reason string
	// LastStatus and LastError describe a dead letter.
	LastStatus int
	LastError  string
}

// finishScript records how a claimed delivery ended. KEYS: due, job, sub,
// log, dead, then (for FinishDisable) the subscription's spans and its
// (kind set, ended set) pairs.
// ARGV: delivery id, lease, mode, now ms, next ms, attempt JSON (or ""),
// attempts made, dead-letter cap, disabled reason, dead-letter JSON,
// subscription id, last status, last error (kept on a retried job). It returns 0 when the lease was lost to another worker
// (only the attempt is logged then; the subscription is not disabled
// either: the outcome belongs to the lease's holder), 2 when FinishDisable
// disabled the subscription (it was active), else 1: a FinishResult.
// FinishDisable disables the subscription with luaDisable, as an
// operator's Disable does, in this script, so the dead letter and the
// disable are one step.
var finishScript = redis.NewScript(luaDisable + `
local id, lease, mode, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local subExists = redis.call('EXISTS', KEYS[3]) == 1
if ARGV[6] ~= '' and subExists then
  redis.call('LPUSH', KEYS[4], ARGV[6])
  redis.call('LTRIM', KEYS[4], 0, 19)
end
local cur = redis.call('ZSCORE', KEYS[1], id)
if (not cur) or tonumber(cur) ~= tonumber(lease) then return 0 end
if mode == 'release' then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[5], id)
  return 1
end
if mode == 'retry' then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[5], id)
  redis.call('HSET', KEYS[2], 'attempt', ARGV[7], 'last_status', ARGV[12], 'last_error', ARGV[13])
  if subExists then redis.call('HSETNX', KEYS[3], 'failing_since', now) end
  return 1
end
redis.call('ZREM', KEYS[1], id)
redis.call('DEL', KEYS[2])
if mode == 'done' then
  -- A success resets the failure clock (a no-op, and not written to the
  -- append-only file, when it was not running).
  if subExists then redis.call('HDEL', KEYS[3], 'failing_since') end
  return 1
end
if mode == 'dead' or mode == 'disable' or mode == 'shelve' then
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[8], '*', 'delivery', ARGV[10])
end
if mode == 'dead' and subExists then
  redis.call('HSETNX', KEYS[3], 'failing_since', now)
end
if mode == 'disable' and disableSub(KEYS[3], KEYS[6], ARGV[11], ARGV[9], now, KEYS, 7) == 'done' then
  return 2
end
return 1
`)

// DeadLetter is one entry of the dead-letter stream.
type DeadLetter struct {
	Delivery     string    `json:"delivery"`
	Subscription string    `json:"subscription"`
	EventID      string    `json:"event_id"`
	EventType    string    `json:"event_type"`
	Attempts     int       `json:"attempts"`
	LastStatus   int       `json:"last_status,omitempty"`
	LastError    string    `json:"last_error,omitempty"`
	Reason       string    `json:"reason"`
	At           time.Time `json:"at"`
}

// FinishResult is what recording one outcome did (Finish, FinishBatch).
type FinishResult int

const (
	// LeaseLost: another worker claimed the delivery after this one's
	// lease ran out; only the attempt was logged.
	LeaseLost FinishResult = iota
	// Recorded: the outcome was recorded.
	Recorded
	// RecordedDisabled: the outcome was recorded and disabled the
	// subscription, active until then (FinishDisable). A FinishDisable of
	// a subscription already disabled (an operator, or a 410 to another
	// of its deliveries) or deleted is Recorded.
	RecordedDisabled
)

// Finished is one claimed job's outcome, for FinishBatch.
type Finished struct {
	Job     *Job
	Sub     *Subscription
	Outcome Outcome
	Now     time.Time
}

// FinishBatch records many outcomes in one round trip (a pipeline of the
// same script Finish runs); res[i] and errs[i] belong to batch[i].
func (s *Store) FinishBatch(ctx context.Context, batch []Finished, deadMax int64) (res []FinishResult, errs []error) {
	res = make([]FinishResult, len(batch))
	errs = make([]error, len(batch))
	keys := make([][]string, len(batch))
	args := make([][]any, len(batch))
	for i, f := range batch {
		keys[i], args[i], errs[i] = finishArgs(f.Job, f.Sub, f.Outcome, deadMax, f.Now)
	}
	run := func() (cmds []*redis.Cmd, noScript bool) {
		pipe := s.rdb.Pipeline()
		cmds = make([]*redis.Cmd, len(batch))
		for i := range batch {
			if errs[i] == nil {
				cmds[i] = finishScript.EvalSha(ctx, pipe, keys[i], args[i]...)
			}
		}
		pipe.Exec(ctx)
		for _, c := range cmds {
			if c != nil && redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
				noScript = true
			}
		}
		return cmds, noScript
	}
	cmds, noScript := run()
	if noScript {
		// Redis restarted and lost its script cache: load it, run again.
		if err := finishScript.Load(ctx, s.rdb).Err(); err == nil {
			cmds, _ = run()
		}
	}
	for i, c := range cmds {
		if c == nil {
			continue
		}
		n, err := c.Int()
		if err != nil {
			errs[i] = fmt.Errorf("webhook: finishing %s: %w", batch[i].Job.ID, err)
			continue
		}
		res[i] = FinishResult(n)
	}
	return res, errs
}

// Finish records the outcome of a claimed job. It reports LeaseLost when
// the job's lease had been lost to another worker, in which case only the
// attempt was logged.
func (s *Store) Finish(ctx context.Context, j *Job, sub *Subscription, o Outcome, deadMax int64, now time.Time) (FinishResult, error) {
	keys, args, err := finishArgs(j, sub, o, deadMax, now)
	if err != nil {
		return LeaseLost, err
	}
	n, err := finishScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return LeaseLost, fmt.Errorf("webhook: finishing %s: %w", j.ID, err)
	}
	return FinishResult(n), nil
}

func finishArgs(j *Job, sub *Subscription, o Outcome, deadMax int64, now time.Time) ([]string, []any, error) {
	keys := []string{KeyDue, keyJob(j.ID), keySub(j.SubID), keyLog(j.SubID), KeyDead}
	if o.Mode == FinishDisable {
		// Without its kind sets the subscription would be disabled but
		// still fanned out to; without its spans and ended sets, events
		// published before now and fanned out later would miss it.
		if sub == nil || sub.ID != j.SubID {
			return nil, nil, fmt.Errorf("webhook: disabling %s after %s needs the subscription", j.SubID, j.ID)
		}
		keys = append(append(keys, keySpans(j.SubID)), kindKeys(sub)...)
	}
	attempt := ""
	if o.Attempt != nil {
		b, err := json.Marshal(o.Attempt)
		if err != nil {
			return nil, nil, fmt.Errorf("webhook: encoding an attempt: %w", err)
		}
		attempt = string(b)
	}
	dead := ""
	if o.Mode == FinishDead || o.Mode == FinishDisable || o.Mode == FinishShelve {
		reason := "retries exhausted"
		if o.Mode == FinishDisable || o.Mode == FinishShelve {
			reason = "subscription disabled: " + o.Reason
		}
		attempts := j.Attempts
		if o.Attempt != nil {
			attempts = o.Attempt.Attempt
		}
		b, _ := json.Marshal(DeadLetter{Delivery: j.ID, Subscription: j.SubID, EventID: j.EventID, EventType: j.EventType,
			Attempts: attempts, LastStatus: o.LastStatus, LastError: o.LastError, Reason: reason, At: now.UTC()})
		dead = string(b)
	}
	made := j.Attempts
	if o.Attempt != nil {
		made = o.Attempt.Attempt
	}
	return keys, []any{j.ID, j.Lease, o.Mode, msec(now), msec(o.Next), attempt, made, deadMax, o.Reason, dead, j.SubID, o.LastStatus, o.LastError}, nil
}

// QueueDepth is the number of deliveries due by now and the number
// scheduled later (retries waiting and deliveries leased to a worker).
func (s *Store) QueueDepth(ctx context.Context, now time.Time) (due, later int64, err error) {
	pipe := s.rdb.Pipeline()
	d := pipe.ZCount(ctx, KeyDue, "-inf", itoa(msec(now)))
	l := pipe.ZCount(ctx, KeyDue, "("+itoa(msec(now)), "+inf")
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("webhook: measuring the queue: %w", err)
	}
	return d.Val(), l.Val(), nil
}

// DeadLetters returns the dead-letter stream's length.
func (s *Store) DeadLetters(ctx context.Context) (int64, error) {
	n, err := s.rdb.XLen(ctx, KeyDead).Result()
	if err != nil {
		return 0, fmt.Errorf("webhook: measuring the dead letters: %w", err)
	}
	return n, nil
}
