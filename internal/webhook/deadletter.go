package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
)

// DeadLetterEntry is one entry of the dead-letter stream with its stream
// entry id, which names it to Replay.
type DeadLetterEntry struct {
	EntryID string
	DeadLetter
	// Undecodable, when not empty, says why the entry's delivery field
	// does not decode into a DeadLetter naming a subscription and an
	// event. Such an entry is listed, by its id, so an operator sees
	// it, with only Reason set (to say the same); Replay skips it
	// (ReplayUndecodable), since what it would queue is unknown.
	Undecodable string
}

func deadLetterEntries(msgs []redis.XMessage) []DeadLetterEntry {
	out := make([]DeadLetterEntry, 0, len(msgs))
	for _, m := range msgs {
		e := DeadLetterEntry{EntryID: m.ID}
		if why := decodeDeadLetter(m.Values, &e.DeadLetter); why != "" {
			// A partial decode is not shown either: fields read from an
			// entry that is not what the worker writes are not to be
			// trusted, listed or replayed.
			e.DeadLetter = DeadLetter{Reason: "undecodable entry: " + why}
			e.Undecodable = why
		}
		out = append(out, e)
	}
	return out
}

// decodeDeadLetter decodes the delivery field of a dead-letter stream entry
// into d, and returns why it does not decode into one that Replay could
// queue, or "".
func decodeDeadLetter(values map[string]any, d *DeadLetter) string {
	s, ok := values["delivery"].(string)
	if !ok {
		return "no delivery field"
	}
	if err := json.Unmarshal([]byte(s), d); err != nil {
		return err.Error()
	}
	if d.Subscription == "" || d.EventID == "" {
		return "no subscription or event id"
	}
	return ""
}

// DeadLetterList returns up to limit dead letters, newest first; limit 0
// returns them all (the stream is capped at IW_WEBHOOK_DEAD_LETTER_MAX,
// docs/operations.md, invoicewirewebhookdeadletters).
func (s *Store) DeadLetterList(ctx context.Context, limit int64) ([]DeadLetterEntry, error) {
	var msgs []redis.XMessage
	var err error
	if limit > 0 {
		msgs, err = s.rdb.XRevRangeN(ctx, KeyDead, "+", "-", limit).Result()
	} else {
		msgs, err = s.rdb.XRevRange(ctx, KeyDead, "+", "-").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("webhook: listing the dead letters: %w", err)
	}
	return deadLetterEntries(msgs), nil
}

