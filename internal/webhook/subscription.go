// Package webhook is the Redis schema of webhook subscriptions and of the
// deliveries made to them (docs/decisions.md, subscriptions, delivery), shared by the origin, which
// creates and lists subscriptions, and the worker, which fans events out to
// them and delivers.
//
// Every key carries the {subs} hash tag, so the scripts below, which touch a
// subscription, its delivery jobs, its log and the queue together, run
// unchanged on Redis Cluster.
//
//	iw:{subs}:sub:<id>          hash: the subscription
//	iw:{subs}:client:<client>   sorted set: the client's subscription ids by creation time
//	iw:{subs}:kind:<kind>       set: ids of active subscriptions to an event kind
//	iw:{subs}:ended:<kind>      sorted set: ids of the kind's subscriptions by when
//	                            their last active period ended (ms, Redis's clock)
//	iw:{subs}:spans:<id>        sorted set: the subscription's past active periods,
//	                            "<since>-<until>" (ms) scored by until
//	iw:{subs}:log:<id>          list: the last 20 delivery attempts (JSON), newest first
//	iw:{subs}:job:<delivery>    hash: one pending delivery of one event to one subscription
//	iw:{subs}:body:<event>      string: the event's envelope, the exact bytes every attempt sends
//	iw:{subs}:fanned:<event>    string: marks an event already fanned out
//	iw:{subs}:due               sorted set: delivery ids by due time (ms); a claimed
//	                            delivery's score is its lease expiry
//	iw:{subs}:dead              stream: dead letters, capped
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/redisscan"
)

// Key names.
const (
	keyPrefix = "iw:{subs}:"
	// KeyDue is the delivery queue.
	KeyDue = keyPrefix + "due"
	// KeyDead is the dead-letter stream.
	KeyDead = keyPrefix + "dead"
)

func keySub(id string) string          { return keyPrefix + "sub:" + id }
func keyClient(client string) string   { return keyPrefix + "client:" + client }
func keyKind(kind string) string       { return keyPrefix + "kind:" + kind }
func keyEnded(kind string) string      { return keyPrefix + "ended:" + kind }
func keySpans(id string) string        { return keyPrefix + "spans:" + id }
func keyLog(id string) string          { return keyPrefix + "log:" + id }
func keyJob(delivery string) string    { return keyPrefix + "job:" + delivery }
func keyBody(eventID string) string    { return keyPrefix + "body:" + eventID }
func keyFanned(eventID string) string  { return keyPrefix + "fanned:" + eventID }
func msec(t time.Time) int64           { return t.UnixMilli() }
func fromMsec(ms int64) time.Time      { return time.UnixMilli(ms).UTC() }
func itoa(n int64) string              { return strconv.FormatInt(n, 10) }
func parseMsec(s string) (int64, bool) { n, err := strconv.ParseInt(s, 10, 64); return n, err == nil }

// MaxPerClient is the number of subscriptions one client may hold (docs/decisions.md, subscriptions).
const MaxPerClient = 25

// LogLength is how many delivery attempts a subscription's log keeps (docs/decisions.md, subscriptions).
const LogLength = 20

// Statuses of a subscription.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// Subscription is one client's subscription to event kinds.
type Subscription struct {
	ID       string
	ClientID string
	URL      string
	Events   []string
	// Secret keys the HMAC signatures; it is kept in clear because every
	// delivery needs it, and is shown to the client only when generated.
	Secret    string
	CreatedAt time.Time
	Status    string
	// DisabledReason says why a disabled subscription stopped ("gone":
	// the receiver answered 410; "failing": no success for too long;
	// "operator": iwctl subscriptions disable).
	DisabledReason string
	// DisabledAt is when it was disabled, if it is.
	DisabledAt time.Time
	// FailingSince is the first failure after the last success, if any.
	FailingSince time.Time
}

// Public is the subscription as its owner sees it (openapi Subscription).
type Public struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	Status    string    `json:"status"`
}

// Public returns the owner's view, without the secret.
func (s *Subscription) Public() Public {
	return Public{ID: s.ID, URL: s.URL, Events: s.Events, CreatedAt: s.CreatedAt.UTC(), Status: s.Status}
}

func (s *Subscription) fields() []any {
	ev, _ := json.Marshal(s.Events)
	return []any{
		"id", s.ID, "client", s.ClientID, "url", s.URL, "events", string(ev), "secret", s.Secret,
		"created", itoa(msec(s.CreatedAt)), "status", s.Status,
	}
}

