package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/store"
)

func TestFilteredPagesMatchTheIntersection(t *testing.T) {
	onBackends(t, testFilteredPagesMatchTheIntersection)
}

// testFilteredPagesMatchTheIntersection compares every page of filtered
// listings, by offset and by cursor, with the intersection computed here:
// same articles, same order, exact totals and a next page exactly when one
// exists; once walking the smallest set, once intersecting whole (the path
// a deep offset into a rare combination takes).
func testFilteredPagesMatchTheIntersection(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	c := contenttest.Corpus(300)
	// Several articles a minute apart share no score; give some the same
	// one, so ties (ordered by slug) are crossed by pages too.
	for i := 10; i < 20; i++ {
		c.Articles[i].PublishedAt = c.Articles[10].PublishedAt
	}
	syncCorpus(t, p, c)
	want := func(f store.ArticleFilter) []string {
		var out []*content.Article
		for _, a := range c.Articles {
			if matches(a, f) {
				out = append(out, a)
			}
		}
		slices.SortFunc(out, func(a, b *content.Article) int {
			if c := b.PublishedAt.Compare(a.PublishedAt); c != 0 {
				return c
			}
			return strings.Compare(a.Slug, b.Slug)
		})
		slugs := make([]string, len(out))
		for i, a := range out {
			slugs[i] = a.Slug
		}
		return slugs
	}
	filters := []store.ArticleFilter{
		{Section: "mandates", Audience: "biz"},
		{Section: "network", Country: "de"},
		{Audience: "ap", Country: "fr"},
		{Section: "vendors", Audience: "vendor", Country: "pl"},
		{Section: "mandates", Audience: "ap"}, // empty
	}
	for _, budget := range []int{20000, 3} {
		restore := store.SetWalkBudget(budget)
		for _, f := range filters {
			all := want(f)
			for _, limit := range []int{1, 4, 25} {
				desc := fmt.Sprintf("budget %d, %+v, limit %d", budget, f, limit)
				for _, offset := range []int{0, 1, 5, len(all) - 1, len(all), len(all) + 3} {
					if offset >= 0 {
						checkOffsetPage(t, p, desc, f, offset, limit, all)
					}
				}
				// A cursor walk visits the whole intersection once, in order.
				if walked := walkByCursor(t, p, f, limit, len(all)+2); !slices.Equal(walked, all) {
					t.Errorf("%s: cursor walk gave %d articles %v, want %d %v", desc, len(walked), walked, len(all), all)
				}
			}
		}
		restore()
	}
}

// checkOffsetPage compares the page of f at offset with the listing all
// (its slugs in order): articles, total, start and whether more follow.
func checkOffsetPage(t *testing.T, p *store.Publisher, desc string, f store.ArticleFilter, offset, limit int, all []string) {
	t.Helper()
	page, err := p.Store.Articles(context.Background(), f, offset, limit, nil)
	if err != nil {
		t.Fatal(err)
	}
	end := min(len(all), offset+limit)
	exp := all[min(offset, len(all)):end]
	if got := slugsOf(page); !slices.Equal(got, exp) || page.Total != len(all) || page.More != (end < len(all)) || page.Start != offset {
		t.Errorf("%s, offset %d, limit %d: got %v total %d more %v start %d; want %v total %d more %v",
			desc, offset, limit, got, page.Total, page.More, page.Start, exp, len(all), end < len(all))
	}
}

// walkByCursor pages through the listing of f by cursor, limit articles a
// page and at most pages pages, and returns the slugs it was shown.
func walkByCursor(t *testing.T, p *store.Publisher, f store.ArticleFilter, limit, pages int) []string {
	t.Helper()
	var walked []string
	var cursor *store.Cursor
	for range pages {
		page, err := p.Store.Articles(context.Background(), f, 0, limit, cursor)
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, slugsOf(page)...)
		if !page.More || len(page.Articles) == 0 {
			break
		}
		last := page.Articles[len(page.Articles)-1]
		cursor = &store.Cursor{PublishedAt: last.PublishedAt, Slug: last.Slug}
	}
	return walked
}

func slugsOf(p *store.Page) []string {
	out := []string{}
	for _, a := range p.Articles {
		out = append(out, a.Slug)
	}
	return out
}

func TestArticleHeadsAreArticlesWithoutBodies(t *testing.T) {
	onBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		p := newPublisher(rdb)
		syncCorpus(t, p, contenttest.Corpus(40))
		ctx := context.Background()
		a := contenttest.Article(0)
		for _, tc := range []struct {
			desc string
			f    store.ArticleFilter
		}{
			{desc: "unfiltered"},
			{desc: "one filter", f: store.ArticleFilter{Section: "mandates"}},
			{desc: "two filters", f: store.ArticleFilter{Section: a.Section, Country: a.Countries[0]}},
		} {
			full, err := p.Store.Articles(ctx, tc.f, 0, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			heads, err := p.Store.ArticleHeads(ctx, tc.f, 0, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Articles) == 0 {
				t.Fatalf("%s: empty page", tc.desc)
			}
			for _, rec := range full.Articles {
				if rec.Body == "" {
					t.Fatalf("%s: %s read without its body", tc.desc, rec.Slug)
				}
				rec.Body = ""
			}
			if !reflect.DeepEqual(heads, full) {
				t.Errorf("%s: heads\n%+v\nwant the full page without bodies\n%+v", tc.desc, heads, full)
			}
		}
	})
}
