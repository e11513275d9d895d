package ratelimitheaders

import (
	"math/rand/v2"
	"testing"
)

// The table agrees with a Go map over a long run of random puts, deletes
// and lookups, in a small hash space so that probe runs collide, wrap
// around the end of the array and are shifted back on deletion.
func TestClientTableMatchesMap(t *testing.T) {
	tests := []struct {
		desc  string
		space uint64 // hashes are drawn from [0, space)
		limit int    // deletes keep the table at most this full
	}{
		{desc: "few keys, hash 0 included", space: 64, limit: 40},
		{desc: "many keys, growth", space: 1 << 20, limit: 50_000},
		{desc: "a full table evicting", space: 1 << 40, limit: 3000},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			tab := newClientTable()
			ref := map[uint64]counter{}
			for i := range 300_000 {
				h := r.Uint64N(tc.space) * 0x100000001b3 // spread, keep collisions
				switch {
				case len(ref) >= tc.limit || r.IntN(4) == 0:
					// Delete a present key (sampled as the limiter does)
					// or an absent one.
					victim := h
					tab.sample(1, func(k uint64, _ counter) bool { victim = k; return false })
					if victim == 1 && ref[0] != (counter{}) {
						victim = 0
					}
					tab.delete(victim)
					delete(ref, victim)
				default:
					c := counter{pending: uint32(i), window: 7}
					tab.put(h, c)
					ref[h] = c
				}
				if tab.len() != len(ref) {
					t.Fatalf("step %d: %d entries, want %d", i, tab.len(), len(ref))
				}
			}
			for h, want := range ref {
				if got, ok := tab.get(h); !ok || got != want {
					t.Fatalf("get(%x) = %+v, %v; want %+v", h, got, ok, want)
				}
			}
			for range 10_000 {
				h := r.Uint64()
				if _, in := ref[h]; in {
					continue
				}
				if _, ok := tab.get(h); ok {
					t.Fatalf("get(%x) found a key never put", h)
				}
			}
		})
	}
}
