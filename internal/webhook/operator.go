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

// disableScript disables a subscription. KEYS: sub, then its kind sets.
// ARGV: id, reason, now ms. The kind sets lose it whether or not it was
// active, so a run repeated after a crash mends them too. Its pending
// deliveries are not touched here: the worker dead-letters each as it
// comes due (FinishShelve).
var disableScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return 'missing' end
for i = 2, #KEYS do redis.call('SREM', KEYS[i], ARGV[1]) end
if st ~= 'active' then return 'unchanged' end
redis.call('HSET', KEYS[1], 'status', 'disabled', 'disabled_reason', ARGV[2], 'disabled_at', ARGV[3])
return 'done'
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

func (s *Store) toggle(ctx context.Context, script *redis.Script, id string, args ...any) (string, *Subscription, error) {
	sub, err := s.Get(ctx, "", id)
	if err != nil {
		return "", nil, err
	}
	// A subscription's kinds never change after it is created, so the
	// kind sets read here are the ones the script must touch.
	keys := []string{keySub(id)}
	for _, k := range sub.Events {
		keys = append(keys, keyKind(k))
	}
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
