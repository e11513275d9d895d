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
// max_clients × BytesPerClient; with make run's defaults (a 192 MiB cache,
// which reserves 200 MiB with its index and its dictionary of fields, and a
// million clients) that is 200 + 122 + 142 = 464 MiB. It never rises above
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
// connections, requests in flight and the garbage between collections.
//
// The garbage room sets how often a collection starts (each time the
// requests allocated what the limit leaves above the live heap), so it is
// traded against the cache's size at a given limit. While the cache was
// made of heap objects each collection marked all of it, and 208 MiB of
// room beside a 128 MiB cache served 1.6 times the requests per CPU-second
// of 96 MiB beside 256 MiB. Its records now sit in pointer-free rings the
// collector does not follow, so collections are cheap and the tail's misses
// cost more than the extra collections: at the same 462 MiB limit, 142 MiB
// beside a 192 MiB cache took 4–5 % less of the edge's CPU a request under
// make bench-traffic than 208 MiB beside 128 MiB, at the same single-URL
// cost; 76 MiB beside 256 MiB made the single URL dearer (docs/edge-gateway.md,
// "Memory"). The process's RSS also holds what the limit does not count
// (the binary's code and data, about 30 MiB): make run's limit of 464 MiB
// keeps its edge under 512 MiB of RSS.
const Base int64 = 142 << 20

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
