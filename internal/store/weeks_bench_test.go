package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// BenchmarkWeekGuidedPages measures filtered pages through the store
// (the script and the records' MGET, no HTTP) on a generated archive,
// IW_WEEKS_BENCH_TREE (a content tree such as
// /work/scale-data/100000/content; skipped without it), with the week
// counters and without them (the walk from the start or the cursor), the
// two modes alternating twice, 200 pages of each kind per pass; and how
// long a sync takes to build the week counters of a store written
// without them. It prints p50 and p95 per kind and mode.
func BenchmarkWeekGuidedPages(b *testing.B) {
	tree := os.Getenv("IW_WEEKS_BENCH_TREE")
	if tree == "" {
		b.Skip("IW_WEEKS_BENCH_TREE names no content tree")
	}
	ctx := context.Background()
	c, err := content.Load(tree)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redistest.Start(b).Client()
	p := newPublisher(rdb)
	if err := p.SyncCorpus(ctx, c, nil); err != nil {
		b.Fatal(err)
	}
	deleteKeys(b, rdb, "iw:{content}:wk:*")
	if err := rdb.HDel(ctx, "iw:{content}:counts", "weeks").Err(); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := p.SyncRegistries(ctx, c, nil); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("%d articles: week counters built by a sync in %s\n", len(c.Articles), time.Since(t0).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(15, 7))
	type req struct {
		f      store.ArticleFilter
		offset int
		after  *store.Cursor
	}
	kinds := map[string][]req{}
	var names []string
	for range 200 {
		for k := 2; k <= 3; k++ {
			a := c.Articles[rng.IntN(len(c.Articles))]
			f := store.ArticleFilter{Section: a.Section, Audience: a.Audience[0]}
			if k == 3 && len(a.Countries) > 0 {
				f.Country = a.Countries[0]
			}
			add := func(kind string, r req) {
				if kinds[kind] == nil {
					names = append(names, kind)
				}
				kinds[kind] = append(kinds[kind], r)
			}
			add(fmt.Sprintf("%d values, offset < 200", k), req{f: f, offset: rng.IntN(200)})
			add(fmt.Sprintf("%d values, offset < 10,000", k), req{f: f, offset: rng.IntN(10_000)})
			add(fmt.Sprintf("%d values, cursor at any depth", k), req{f: f, after: &store.Cursor{PublishedAt: a.PublishedAt, Slug: a.Slug}})
		}
	}
	slices.Sort(names)
	for pass := range 4 {
		mode := "week counters"
		if pass%2 == 1 {
			mode = "walk without"
			rdb.HDel(ctx, "iw:{content}:counts", "weeks")
		} else {
			rdb.HSet(ctx, "iw:{content}:counts", "weeks", "1")
		}
		for _, kind := range names {
			var took []time.Duration
			for _, r := range kinds[kind] {
				t := time.Now()
				if _, err := p.Store.Articles(ctx, r.f, r.offset, 20, r.after); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t))
			}
			slices.Sort(took)
			fmt.Printf("pass %d, %-13s %-32s p50 %6.2f ms  p95 %6.2f ms\n", pass+1, mode+":", kind,
				ms(took[len(took)/2]), ms(took[len(took)*95/100]))
		}
	}
	rdb.HSet(ctx, "iw:{content}:counts", "weeks", "1")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
