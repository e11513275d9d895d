package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReasonOperator is the disabled reason of a subscription an operator
// disabled (iwctl subscriptions disable); its deliveries that come due
// while it is disabled become dead letters with the reason
// "subscription disabled: operator".
const ReasonOperator = "operator"

// Outcomes of Disable and Enable.
const (
	// SwitchDone: the status changed.
	SwitchDone = "done"
	// SwitchUnchanged: the subscription already had that status.
	SwitchUnchanged = "unchanged"
)

// statusHistory is how long the record of a subscription's past active
// periods is kept (its spans, and its entry in the ended set of each of its
// kinds), counted from when the period ended: what Active needs to fan an
// event out to the subscriptions of the moment it was published, for an
// event that waited in the stream up to that long. It bounds what a
// subscription disabled and enabled again and again keeps. Seven days,
// like an event's body (BodyTTL): a worker stopped for longer is far past
// its alert (docs/operations.md, invoicewirewebhookbacklog).
const statusHistory = BodyTTL

// luaDisable is the Lua function that disables a subscription: the one
// state change behind every way a subscription stops, an operator's
// (disableScript) and the worker's after a 410 or the failing rule
// (finishScript's FinishDisable), which embed it, so a disabled
// subscription is stored alike whichever disabled it. It takes the id out
// of the kind sets (no new delivery is made for it) and, if it was active,
// sets status, disabled_reason and disabled_at: 'done'; it then also
// records, by Redis's clock, the active period that ends (spans: from
// active_since, or 0 for a subscription created before that was recorded,
// to now) and when it ended (the kinds' ended sets), so that an event
// published before now and fanned out later still goes to it (Active),
// dropping what is older than statusHistory. One already disabled keeps
// its reason and time, the first decision standing (docs/decisions.md,
// operator commands): 'unchanged'. The kind sets lose it whatever its
// status, so a run repeated mends them too. A deleted one is 'missing'
// and nothing is written (no stub hash). The failure clock
// (failing_since) is left alone: it only decides the auto-disable of an
// active subscription, and enabling clears it. The caller passes its spans
// key and, from kinds[first] on, the (kind set, ended set) pairs of the
// subscription's kinds (kindKeys), which never change after it is created,
// in the {subs} slot like the subscription.
var luaDisable = luaNowMs + `
local history = ` + itoa(statusHistory.Milliseconds()) + `
local function disableSub(sub, spans, id, reason, now, kinds, first)
  local st = redis.call('HGET', sub, 'status')
  if not st then return 'missing' end
  for i = first, #kinds, 2 do redis.call('SREM', kinds[i], id) end
  if st ~= 'active' then return 'unchanged' end
  redis.call('HSET', sub, 'status', 'disabled', 'disabled_reason', reason, 'disabled_at', now)
  local ended = nowMs()
  local since = redis.call('HGET', sub, 'active_since') or '0'
  redis.call('ZADD', spans, ended, since .. '-' .. ended)
  redis.call('ZREMRANGEBYSCORE', spans, '-inf', '(' .. (ended - history))
  for i = first + 1, #kinds, 2 do
    redis.call('ZADD', kinds[i], ended, id)
    redis.call('ZREMRANGEBYSCORE', kinds[i], '-inf', '(' .. (ended - history))
  end
  return 'done'
end
`

// disableScript disables a subscription (luaDisable). KEYS: sub, spans,
// then its (kind set, ended set) pairs. ARGV: id, reason, now ms. Its
// pending deliveries are not touched here: the worker dead-letters each as
// it comes due (FinishShelve).
var disableScript = redis.NewScript(luaDisable + `
return disableSub(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], KEYS, 3)
`)

// enableScript makes a disabled subscription active again, from now by
// Redis's clock (active_since); the record of its past active periods
// stays, for events published during them and not fanned out yet. KEYS:
// sub, spans, then its (kind set, ended set) pairs. ARGV: id. The failure
// clock restarts, so a subscription disabled for failing is not disabled
// again by its first failure.
var enableScript = redis.NewScript(luaNowMs + `
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return 'missing' end
for i = 3, #KEYS, 2 do redis.call('SADD', KEYS[i], ARGV[1]) end
if st == 'active' then return 'unchanged' end
redis.call('HSET', KEYS[1], 'status', 'active', 'active_since', nowMs())
redis.call('HDEL', KEYS[1], 'disabled_reason', 'disabled_at', 'failing_since')
return 'done'
`)

// Disable stops deliveries to a subscription (an operator's decision, for
// a receiver that abuses or is compromised): it leaves the fan-out of every
// kind at once, so events published from then on make no delivery for it
// (those published before do, even if fanned out later: Active), and the
// worker turns its pending deliveries into dead letters as they come due,
// without attempting them. The owner sees status "disabled". A
// subscription already disabled (by an operator, a 410 or the failing
// rule) keeps its reason and is SwitchUnchanged. The subscription and its
// keys are in the {subs} slot: one script.
func (s *Store) Disable(ctx context.Context, id, reason string, now time.Time) (string, *Subscription, error) {
	return s.toggle(ctx, disableScript, id, reason, msec(now))
}

// Enable makes a disabled subscription active again, whatever disabled it:
// it rejoins the fan-out of its kinds, so events published from then on
// are delivered, and deliveries still pending are attempted as they come
// due. Events published while it was disabled make no delivery for it,
// even those fanned out after it is enabled (Active);
// those that came due while it was disabled are dead letters, which
// iwctl deadletters replay --subscription can queue again now.
func (s *Store) Enable(ctx context.Context, id string) (string, *Subscription, error) {
	return s.toggle(ctx, enableScript, id)
}

// kindKeys are the (kind set, ended set) pairs of a subscription's kinds:
// what enabling, disabling (luaDisable) and deleting it change.
func kindKeys(sub *Subscription) []string {
	keys := make([]string, 0, 2*len(sub.Events))
	for _, k := range sub.Events {
		keys = append(keys, keyKind(k), keyEnded(k))
	}
	return keys
}

func (s *Store) toggle(ctx context.Context, script *redis.Script, id string, args ...any) (string, *Subscription, error) {
	sub, err := s.Get(ctx, "", id)
	if err != nil {
		return "", nil, err
	}
	// A subscription's kinds never change after it is created, so the
	// kind sets read here are the ones the script must touch.
	keys := append([]string{keySub(id), keySpans(id)}, kindKeys(sub)...)
	res, err := script.Run(ctx, s.rdb, keys, append([]any{id}, args...)...).Text()
	if err != nil {
		return "", nil, fmt.Errorf("webhook: changing the status of %s: %w", id, err)
	}
	switch res {
	case "missing":
		return "", nil, ErrNotFound
	case SwitchDone, SwitchUnchanged:
	default:
		return "", nil, fmt.Errorf("webhook: changing the status of %s: unexpected answer %q", id, res)
	}
	sub, err = s.Get(ctx, "", id)
	if err != nil {
		return "", nil, err
	}
	return res, sub, nil
}
