package ratelimitheaders

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// PooledClock is the time source of the limiters a handler configured as h
// takes from the usage pool, put there before Caddy provisions the
// handler. It exists for tests that run the handler from a Caddyfile and
// must choose where in a window they run rather than leave it to the wall
// clock; every other limiter reads time.Now.
type PooledClock struct {
	keys []string
}

// PoolLimitersWithClock creates, in the usage pool, the limiters (of the
// policy and of registration) a handler configured as h will take, reading
// now. h is the handler's configuration as Caddy would load it (its
// defaults are filled in here).
// Release the returned PooledClock when the test ends.
func PoolLimitersWithClock(h Handler, now func() time.Time) (*PooledClock, error) {
	h.setDefaults()
	pc := &PooledClock{}
	for _, p := range []struct {
		policy string
		window time.Duration
	}{{h.Policy, time.Duration(h.Window)}, {"register", time.Duration(h.RegisterWindow)}} {
		key := h.limiterKey(p.policy, p.window)
		_, loaded, err := limiters.LoadOrNew(key, func() (caddy.Destructor, error) {
			return h.newPooledLimiter(p.window, now)
		})
		if err != nil {
			pc.Release()
			return nil, err
		}
		pc.keys = append(pc.keys, key)
		if loaded {
			pc.Release()
			return nil, fmt.Errorf("ratelimitheaders: the %s limiter is already pooled", p.policy)
		}
	}
	return pc, nil
}

// Used reports whether a provisioned handler took every limiter: false
// means its configuration differs from the one given, and it reads the
// wall clock.
func (pc *PooledClock) Used() bool {
	for _, key := range pc.keys {
		if n, ok := limiters.References(key); !ok || n < 2 {
			return false
		}
	}
	return true
}

// Release gives the limiters back to the pool.
func (pc *PooledClock) Release() {
	for _, key := range pc.keys {
		limiters.Delete(key)
	}
	pc.keys = nil
}
