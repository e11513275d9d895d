package store_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

func TestArticlesBySlug(t *testing.T) { onBackends(t, testArticlesBySlug) }

func testArticlesBySlug(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(4)
	syncCorpus(t, p, c)
	retracted := c.Articles[2].Slug
	if _, err := p.Retract(ctx, retracted, "Test."); err != nil {
		t.Fatal(err)
	}
	slugs := []string{c.Articles[3].Slug, "no-such-article", retracted, c.Articles[0].Slug, c.Articles[3].Slug}
	recs, err := p.Store.ArticlesBySlug(ctx, slugs)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(slugs) {
		t.Fatalf("%d records for %d slugs", len(recs), len(slugs))
	}
	for _, tc := range []struct {
		desc      string
		i         int
		missing   bool
		retracted bool
	}{
		{desc: "published", i: 0},
		{desc: "unknown slug", i: 1, missing: true},
		{desc: "retracted, returned as stored", i: 2, retracted: true},
		{desc: "another published", i: 3},
		{desc: "asked twice", i: 4},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if tc.missing {
				if recs[tc.i] != nil {
					t.Fatalf("got %q for an unknown slug", recs[tc.i])
				}
				return
			}
			rec, err := recs[tc.i].Decode()
			if err != nil {
				t.Fatal(err)
			}
			if rec == nil || rec.Slug != slugs[tc.i] {
				t.Fatalf("record %d = %+v, want %s", tc.i, rec, slugs[tc.i])
			}
			if rec.Retracted() != tc.retracted {
				t.Fatalf("retracted = %v, want %v", rec.Retracted(), tc.retracted)
			}
			if !tc.retracted && rec.Body == "" {
				t.Fatal("the record has no body")
			}
		})
	}
	// A record that does not decode is returned; decoding it says so.
	if err := rdb.Set(ctx, "iw:{content}:article:broken", "{", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if recs, err := p.Store.ArticlesBySlug(ctx, []string{"broken"}); err != nil || recs[0] == nil {
		t.Fatalf("a broken record: %v, %v", recs, err)
	} else if _, err := recs[0].Decode(); err == nil {
		t.Fatal("a broken record decoded")
	}
	if recs, err := p.Store.ArticlesBySlug(ctx, nil); err != nil || recs != nil {
		t.Fatalf("no slugs: %v, %v", recs, err)
	}
}