// DeadLettersOf returns every dead letter of one subscription, newest first.
func (s *Store) DeadLettersOf(ctx context.Context, subID string) ([]DeadLetterEntry, error) {
	all, err := s.DeadLetterList(ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []DeadLetterEntry
	for _, e := range all {
		if e.Subscription == subID {
			out = append(out, e)
		}
	}
	return out, nil
}

// DeadLetterGet returns the dead letters with the given stream entry ids,
// in that order; an id with no entry (already replayed, or mistyped) is
// absent from the map.
func (s *Store) DeadLetterGet(ctx context.Context, entryIDs []string) (map[string]DeadLetterEntry, error) {
	out := map[string]DeadLetterEntry{}
	for _, id := range entryIDs {
		msgs, err := s.rdb.XRange(ctx, KeyDead, id, id).Result()
		if err != nil {
			if redis.HasErrorPrefix(err, "ERR Invalid stream ID") {
				continue
			}
			return nil, fmt.Errorf("webhook: reading dead letter %s: %w", id, err)
		}
		for _, e := range deadLetterEntries(msgs) {
			out[e.EntryID] = e
		}
	}
	return out, nil
}

// Outcomes of replaying one dead letter.
const (
	// ReplayDone: the delivery is queued again, due now, and the entry is
	// removed from the dead letters.
	ReplayDone = "replayed"
	// ReplayPending: the same delivery is queued already (another dead
	// letter of it was replayed and is still pending); the entry is
	// removed, since its delivery is queued.
	ReplayPending = "replayed (already queued)"
	// ReplayGone: no such entry: it was replayed already, or the id is
	// wrong. Nothing is done.
	ReplayGone = "skipped: no such dead letter (already replayed?)"
	// ReplaySubDeleted, ReplaySubDisabled, ReplayBodyExpired: the entry is
	// kept, and nothing is queued.
	ReplaySubDeleted  = "skipped: subscription deleted"
	ReplaySubDisabled = "skipped: subscription disabled"
	ReplayBodyExpired = "skipped: event body expired"
	// ReplayUndecodable: the entry does not decode (Undecodable), so its
	// subscription and event are unknown; it is kept, and nothing is
	// queued.
	ReplayUndecodable = "skipped: entry does not decode (its subscription and event are unknown)"
)

// replayScript queues one dead letter again, atomically with the checks
// that allow it and with removing its entry, so two replays at once (or
// one run twice) queue it at most once, and an entry is never removed
// without its delivery queued. KEYS: dead, sub, body, due, job. ARGV:
// entry id, now ms, subscription id, delivery id, event id, type, event
// created ms, body TTL s. The body's TTL is renewed: the fresh delivery
// retries on the whole schedule again, and a delivery needs its body until
// its last attempt (BodyTTL).
var replayScript = redis.NewScript(luaNewJob + `
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then return 'gone' end
if redis.call('EXISTS', KEYS[2]) == 0 then return 'deleted' end
if redis.call('HGET', KEYS[2], 'status') ~= 'active' then return 'disabled' end
if redis.call('EXISTS', KEYS[3]) == 0 then return 'expired' end
redis.call('EXPIRE', KEYS[3], ARGV[8])
local n = newJob(KEYS[4], KEYS[5], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
redis.call('XDEL', KEYS[1], ARGV[1])
if n == 1 then return 'done' end
return 'pending'
`)

var replayOutcomes = map[string]string{
	"done": ReplayDone, "pending": ReplayPending, "gone": ReplayGone,
	"deleted": ReplaySubDeleted, "disabled": ReplaySubDisabled, "expired": ReplayBodyExpired,
}

// Replay queues a dead letter again as a fresh delivery (no attempts made,
// due at now) of the same event to the same subscription, when the
// subscription still exists and is active and the event's body is still
// stored (docs/operations.md, invoicewirewebhookdeadletters). The delivery
// keeps its id and the event keeps its id, which is the webhook-id, so a
// receiver that did get an earlier attempt can drop the duplicate. It
// returns one of the Replay outcomes.
func (s *Store) Replay(ctx context.Context, e DeadLetterEntry, now time.Time) (string, error) {
	if e.Undecodable != "" || e.Subscription == "" || e.EventID == "" {
		return ReplayUndecodable, nil
	}
	// The job records the event's creation time (for the event-to-delivery
	// latency), which the dead letter does not carry; the body does.
	created := now
	bodies, err := s.Bodies(ctx, []string{e.EventID})
	if err != nil {
		return "", err
	}
	if b, ok := bodies[e.EventID]; ok {
		var ev events.Event
		if json.Unmarshal(b, &ev) == nil && !ev.CreatedAt.IsZero() {
			created = ev.CreatedAt
		}
	}
	d := DeliveryID(e.EventID, e.Subscription)
	keys := []string{KeyDead, keySub(e.Subscription), keyBody(e.EventID), KeyDue, keyJob(d)}
	res, err := replayScript.Run(ctx, s.rdb, keys, e.EntryID, msec(now), e.Subscription, d,
		e.EventID, e.EventType, msec(created), int64(BodyTTL/time.Second)).Text()
	if err != nil {
		return "", fmt.Errorf("webhook: replaying dead letter %s: %w", e.EntryID, err)
	}
	out, ok := replayOutcomes[res]
	if !ok {
		return "", fmt.Errorf("webhook: replaying dead letter %s: unexpected answer %q", e.EntryID, res)
	}
	return out, nil
}
