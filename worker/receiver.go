package worker

import (
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The per-receiver bound (docs/decisions.md, "Per-receiver bound").
//
// Every subscription shares the worker's Concurrency slots, and an attempt
// may hold one for the whole Timeout. Anyone can register clients and aim
// their subscriptions at one receiver that never answers; without a bound
// that receiver takes every slot and every other subscriber waits for the
// timeouts. So a worker runs at most PerReceiver deliveries at once to one
// receiver (the URL's host:port, whoever's subscriptions point there), and a
// claimed delivery whose receiver is at its bound is handed back to the
// queue, unattempted, a little later: it holds no slot while it waits, it is
// not an attempt, and it stays in Redis under the usual lease rules, so a
// crash loses nothing.
//
// How much later: about when a slot of that receiver should free up. The
// deferred deliveries of one receiver are spaced by the time an attempt
// there takes divided by the bound, so they come back about as fast as the
// receiver finishes attempts: a fast host shared by many subscriptions is
// throttled by its own speed only, while a receiver that hangs gets a few
// claims a second rather than every waiting delivery re-claimed every few
// hundred milliseconds. No deferral is longer than the attempt timeout,
// by when every attempt in flight there has ended.

// deferMin is the least a deferred delivery waits before it is due again.
const deferMin = 100 * time.Millisecond

// Slow receivers share part of the slots (docs/decisions.md, "Per-receiver
// bound"). The bound is per host:port, and an attacker can name many: 8
// hanging ports took all 64 slots again. So a receiver is slow once an
// attempt there has taken slowAttempt, or half the attempt timeout if that
// is less (finished, or still running), and is remembered as slow for
// slowMemory; together, slow receivers hold at
// most half the slots, and the other half stays with receivers that
// answer. A receiver slow for the first time is found out only after
// slowAttempt, so its first attempts may take slots outside the share
// until they time out, once per host per slowMemory.
const (
	slowAttempt = 2 * time.Second
	slowMemory  = 10 * time.Minute
)

// receiverKey names the receiver of a subscription URL for the bound: its
// authority, lowercased, with the scheme's default port made explicit, so
// https://Hooks.example and https://hooks.example:443/other share one.
// Different names or ports of one machine are different receivers.
func receiverKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// The attempt fails at once without a connection; any key will do.
		return strings.ToLower(raw)
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		default:
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// receivers counts the deliveries this worker has in flight to each
// receiver. It is per process, like Concurrency: n workers let a receiver
// have n × limit deliveries in flight.
type receivers struct {
	limit  int
	maxGap time.Duration // the longest a deferral waits (the attempt timeout)
	// slowShare is how many attempts slow receivers may have in flight
	// together: half the worker's slots.
	slowShare int
	// slowAfter is how long an attempt takes at a slow receiver.
	slowAfter time.Duration

	mu sync.Mutex
	m  map[string]*receiverState
	// slowInFlight counts the attempts in flight that were given to a
	// receiver known to be slow.
	slowInFlight int
	// sweepAt is when the receivers remembered as slow are next looked
	// through for those to forget.
	sweepAt time.Time
}

type receiverState struct {
	// starts are the attempts in flight.
	starts []attempt
	// took is a moving average of how long attempts there took.
	took time.Duration
	// next is the earliest due time (scheduling clock) of the next
	// deferral, so deferred deliveries come back spaced out.
	next time.Time
	// slowUntil: an attempt here took slowAttempt or more; the receiver
	// counts as slow until then (wall clock).
	slowUntil time.Time
}

// attempt is one attempt in flight: when it began, and whether it counts
// in the slow receivers' share.
type attempt struct {
	at   time.Time
	slow bool
}

func newReceivers(limit, slots int, timeout time.Duration) *receivers {
	return &receivers{limit: limit, maxGap: timeout, slowShare: max(slots/2, 1), slowAfter: min(slowAttempt, timeout/2),
		m: map[string]*receiverState{}}
}

// slow reports whether st is a slow receiver at now: remembered as one, or
// with an attempt in flight for slowAfter already.
func (st *receiverState) slow(now time.Time, slowAfter time.Duration) bool {
	if st.slowUntil.After(now) {
		return true
	}
	for _, a := range st.starts {
		if now.Sub(a.at) >= slowAfter {
			return true
		}
	}
	return false
}

// acquire takes one of key's slots, reporting false when all are taken,
// or when key is slow and the slow receivers' share is taken. started must
// be handed to release.
func (r *receivers) acquire(key string) (started time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	started = time.Now()
	st := r.m[key]
	if st == nil {
		st = &receiverState{}
		r.m[key] = st
	}
	if len(st.starts) >= r.limit {
		return time.Time{}, false
	}
	slow := st.slow(started, r.slowAfter)
	if slow && r.slowInFlight >= r.slowShare {
		return time.Time{}, false
	}
	if slow {
		r.slowInFlight++
	}
	st.starts = append(st.starts, attempt{at: started, slow: slow})
	return started, true
}

// release gives back the slot acquire returned started for.
func (r *receivers) release(key string, started time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.m[key]
	if st == nil {
		return
	}
	for i, a := range st.starts {
		if a.at.Equal(started) {
			if a.slow {
				r.slowInFlight--
			}
			st.starts = append(st.starts[:i], st.starts[i+1:]...)
			break
		}
	}
	now := time.Now()
	took := now.Sub(started)
	if st.took == 0 {
		st.took = took
	} else {
		st.took += (took - st.took) / 4
	}
	if took >= r.slowAfter {
		st.slowUntil = now.Add(slowMemory)
	}
	if len(st.starts) == 0 && !st.slowUntil.After(now) {
		// Idle and not slow: whatever comes back finds a free slot, so
		// there is nothing to remember.
		delete(r.m, key)
	}
	if now.After(r.sweepAt) {
		// The map holds receivers with work in flight and those slow
		// within slowMemory: forget the rest now and then.
		for k, s := range r.m {
			if len(s.starts) == 0 && !s.slowUntil.After(now) {
				delete(r.m, k)
			}
		}
		r.sweepAt = now.Add(slowMemory)
	}
}

// deferUntil is when a delivery to key, found at its bound at now (the
// scheduling clock), should be due again.
func (r *receivers) deferUntil(key string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.m[key]
	if st == nil {
		// Its attempts ended since the bound was found: a slot is free.
		return now.Add(deferMin)
	}
	// How long an attempt there takes: the average of those finished, or
	// longer if the oldest one in flight has already run longer (a
	// receiver that just began to hang).
	took := st.took
	wall := time.Now()
	for _, a := range st.starts {
		took = max(took, wall.Sub(a.at))
	}
	// Jitter keeps several workers' deferrals of one receiver apart.
	due := now.Add(deferMin + rand.N(deferMin/2))
	if st.next.After(due) {
		due = st.next
	}
	if longest := now.Add(r.maxGap); due.After(longest) {
		// Every attempt in flight there has ended by then; spread the
		// rest over the second half of the timeout, and leave next where
		// it is so the following ones land here too.
		return now.Add(r.maxGap/2 + rand.N(r.maxGap/2+1))
	}
	st.next = due.Add(took / time.Duration(r.limit))
	return due
}
