package store_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/store"
)

func TestWeekGuidedPages(t *testing.T) { onBackends(t, testWeekGuidedPages) }

// testWeekGuidedPages compares pages of listings filtered on two and three
// values, which follow the week counters, with the listing computed here
// from the articles: by offset (within a week, at week boundaries, past
// the end), by cursor (a whole walk, and single pages after articles that
// match or not, or were retracted), with exact totals and next pages; for
// articles dated on the first and last second of weeks, weeks with no
// articles and more weeks than one counters hash holds; after a first
// publish, retractions, edits that move articles between weeks and
// values, re-publishes, and for a store whose counters are missing, both
// before the next sync (pages walk without them) and after it rebuilt
// them. The counters themselves must equal counts made here.
func testWeekGuidedPages(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	p := newPublisher(rdb)
	rng := rand.New(rand.NewPCG(15, 26))
	const week = 7 * 24 * 3600
	// dateIn is a date in week w: its first second, its last, or any.
	dateIn := func(w int64, i int) time.Time {
		switch i % 3 {
		case 0:
			return time.Unix(w*week, 0).UTC()
		case 1:
			return time.Unix((w+1)*week-1, 0).UTC()
		}
		return time.Unix(w*week+rng.Int64N(week), 0).UTC()
	}
	// Weeks 2,700 to 2,899 (2021 to 2025): over three counters hashes,
	// one week in five empty.
	randomWeek := func() int64 {
		w := int64(2700 + rng.IntN(200))
		if w%5 == 3 {
			w--
		}
		return w
	}
	c := contenttest.Corpus(0)
	countries := contenttest.Countries
	for i := range 1500 {
		a := contenttest.Article(i)
		a.PublishedAt = dateIn(randomWeek(), i)
		if i%4 == 3 {
			a.PublishedAt = c.Articles[i-1].PublishedAt // ties, ordered by slug
		}
		if i%3 == 0 {
			a.Audience = []string{content.Audiences[i%4], content.Audiences[(i+1)%4]}
		}
		if i%5 == 0 {
			a.Countries = []string{countries[i%5].Code, countries[(i+2)%5].Code}
		}
		c.Articles = append(c.Articles, a)
	}
	syncCorpus(t, p, c)
	retracted := map[string]bool{}

	var filters []store.ArticleFilter
	seen := map[store.ArticleFilter]bool{}
	for i := 0; len(filters) < 14; i += 37 {
		a := c.Articles[i%len(c.Articles)]
		f := []store.ArticleFilter{
			{Section: a.Section, Audience: a.Audience[0]},
			{Audience: a.Audience[len(a.Audience)-1], Country: a.Countries[0]},
			{Section: a.Section, Country: a.Countries[len(a.Countries)-1]},
			{Section: a.Section, Audience: a.Audience[0], Country: a.Countries[0]},
		}[i%4]
		if !seen[f] {
			seen[f] = true
			filters = append(filters, f)
		}
	}
	filters = append(filters, store.ArticleFilter{Section: "mandates", Audience: "ap", Country: "de"})

	// after reports whether a comes after the cursor in a listing.
	after := func(a *content.Article, cur store.Cursor) bool {
		return a.PublishedAt.Before(cur.PublishedAt) || a.PublishedAt.Equal(cur.PublishedAt) && a.Slug > cur.Slug
	}
	check := func(stage string, weeksReady bool) {
		t.Helper()
		ready, err := rdb.HExists(ctx, "iw:{content}:counts", "weeks").Result()
		if err != nil || ready != weeksReady {
			t.Fatalf("%s: week counters ready = %v (%v), want %v", stage, ready, err, weeksReady)
		}
		var live []*content.Article
		for _, a := range c.Articles {
			if !retracted[a.Slug] {
				live = append(live, a)
			}
		}
		slices.SortFunc(live, func(a, b *content.Article) int {
			if c := b.PublishedAt.Compare(a.PublishedAt); c != 0 {
				return c
			}
			return strings.Compare(a.Slug, b.Slug)
		})
		if weeksReady {
			checkWeekCounters(t, rdb, stage, live)
		}
		for _, f := range filters {
			var all []*content.Article
			for _, a := range live {
				if matches(a, f) {
					all = append(all, a)
				}
			}
			names := func(list []*content.Article) []string {
				out := []string{}
				for _, a := range list {
					out = append(out, a.Slug)
				}
				return out
			}
			offsets := []int{0, 1, 2, 6, 7, 8, 19, 20, 21, len(all) / 3, len(all) / 2, len(all) - 2, len(all) - 1, len(all), len(all) + 1}
			for range 4 {
				offsets = append(offsets, rng.IntN(len(all)+1))
			}
			for _, limit := range []int{1, 7, 20} {
				for _, offset := range offsets {
					if offset >= 0 {
						checkOffsetPage(t, p, fmt.Sprintf("%s: %+v", stage, f), f, offset, limit, names(all))
					}
				}
			}
			// A whole cursor walk.
			walked := walkByCursor(t, p, f, 7, len(all)+2)
			if exp := names(all); !slices.Equal(walked, exp) {
				t.Errorf("%s: %+v: cursor walk gave %d articles %v, want %d %v", stage, f, len(walked), walked, len(exp), exp)
			}
			// Pages after any article, listed in f or not, retracted or
			// not, after a date between articles, and after the last few
			// of f, where a page ends exactly with the listing.
			var cursors []*content.Article
			for range 12 {
				cursors = append(cursors, c.Articles[rng.IntN(len(c.Articles))])
			}
			cursors = append(cursors, all[max(0, len(all)-8):]...)
			for k, a := range cursors {
				cur := store.Cursor{PublishedAt: a.PublishedAt, Slug: a.Slug}
				if k == 0 {
					cur.Slug = "zzz"
				}
				var exp []*content.Article
				for _, b := range all {
					if after(b, cur) {
						exp = append(exp, b)
					}
				}
				for _, limit := range []int{1, 5} {
					page, err := p.Store.Articles(ctx, f, 0, limit, &cur)
					if err != nil {
						t.Fatal(err)
					}
					want := names(exp[:min(limit, len(exp))])
					if got := slugsOf(page); !slices.Equal(got, want) || page.Total != len(all) || page.More != (limit < len(exp)) {
						t.Errorf("%s: %+v after %v (retracted %v), limit %d: got %v total %d more %v; want %v total %d more %v",
							stage, f, cur, retracted[a.Slug], limit, got, page.Total, page.More, want, len(all), limit < len(exp))
					}
				}
			}
		}
	}
	check("first publish", true)

	for i := 0; i < len(c.Articles); i += 7 {
		if _, err := p.Retract(ctx, c.Articles[i].Slug, "Test."); err != nil {
			t.Fatal(err)
		}
		retracted[c.Articles[i].Slug] = true
	}
	for i := 2; i < len(c.Articles); i += 11 {
		a := c.Articles[i]
		a.PublishedAt = dateIn(randomWeek(), i)
		a.Section = content.Sections[(i+1)%len(content.Sections)]
		a.Countries = []string{countries[(i+1)%5].Code}
		if _, err := p.SyncArticle(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	check("retractions and edits", true)

	for i := 0; i < len(c.Articles); i += 14 {
		if _, err := p.Restore(ctx, c.Articles[i].Slug); err != nil {
			t.Fatal(err)
		}
		delete(retracted, c.Articles[i].Slug)
	}
	check("re-publishes", true)

	// A store written before the week counters: none, and changes made
	// meanwhile move the counters of their weeks only.
	deleteKeys(t, rdb, "iw:{content}:wk:*")
	if err := rdb.HDel(ctx, "iw:{content}:counts", "weeks").Err(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(c.Articles); i += 13 {
		slug := c.Articles[i].Slug
		if retracted[slug] {
			_, err := p.Restore(ctx, slug)
			if err != nil {
				t.Fatal(err)
			}
			delete(retracted, slug)
			continue
		}
		if _, err := p.Retract(ctx, slug, "Test."); err != nil {
			t.Fatal(err)
		}
		retracted[slug] = true
	}
	for i := range 40 {
		a := contenttest.Article(2000 + i)
		a.PublishedAt = dateIn(randomWeek(), i)
		c.Articles = append(c.Articles, a)
		if _, err := p.SyncArticle(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	check("counters missing", false)
	if err := p.SyncRegistries(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	check("counters rebuilt", true)
	for i := 5; i < len(c.Articles); i += 9 {
		if _, err := p.Retract(ctx, c.Articles[i].Slug, "Test."); err != nil {
			t.Fatal(err)
		}
		retracted[c.Articles[i].Slug] = true
	}
	check("retractions after the rebuild", true)
}

// checkWeekCounters compares the week counters of every filter the live
// articles count in with counts made here: every week holding articles,
// and no other week, in each hash.
func checkWeekCounters(t *testing.T, rdb redis.UniversalClient, stage string, live []*content.Article) {
	t.Helper()
	want := map[string]map[string]string{}
	for _, a := range live {
		keys, field := store.WeekCounters(a)
		for _, k := range keys {
			if want[k] == nil {
				want[k] = map[string]string{}
			}
			n := 0
			fmt.Sscan(want[k][field], &n)
			want[k][field] = fmt.Sprint(n + 1)
		}
	}
	bad := 0
	for k, exp := range want {
		got, err := rdb.HGetAll(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, exp) {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s holds %v, want %v", stage, k, got, exp)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d week counter hashes are wrong", stage, bad, len(want))
	}
}

// deleteKeys deletes the keys matching pattern, on every node of a cluster.
func deleteKeys(t testing.TB, rdb redis.UniversalClient, pattern string) {
	t.Helper()
	ctx := context.Background()
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, c)
	default:
		t.Fatalf("deleteKeys: unknown client %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
}
