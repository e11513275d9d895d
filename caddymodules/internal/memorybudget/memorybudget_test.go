package memorybudget

import (
	"runtime/debug"
	"testing"
)

// current is the limit the runtime applies now.
func current() int64 { return debug.SetMemoryLimit(-1) }

func TestLimitFollowsReservations(t *testing.T) {
	start := current()
	// The process starts with a ceiling far above what is reserved here.
	const gib = 1 << 30
	debug.SetMemoryLimit(64 * gib)
	t.Cleanup(func() { debug.SetMemoryLimit(start); ceiling = 0 })
	ceiling = 0

	tests := []struct {
		desc string
		do   func()
		want int64
	}{
		{"a cache of 256 MiB", func() { Reserve("cache", 256<<20) }, Base + 256<<20},
		{"and a limiter of a million clients", func() { Reserve("limiter", 1_000_000*BytesPerClient) }, Base + 256<<20 + 128_000_000},
		{"the cache reloaded at 1 GiB", func() { Reserve("cache", gib) }, Base + gib + 128_000_000},
		{"a reservation above the ceiling is cut to it", func() { Reserve("huge", 100*gib) }, 64 * gib},
		{"released again", func() { Release("huge") }, Base + gib + 128_000_000},
		{"nothing reserved: the limit the process started with", func() { Release("cache"); Release("limiter") }, 64 * gib},
	}
	for _, tc := range tests {
		tc.do()
		if got := current(); got != tc.want {
			t.Fatalf("%s: limit %d, want %d", tc.desc, got, tc.want)
		}
		if got := Limit(); got != tc.want {
			t.Fatalf("%s: Limit() %d, want %d", tc.desc, got, tc.want)
		}
	}
}

func TestGOMEMLIMITOverrides(t *testing.T) {
	start := current()
	t.Cleanup(func() { debug.SetMemoryLimit(start); ceiling = 0; Release("cache") })
	t.Setenv("GOMEMLIMIT", "3GiB")
	debug.SetMemoryLimit(3 << 30) // what the runtime read from it at start
	ceiling = 0
	Reserve("cache", 256<<20)
	if got := current(); got != 3<<30 {
		t.Fatalf("limit %d with GOMEMLIMIT=3GiB, want it untouched", got)
	}
}