func subFromHash(h map[string]string) (*Subscription, bool) {
	if h["id"] == "" {
		return nil, false
	}
	s := &Subscription{ID: h["id"], ClientID: h["client"], URL: h["url"], Secret: h["secret"], Status: h["status"], DisabledReason: h["disabled_reason"]}
	if err := json.Unmarshal([]byte(h["events"]), &s.Events); err != nil {
		return nil, false
	}
	if ms, ok := parseMsec(h["created"]); ok {
		s.CreatedAt = fromMsec(ms)
	}
	if ms, ok := parseMsec(h["failing_since"]); ok {
		s.FailingSince = fromMsec(ms)
	}
	if ms, ok := parseMsec(h["disabled_at"]); ok {
		s.DisabledAt = fromMsec(ms)
	}
	return s, true
}

// Store reads and writes subscriptions and their deliveries.
type Store struct {
	rdb redis.UniversalClient
}

// NewStore wraps a Redis client.
func NewStore(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// Client is the underlying Redis client.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Errors of the subscription operations.
var (
	ErrNotFound = errors.New("webhook: no such subscription")
	// ErrExists: a subscription with this id is already stored (an
	// idempotent create made it on an earlier try).
	ErrExists = errors.New("webhook: the subscription already exists")
	ErrLimit  = errors.New("webhook: the client has the maximum number of subscriptions")
)

// luaNowMs is the Lua function that reads Redis's clock in milliseconds:
// the clock of the {subs} node, which dates every change of a
// subscription's status (active_since, its spans, the ended sets), so that
// Active compares them with the time an event was published, which the
// {content} node's clock dates (docs/decisions.md, "Fan-out follows the
// subscriptions as they were when the event was published").
const luaNowMs = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// createScript adds a subscription unless one with its id exists (0) or
// the client already has ARGV[1] of them (-1), active since now by Redis's
// clock (active_since). KEYS: sub, client set, then one kind set per event
// kind. ARGV: max, created ms, id, then the hash's field/value pairs.
var createScript = redis.NewScript(luaNowMs + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then return -1 end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('HSET', KEYS[1], 'active_since', nowMs())
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
for i = 3, #KEYS do redis.call('SADD', KEYS[i], ARGV[3]) end
return 1
`)

// Create stores a new active subscription, or returns ErrExists when one
// with its id is stored already (checked first, so a retry at the limit
// still finds it), or ErrLimit when its client already has MaxPerClient.
func (s *Store) Create(ctx context.Context, sub *Subscription) error {
	keys := []string{keySub(sub.ID), keyClient(sub.ClientID)}
	for _, k := range sub.Events {
		keys = append(keys, keyKind(k))
	}
	args := append([]any{MaxPerClient, msec(sub.CreatedAt), sub.ID}, sub.fields()...)
	n, err := createScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return fmt.Errorf("webhook: creating subscription: %w", err)
	}
	if n < 0 {
		return ErrLimit
	}
	if n == 0 {
		return ErrExists
	}
	return nil
}

// Get returns a subscription by id; one that belongs to another client than
// clientID (when clientID is not empty) is ErrNotFound, as docs/decisions.md (subscriptions) prescribes.
func (s *Store) Get(ctx context.Context, clientID, id string) (*Subscription, error) {
	h, err := s.rdb.HGetAll(ctx, keySub(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("webhook: reading subscription: %w", err)
	}
	sub, ok := subFromHash(h)
	if !ok || (clientID != "" && sub.ClientID != clientID) {
		return nil, ErrNotFound
	}
	return sub, nil
}

// List returns a client's subscriptions, newest first.
func (s *Store) List(ctx context.Context, clientID string) ([]*Subscription, error) {
	ids, err := s.rdb.ZRevRange(ctx, keyClient(clientID), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("webhook: listing subscriptions: %w", err)
	}
	return s.getMany(ctx, ids)
}

func (s *Store) getMany(ctx context.Context, ids []string) ([]*Subscription, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, keySub(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("webhook: reading subscriptions: %w", err)
	}
	out := make([]*Subscription, 0, len(ids))
	for _, c := range cmds {
		if sub, ok := subFromHash(c.Val()); ok {
			out = append(out, sub)
		}
	}
	return out, nil
}

// deleteScript removes a subscription if it belongs to ARGV[2], with its
// record of when it was active. KEYS: sub, client set, log, spans, then its
// (kind set, ended set) pairs (kindKeys). Its pending deliveries are
// dropped when a worker next claims them.
var deleteScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'client') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 5, #KEYS, 2 do
  redis.call('SREM', KEYS[i], ARGV[1])
  redis.call('ZREM', KEYS[i + 1], ARGV[1])
end
return 1
`)

// Delete removes a client's subscription; another client's is ErrNotFound.
func (s *Store) Delete(ctx context.Context, clientID, id string) error {
	sub, err := s.Get(ctx, clientID, id)
	if err != nil {
		return err
	}
	keys := append([]string{keySub(id), keyClient(clientID), keyLog(id), keySpans(id)}, kindKeys(sub)...)
	n, err := deleteScript.Run(ctx, s.rdb, keys, id, clientID).Int()
	if err != nil {
		return fmt.Errorf("webhook: deleting subscription: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// activeScript returns the ids of the subscriptions to a kind that were
// active at ARGV[1] (ms): those active now and since then, and those
// whose past active period (spans) covers it. The candidates are the kind
// set's members and the subscriptions whose last active period ended
// after ARGV[1] (the ended set), so it reads the subscribers of the kind,
// not every subscription. A subscription without active_since (created
// before it was recorded) counts as active since ever. KEYS: kind set,
// ended set. ARGV: at ms, the key prefix: the script reads the hash and
// spans of each candidate, which share the {subs} tag with KEYS and so
// the slot, also on Redis Cluster.
var activeScript = redis.NewScript(`
local at = tonumber(ARGV[1])
local function activeAt(id)
  local h = redis.call('HMGET', ARGV[2] .. 'sub:' .. id, 'status', 'active_since')
  if not h[1] then return false end
  if h[1] == 'active' and tonumber(h[2] or '0') <= at then return true end
  for _, span in ipairs(redis.call('ZRANGEBYSCORE', ARGV[2] .. 'spans:' .. id, ARGV[1], '+inf')) do
    if tonumber(string.match(span, '^(%d+)-')) <= at then return true end
  end
  return false
end
local out, seen = {}, {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  seen[id] = true
  if activeAt(id) then out[#out + 1] = id end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf')) do
  if not seen[id] and activeAt(id) then out[#out + 1] = id end
end
return out
`)

// Active returns the ids of the subscriptions to an event kind that were
// active at at, the time the event was published, whenever it is asked:
// an event that waited in the stream (the worker stopped or behind) goes
// to the subscriptions of that moment, not of the moment it is fanned out
// (docs/decisions.md, "Fan-out follows the subscriptions as they were when
// the event was published"). One disabled since is among them: its
// delivery becomes a dead letter when it comes due, as one queued before
// the disable does. Which of two things in the same millisecond came
// first cannot be told, so a change of status in the millisecond of at is
// judged in the event's favour: a subscription created, enabled or
// disabled then counts as active (a duplicate is better than a loss). The
// record of past active periods goes back statusHistory.
func (s *Store) Active(ctx context.Context, kind string, at time.Time) ([]string, error) {
	ids, err := activeScript.Run(ctx, s.rdb, []string{keyKind(kind), keyEnded(kind)}, msec(at), keyPrefix).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("webhook: reading subscribers of %s: %w", kind, err)
	}
	return ids, nil
}

// Attempt is one delivery attempt as the owner's log shows it (openapi
// DeliveryAttempt).
type Attempt struct {
	EventID       string     `json:"event_id"`
	EventType     string     `json:"event_type"`
	Attempt       int        `json:"attempt"`
	AttemptedAt   time.Time  `json:"attempted_at"`
	Outcome       string     `json:"outcome"`
	StatusCode    *int       `json:"status_code"`
	Error         *string    `json:"error"`
	DurationMS    int64      `json:"duration_ms"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// Outcomes of an attempt.
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
	OutcomeRefused   = "refused"
)

// Attempts returns a subscription's last LogLength attempts, newest first.
func (s *Store) Attempts(ctx context.Context, id string) ([]Attempt, error) {
	raw, err := s.rdb.LRange(ctx, keyLog(id), 0, LogLength-1).Result()
	if err != nil {
		return nil, fmt.Errorf("webhook: reading the delivery log: %w", err)
	}
	out := make([]Attempt, 0, len(raw))
	for _, r := range raw {
		var a Attempt
		if json.Unmarshal([]byte(r), &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

// Each calls fn with every subscription, in no particular order, a batch
// of them at a time, until fn returns an error: iwctl subscriptions list,
// for operators. No index lists them all (a client's and a kind's do), so
// it walks the {subs} keys with SCAN (package redisscan), which never
// blocks Redis; a subscription created or deleted meanwhile may or may not
// be passed.
func (s *Store) Each(ctx context.Context, fn func([]*Subscription) error) error {
	return redisscan.Keys(ctx, s.rdb, keyPrefix+"sub:*", func(ctx context.Context, keys []string) error {
		ids := make([]string, len(keys))
		for i, k := range keys {
			ids[i] = strings.TrimPrefix(k, keyPrefix+"sub:")
		}
		subs, err := s.getMany(ctx, ids)
		if err != nil || len(subs) == 0 {
			return err
		}
		return fn(subs)
	})
}
