package store_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/store"
)

func TestFilteredTotals(t *testing.T) { onBackends(t, testFilteredTotals) }

// testFilteredTotals checks the totals of listings filtered on two and
// three values, which come from counters kept by every change, against the
// intersections of the index sets themselves: after a first publish (runs
// of new articles), edits that move articles between values, retractions,
// a restoration, and after the counters are rebuilt from the sets for a
// store written without them.
func testFilteredTotals(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	p := newPublisher(rdb)
	c := contenttest.Corpus(600)
	for i, a := range c.Articles {
		if i%3 == 0 {
			a.Audience = []string{content.Audiences[i%4], content.Audiences[(i+1)%4]}
		}
		if i%5 == 0 {
			a.Countries = []string{c.Countries[i%len(c.Countries)].Code, c.Countries[(i+3)%len(c.Countries)].Code, c.Countries[i%len(c.Countries)].Code}
		}
	}
	syncCorpus(t, p, c)
	check := func(when string) {
		t.Helper()
		var countries []string
		for _, cty := range c.Countries[:min(6, len(c.Countries))] {
			countries = append(countries, cty.Code)
		}
		checked := 0
		for _, s := range append([]string{""}, content.Sections...) {
			for _, au := range append([]string{""}, content.Audiences...) {
				for _, cc := range append([]string{""}, countries...) {
					f := store.ArticleFilter{Section: s, Audience: au, Country: cc}
					var keys []string
					for _, k := range []struct{ kind, v string }{{"section", s}, {"audience", au}, {"country", cc}} {
						if k.v != "" {
							keys = append(keys, "iw:{content}:idx:"+k.kind+":"+k.v)
						}
					}
					if len(keys) < 2 {
						continue
					}
					want, err := rdb.ZInterCard(ctx, 0, keys...).Result()
					if err != nil {
						t.Fatal(err)
					}
					page, err := p.Store.Articles(ctx, f, 0, 1, nil)
					if err != nil {
						t.Fatal(err)
					}
					if int64(page.Total) != want {
						t.Errorf("%s: %+v: total %d, want %d", when, f, page.Total, want)
					}
					if want > 0 {
						checked++
					}
				}
			}
		}
		if checked < 50 {
			t.Fatalf("%s: only %d filters match anything; the test needs more", when, checked)
		}
		if ready, err := rdb.HExists(ctx, "iw:{content}:counts", "ready").Result(); err != nil || !ready {
			t.Fatalf("%s: the counters are not ready (%v)", when, err)
		}
	}
	check("first publish")

	for i := 0; i < 600; i += 7 {
		a := c.Articles[i]
		a.Section = content.Sections[(i+1)%len(content.Sections)]
		a.Audience = []string{content.Audiences[(i+2)%4]}
		a.Countries = []string{c.Countries[(i+1)%len(c.Countries)].Code}
	}
	syncCorpus(t, p, c)
	for i := 3; i < 600; i += 11 {
		if _, err := p.Retract(ctx, c.Articles[i].Slug, "Test."); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Restore(ctx, c.Articles[14].Slug); err != nil {
		t.Fatal(err)
	}
	check("edits, retractions, a restoration")

	if err := rdb.Del(ctx, "iw:{content}:counts").Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.SyncRegistries(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	check("counters rebuilt")
}
