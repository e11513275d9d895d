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

// luaDisable is the Lua function that disables a subscription: the one
// state change behind every way a subscription stops, an operator's
// (disableScript) and the worker's after a 410 or the failing rule
// (finishScript's FinishDisable), which embed it, so a disabled
// subscription is stored alike whichever disabled it. It takes the id out
// of the kind sets kinds[first..] (no new delivery is made for it) and, if
// it was active, sets status, disabled_reason and disabled_at: 'done'. One
// already disabled keeps its reason and time, the first decision standing
// (docs/decisions.md, operator commands): 'unchanged'. The kind sets lose
// it whatever its status, so a run repeated mends them too. A deleted one
// is 'missing' and nothing is written (no stub hash). The failure clock
// (failing_since) is left alone: it only decides the auto-disable of an
// active subscription, and enabling clears it. The caller passes the kind
// sets of the subscription's kinds, which never change after it is
// created, in the {subs} slot like the subscription.
const luaDisable = `
local function disableSub(sub, id, reason, now, kinds, first)
  local st = redis.call('HGET', sub, 'status')
  if not st then return 'missing' end
  for i = first, #kinds do redis.call('SREM', kinds[i], id) end
  if st ~= 'active' then return 'unchanged' end
  redis.call('HSET', sub, 'status', 'disabled', 'disabled_reason', reason, 'disabled_at', now)
  return 'done'
end
`

// disableScript disables a subscription (luaDisable). KEYS: sub, then its
// kind sets. ARGV: id, reason, now ms. Its pending deliveries are not
// touched here: the worker dead-letters each as it comes due
// (FinishShelve).
var disableScript = redis.NewScript(luaDisable + `
return disableSub(KEYS[1], ARGV[1], ARGV[2], ARGV[3], KEYS, 2)
`)

// enableScript makes a disabled subscription active again. KEYS: sub,
// then its kind sets. ARGV: id. The failure clock restarts, so a
// subscription disabled for failing is not disabled again by its first
// failure.
var enableScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return 'missing' end
for i = 2, #KEYS do redis.call('SADD', KEYS[i], ARGV[1]) end
if st == 'active' then return 'unchanged' end
redis.call('HSET', KEYS[1], 'status', 'active')
redis.call('HDEL', KEYS[1], 'disabled_reason', 'disabled_at', 'failing_since')
return 'done'
`)

// Disable stops deliveries to a subscription (an operator's decision, for
// a receiver that abuses or is compromised): it leaves the fan-out of every
// kind at once, so events published from then on make no delivery for it,
// and the worker turns its pending deliveries into dead letters as they
// come due, without attempting them. The owner sees status "disabled". A
// subscription already disabled (by an operator, a 410 or the failing
// rule) keeps its reason and is SwitchUnchanged. The subscription and its
// keys are in the {subs} slot: one script.
func (s *Store) Disable(ctx context.Context, id, reason string, now time.Time) (string, *Subscription, error) {
	return s.toggle(ctx, disableScript, id, reason, msec(now))
}

// Enable makes a disabled subscription active again, whatever disabled it:
// it rejoins the fan-out of its kinds, so events published from then on
// are delivered, and deliveries still pending are attempted as they come
// due. Events published while it was disabled made no delivery for it;
// those that came due while it was disabled are dead letters, which
// iwctl deadletters replay --subscription can queue again now.
func (s *Store) Enable(ctx context.Context, id string) (string, *Subscription, error) {
	return s.toggle(ctx, enableScript, id)
}

// kindKeys are the kind sets of a subscription's kinds: what enabling and
// disabling it (luaDisable) add it to or take it out of.
func kindKeys(sub *Subscription) []string {
	keys := make([]string, len(sub.Events))
	for i, k := range sub.Events {
		keys[i] = keyKind(k)
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
	keys := append([]string{keySub(id)}, kindKeys(sub)...)
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
