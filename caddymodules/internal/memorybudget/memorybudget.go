// Package memorybudget sets the edge's soft memory limit
// (runtime/debug.SetMemoryLimit) from what its modules are configured to
// hold, so that the heap stays near what is live however lax GOGC is.
//
// The edge runs with a high GOGC (cmd/edge): cheap on a small heap, but a
// heap that is mostly a full cache then grows to five times what is live
// (docs/edge-gateway.md, "Memory"). The limit is
//
//	Base + Σ reservations
//
// where the edge cache reserves its max_bytes and the rate limiter its
// max_clients × BytesPerClient; with make run's defaults (256 MiB, a
// million clients) that is 256 + 122 + 96 = 474 MiB. It never rises above
// the limit the process started with (Caddy sets 90% of the container's or
// machine's memory), and GOMEMLIMIT in the environment overrides it.
//
// Reservations follow the shared state they stand for: taken when a usage
// pool creates it, released when the pool destroys it, so a config reload
// that changes the cache size moves the limit with it.
package memorybudget

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// Base is what the limit grants beyond the reservations: Caddy's own state,
// connections, requests in flight and the garbage between collections. The
// process's RSS also holds what the limit does not count (the binary's
// code and data, about 30 MiB), so 96 MiB keeps make run's edge under
// 512 MiB of RSS; 128 MiB let it reach 500 MiB under make bench-traffic.
const Base int64 = 96 << 20

// BytesPerClient is what a rate limiter reserves per tracked client: the
// bound its memory test holds it to (docs/edge-gateway.md, rate limit).
const BytesPerClient = 128

var (
	mu       sync.Mutex
	reserved = map[string]int64{}
	// ceiling is the limit before the first reservation; 0 until read.
	ceiling int64
)

// overridden reports whether the operator chose the limit.
func overridden() bool { return os.Getenv("GOMEMLIMIT") != "" }

// Reserve records that name holds up to bytes, and applies the new limit.
// Reserving a name again replaces its amount.
func Reserve(name string, bytes int64) {
	mu.Lock()
	defer mu.Unlock()
	reserved[name] = bytes
	apply()
}

// Release forgets name's reservation and applies the new limit.
func Release(name string) {
	mu.Lock()
	defer mu.Unlock()
	delete(reserved, name)
	apply()
}

// Limit is the limit the reservations ask for (Base + their sum, at most
// the limit the process started with), whether or not it is applied.
func Limit() int64 {
	mu.Lock()
	defer mu.Unlock()
	return limit()
}

func limit() int64 {
	if ceiling == 0 {
		ceiling = debug.SetMemoryLimit(-1)
	}
	if len(reserved) == 0 {
		return ceiling
	}
	total := Base
	for _, b := range reserved {
		total += b
	}
	return min(total, ceiling, math.MaxInt64)
}

// apply sets the limit, unless GOMEMLIMIT was given. mu is held.
func apply() {
	if overridden() {
		return
	}
	debug.SetMemoryLimit(limit())
}
