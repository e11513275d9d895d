package tagcache

import (
	"sync"
	"testing"

	"github.com/dgraph-io/ristretto/v2"
)

// These tests pin down the ristretto v2 behaviour the cache is built on
// (docs/decisions.md, "A tagged cache that never untags in callbacks"):
// ristretto applies new keys later, in one goroutine, and its OnReject and
// OnEvict callbacks run there, interleaved with the Sets of other
// goroutines. A callback for key k therefore does not mean that k is gone:
// another version of k may be stored, or already Set. An index that
// untagged k in the callback would lose a live entry, which a purge would
// then miss.

// gate holds ristretto's applying goroutine inside a callback until the
// test releases it, so that what other goroutines do meanwhile is certain
// to happen while the callback runs.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) hold() {
	close(g.entered)
	<-g.release
}

// calls records the values a callback received, in order.
type calls struct {
	mu     sync.Mutex
	values []string
}

func (c *calls) add(v string) {
	c.mu.Lock()
	c.values = append(c.values, v)
	c.mu.Unlock()
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.values...)
}

// TestRistrettoRejectNamesKeyThatStaysStored: two Sets of one new key
// queue up before ristretto applies them. The first is stored; the second
// is rejected, and OnReject names key k while k's first version stays in
// the cache.
func TestRistrettoRejectNamesKeyThatStaysStored(t *testing.T) {
	g := newGate()
	var rejected calls
	rc, err := ristretto.NewCache(&ristretto.Config[string, string]{
		NumCounters:        100,
		MaxCost:            10,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnReject: func(it *ristretto.Item[string]) {
			if it.Value == "blocker" {
				g.hold()
				return
			}
			rejected.add(it.Value)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()

	// Larger than the whole cache: rejected at once, which holds the
	// applying goroutine in OnReject.
	rc.Set("blocker", "blocker", 100)
	<-g.entered
	rc.Set("k", "v1", 1) // queued: k is not stored yet
	rc.Set("k", "v2", 1) // queued too, behind v1
	close(g.release)
	rc.Wait()

	if got := rejected.get(); len(got) != 1 || got[0] != "v2" {
		t.Fatalf("OnReject got %q, want [v2]", got)
	}
	if v, ok := rc.Get("k"); !ok || v != "v1" {
		t.Fatalf("Get(k) = %q, %v after OnReject(k, v2); want v1 still stored", v, ok)
	}
}

// TestRistrettoEvictArrivesAfterReplacementSet: ristretto evicts k=v1 to
// make room; while its OnEvict runs, another goroutine Sets k=v2. The
// callback for v1 runs after the replacement was Set: an index updated for
// v2 before the Set would be undone by untagging k for v1.
func TestRistrettoEvictArrivesAfterReplacementSet(t *testing.T) {
	g := newGate()
	var evicted calls
	rc, err := ristretto.NewCache(&ristretto.Config[string, string]{
		NumCounters:        100,
		MaxCost:            1,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnEvict: func(it *ristretto.Item[string]) {
			evicted.add(it.Value)
			if it.Value == "v1" {
				g.hold()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()

	rc.Set("k", "v1", 1)
	rc.Wait()
	// No room for a second entry: admitting it evicts k (the only
	// candidate, and no more used than the newcomer).
	rc.Set("other", "x", 1)
	<-g.entered
	// OnEvict(k, v1) is running. Set the replacement now: it is accepted
	// (queued), and only then does the callback for v1 return.
	if !rc.Set("k", "v2", 1) {
		t.Fatal("Set(k, v2) dropped")
	}
	close(g.release)
	rc.Wait()

	if got := evicted.get(); len(got) == 0 || got[0] != "v1" {
		t.Fatalf("OnEvict got %q, want v1 first", got)
	}
}
