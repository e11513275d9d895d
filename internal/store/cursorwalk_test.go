package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// walkArticles is the archive TestCursorWalkUnderChurn pages through:
// IW_CURSOR_WALK_ARTICLES, else 20,000, or 5,000 with -short. make
// bench-scale runs it with 100,000 (without the race detector, which makes
// that size take minutes).
func walkArticles(t *testing.T) int {
	if v := os.Getenv("IW_CURSOR_WALK_ARTICLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("IW_CURSOR_WALK_ARTICLES=%q is not a number of at least 100", v)
		}
		return n
	}
	if testing.Short() {
		return 5000
	}
	return 20_000
}

// walkArticle is the i-th article of the walked archive: one every 37
// minutes going back (20,000 span 66 weeks, so walks of filtered listings
// cross many weeks of their week counters), every tenth sharing its
// second with the previous one (ties are ordered by slug), filters
// cycling as in contenttest.
func walkArticle(i int, prefix string, at time.Time) *content.Article {
	a := contenttest.Article(i)
	a.Slug = fmt.Sprintf("%s-%07d", prefix, i)
	a.PublishedAt = at
	a.Body = "Body.\n"
	return a
}

// TestCursorWalkUnderChurn pages by cursor through a large archive, a
// hundred articles a page, unfiltered, by section, and on two and three
// values, while other articles are published (dated anywhere in the
// archive) and retracted. Every
// article that stayed published must be seen exactly once, none twice, and
// once the churn stops the totals must be exact.
func TestCursorWalkUnderChurn(t *testing.T) {
	n := walkArticles(t)
	ctx := context.Background()
	p := newPublisher(redistest.New(t).Client())
	newest := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	dateOf := func(i int) time.Time { return newest.Add(-time.Duration(i-i/10) * 37 * time.Minute) }
	c := contenttest.Corpus(0)
	for i := range n {
		c.Articles = append(c.Articles, walkArticle(i, "walk", dateOf(i)))
	}
	syncCorpus(t, p, c)

	var (
		mu        sync.Mutex
		retracted = map[string]bool{}
		added     = map[string]*content.Article{}
		stop      = make(chan struct{})
		churned   = make(chan error, 1)
	)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for k := 0; ; k++ {
			select {
			case <-stop:
				churned <- nil
				return
			default:
			}
			if k%2 == 0 {
				victim := c.Articles[rng.IntN(n)].Slug
				if _, err := p.Retract(ctx, victim, "Churn."); err != nil {
					churned <- err
					return
				}
				mu.Lock()
				retracted[victim] = true
				mu.Unlock()
				continue
			}
			a := walkArticle(k, "churn", dateOf(rng.IntN(n+100)-50))
			if _, err := p.SyncArticle(ctx, a); err != nil {
				churned <- err
				return
			}
			mu.Lock()
			added[a.Slug] = a
			mu.Unlock()
		}
	}()

	walk := func(f store.ArticleFilter) map[string]int {
		seen := map[string]int{}
		var after *store.Cursor
		for pages := 0; ; pages++ {
			page, err := p.Store.Articles(ctx, f, 0, 100, after)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range page.Articles {
				seen[rec.Slug]++
			}
			if !page.More {
				return seen
			}
			if len(page.Articles) == 0 || pages > 2*n {
				t.Fatalf("page %d after %v: more but no articles", pages, after)
			}
			last := page.Articles[len(page.Articles)-1]
			after = &store.Cursor{PublishedAt: last.PublishedAt, Slug: last.Slug}
		}
	}
	section := content.Sections[0]
	// Filters on two and three values, which follow the week counters
	// (weeks.go); walkArticle's values cycle, so each matches one article
	// in twelve, and in sixty.
	two := store.ArticleFilter{Section: section, Audience: content.Audiences[0]}
	three := store.ArticleFilter{Section: section, Audience: content.Audiences[0], Country: contenttest.Countries[0].Code}
	all, bySection := walk(store.ArticleFilter{}), walk(store.ArticleFilter{Section: section})
	byTwo, byThree := walk(two), walk(three)
	close(stop)
	if err := <-churned; err != nil {
		t.Fatalf("churn: %v", err)
	}

	check := func(what string, seen map[string]int, in func(*content.Article) bool) {
		t.Helper()
		for slug, times := range seen {
			if times > 1 {
				t.Errorf("%s: %s seen %d times", what, slug, times)
			}
		}
		missed := 0
		for _, a := range c.Articles {
			if in(a) && !retracted[a.Slug] && seen[a.Slug] != 1 {
				if missed++; missed <= 5 {
					t.Errorf("%s: %s stayed published but was seen %d times", what, a.Slug, seen[a.Slug])
				}
			}
		}
		if missed > 0 {
			t.Errorf("%s: %d articles that stayed published were missed", what, missed)
		}
	}
	check("unfiltered walk", all, func(*content.Article) bool { return true })
	check("walk of section "+section, bySection, func(a *content.Article) bool { return a.Section == section })
	check(fmt.Sprintf("walk of %+v", two), byTwo, func(a *content.Article) bool { return matches(a, two) })
	check(fmt.Sprintf("walk of %+v", three), byThree, func(a *content.Article) bool { return matches(a, three) })
	t.Logf("%d articles walked; %d retracted and %d published meanwhile", n, len(retracted), len(added))
	if len(retracted) == 0 || len(added) == 0 {
		t.Error("no churn happened during the walk")
	}

	// Totals are exact once the churn has stopped.
	want := n - len(retracted) + len(added)
	listed := func(f store.ArticleFilter) int {
		k := 0
		for _, a := range c.Articles {
			if matches(a, f) && !retracted[a.Slug] {
				k++
			}
		}
		for _, a := range added {
			if matches(a, f) {
				k++
			}
		}
		return k
	}
	for _, tc := range []struct {
		desc string
		f    store.ArticleFilter
		want int
	}{
		{desc: "all", want: want},
		{desc: "section " + section, f: store.ArticleFilter{Section: section}, want: listed(store.ArticleFilter{Section: section})},
		{desc: "two values", f: two, want: listed(two)},
		{desc: "three values", f: three, want: listed(three)},
	} {
		page, err := p.Store.Articles(ctx, tc.f, 9000, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != tc.want {
			t.Errorf("%s: total %d, want %d", tc.desc, page.Total, tc.want)
		}
	}
	if got, err := p.Store.ArticleCount(ctx); err != nil || got != int64(want) {
		t.Errorf("ArticleCount = %d, %v; want %d", got, err, want)
	}
}
