package ratelimitheaders

import "math/rand/v2"

// clientTable holds one shard's counters by client hash: open addressing
// with linear probing in a power-of-two array of slots, deletion by
// backward shift (Knuth, TAOCP vol. 3, 6.4, Algorithm R).
//
// A Go map was used before. A full shard evicts a client for every
// newcomer, and a Go map keeps a tombstone for each deleted entry until it
// grows, which a full shard never does: lookups of absent keys (every
// newcomer's) probed past more and more of them, and a fresh client cost
// several microseconds (BenchmarkServeFreshClients). Backward-shift
// deletion leaves no tombstones, so a lookup costs the same after a billion
// evictions as after none; the slots hold no pointers, so the collector
// never scans them; and a client costs 32 bytes a slot at a load between
// 3/8 and 3/4, 43 to 85 bytes.
type clientTable struct {
	slots []slot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

// slot is one client: hash 0 marks an empty slot (a client whose hash is 0
// is stored as 1, sharing its counter with that one client: a chance of
// 2^-64).
type slot struct {
	hash uint64
	c    counter
}

const minTableSlots = 16

func newClientTable() clientTable {
	return clientTable{slots: make([]slot, minTableSlots), shift: 64 - 4}
}

func tableKey(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// home is the preferred slot of h: Fibonacci hashing of the whole hash,
// since its low bits choose the shard and the sketch's columns.
func (t *clientTable) home(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> t.shift }

func (t *clientTable) len() int { return t.n }

// find returns the index of h's slot, or of the empty slot where it would
// go.
func (t *clientTable) find(h uint64) (uint64, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(h); ; i = (i + 1) & mask {
		switch t.slots[i].hash {
		case h:
			return i, true
		case 0:
			return i, false
		}
	}
}

// get returns the counter of h.
func (t *clientTable) get(h uint64) (counter, bool) {
	i, ok := t.find(tableKey(h))
	return t.slots[i].c, ok
}

// put sets the counter of h, adding h when absent.
func (t *clientTable) put(h uint64, c counter) {
	h = tableKey(h)
	i, ok := t.find(h)
	if ok {
		t.slots[i].c = c
		return
	}
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
		i, _ = t.find(h)
	}
	t.slots[i] = slot{hash: h, c: c}
	t.n++
}

func (t *clientTable) grow() {
	old := t.slots
	t.slots = make([]slot, 2*len(old))
	t.shift--
	for _, s := range old {
		if s.hash != 0 {
			i, _ := t.find(s.hash)
			t.slots[i] = s
		}
	}
}

// delete removes h, moving back the entries after it that would no longer
// be found past the hole.
func (t *clientTable) delete(h uint64) {
	i, ok := t.find(tableKey(h))
	if !ok {
		return
	}
	mask := uint64(len(t.slots) - 1)
	for j := (i + 1) & mask; t.slots[j].hash != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		k := t.home(t.slots[j].hash)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
}

// sample calls fn with up to n clients, taken in slot order from a random
// place, until fn returns false.
func (t *clientTable) sample(n int, fn func(h uint64, c counter) bool) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := rand.Uint64() & mask
	for seen := 0; seen < n && seen < t.n; i = (i + 1) & mask {
		if s := &t.slots[i]; s.hash != 0 {
			seen++
			if !fn(s.hash, s.c) {
				return
			}
		}
	}
}
