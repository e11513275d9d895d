package tagcache

import (
	"fmt"
	"sync"
	"testing"
)

func newCache[K string | []byte](t *testing.T, maxCost int64) *Cache[K, string] {
	t.Helper()
	c, err := New[K, string](maxCost)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestPurgeAndDrop(t *testing.T) {
	testCases := []struct {
		desc    string
		purge   func(c *Cache[string, string])
		gone    []string
		kept    []string
		genMove bool
	}{
		{
			desc:    "purge drops the entries of its tags only",
			purge:   func(c *Cache[string, string]) { c.Purge([]string{"article:a"}) },
			gone:    []string{"/a", "/list"},
			kept:    []string{"/b"},
			genMove: true,
		},
		{
			desc:    "drop drops the same entries and lets fills in flight store",
			purge:   func(c *Cache[string, string]) { c.Drop([]string{"article:a"}) },
			gone:    []string{"/a", "/list"},
			kept:    []string{"/b"},
			genMove: false,
		},
		{
			desc:    "clear drops everything",
			purge:   func(c *Cache[string, string]) { c.Clear() },
			gone:    []string{"/a", "/b", "/list"},
			genMove: true,
		},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			c := newCache[string](t, 1<<20)
			gen := c.Generation()
			c.Set("/a", "a", []string{"article:a"}, 1, gen)
			c.Set("/b", "b", []string{"article:b"}, 1, gen)
			c.Set("/list", "list", []string{"list", "article:a", "article:b"}, 1, gen)
			c.Wait()
			test.purge(c)
			c.Wait()
			for _, k := range test.gone {
				if v, ok := c.Get(k); ok {
					t.Errorf("Get(%s) = %q after the purge, want a miss", k, v)
				}
			}
			for _, k := range test.kept {
				if _, ok := c.Get(k); !ok {
					t.Errorf("Get(%s) missed: an unrelated entry was dropped", k)
				}
			}
			// A fill that began before the purge.
			stored := c.Set("/late", "late", []string{"article:a"}, 1, gen)
			if stored == test.genMove {
				t.Errorf("Set with the old generation stored = %v, want %v", stored, !test.genMove)
			}
		})
	}
}

// TestReplacedKeysArePurged sets every key twice in quick succession,
// from two goroutines, so that ristretto often applies both Sets of a key
// as new (one is rejected as an update, the other stays), then purges
// their tag: whichever version stayed must be gone.
func TestReplacedKeysArePurged(t *testing.T) {
	c := newCache[[]byte](t, 1<<30)
	const n = 5000
	for round := range 5 {
		key := func(i int) []byte { return fmt.Appendf(nil, "/articles/%d/%d", round, i) }
		var wg sync.WaitGroup
		for v := range 2 {
			wg.Go(func() {
				for i := range n {
					c.Set(key(i), fmt.Sprint(v), []string{"list"}, 1, c.Generation())
				}
			})
		}
		wg.Wait()
		c.Wait()
		c.Purge([]string{"list"})
		c.Wait()
		stale := 0
		for i := range n {
			if _, ok := c.Get(key(i)); ok {
				stale++
			}
		}
		if stale > 0 {
			t.Fatalf("round %d: %d of %d entries survived the purge of their tag", round, stale, n)
		}
	}
}

// TestSharedSlotCostsAMissOnly: two tags that share a stamp slot purge
// each other's entries (the fixed stamp array keeps no index), which a
// fill of the key after the purge repairs; an entry of a tag in another
// slot is untouched, and an entry is never served stale.
func TestSharedSlotCostsAMissOnly(t *testing.T) {
	c := newCache[string](t, 1<<20)
	purged, sharing, other := "article:0", "", ""
	for i := 1; sharing == "" || other == ""; i++ {
		tag := fmt.Sprintf("article:%d", i)
		switch {
		case c.slot(tag) == c.slot(purged) && sharing == "":
			sharing = tag
		case c.slot(tag) != c.slot(purged) && other == "":
			other = tag
		}
	}
	gen := c.Generation()
	c.Set("/purged", "v", []string{purged}, 1, gen)
	c.Set("/sharing", "v", []string{sharing}, 1, gen)
	c.Set("/other", "v", []string{other}, 1, gen)
	c.Wait()
	c.Purge([]string{purged})
	for _, tc := range []struct {
		key  string
		want bool
	}{{"/purged", false}, {"/sharing", false}, {"/other", true}} {
		if _, ok := c.Get(tc.key); ok != tc.want {
			t.Errorf("Get(%s) hit = %v after the purge, want %v", tc.key, ok, tc.want)
		}
	}
	c.Set("/sharing", "v2", []string{sharing}, 1, c.Generation())
	c.Wait()
	if v, ok := c.Get("/sharing"); !ok || v != "v2" {
		t.Errorf("Get(/sharing) = %q, %v after a new fill, want v2", v, ok)
	}
}

// TestNothingMadeFromAPurgedEntrySurvives: a request that reads the
// generation and then an entry, and stores a second entry made from it (as
// the edge cache stores a coding made from a stored body), never leaves
// that second entry behind a purge of the first's tags, however its steps
// interleave with the purge's. Before the generation also moved after the
// deletes, a request that read it between the purge's first move and its
// deletes still found the old entry and stored the copy as new.
func TestNothingMadeFromAPurgedEntrySurvives(t *testing.T) {
	c := newCache[string](t, 1<<20)
	tags := []string{"article:a"}
	for round := range 2000 {
		old := fmt.Sprintf("v%d", round)
		c.Set("/a", old, tags, 1, c.Generation())
		c.Wait()
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 50 {
				gen := c.Generation()
				if v, ok := c.Get("/a"); ok && v == old {
					c.Set("/a gzip", "gzip of "+v, tags, 1, gen)
				}
			}
		})
		c.Purge(tags)
		wg.Wait()
		c.Wait()
		if v, ok := c.Get("/a gzip"); ok && v == "gzip of "+old {
			t.Fatalf("round %d: %q, made from the purged entry, is still stored", round, v)
		}
		c.Purge(tags) // the next round starts clean
	}
}
