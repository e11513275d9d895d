package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/store"
)

func TestSyncCorpusInBatches(t *testing.T) { onBackends(t, testSyncCorpusInBatches) }

// testSyncCorpusInBatches syncs a corpus of several batches: the first sync
// emits one article.published per article, oldest first; a second sync
// after a retraction and three edits spread over the batches changes
// exactly those three, emits their events and leaves the retraction alone.
func testSyncCorpusInBatches(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	const n = 1300 // three batches
	c := contenttest.Corpus(n)

	got := syncCorpus(t, p, c)
	if len(got) != n {
		t.Fatalf("first sync emitted %d events, want %d", len(got), n)
	}
	stream := streamTypes(t, rdb)
	if len(stream) != n {
		t.Fatalf("stream holds %d events, want %d", len(stream), n)
	}
	// Oldest first: contenttest's article i is i days before the newest.
	for _, tc := range []struct {
		desc string
		e    events.Event
		slug string
	}{
		{desc: "first event", e: stream[0], slug: "article-01299"},
		{desc: "last event", e: stream[n-1], slug: "article-00000"},
	} {
		if !strings.Contains(string(tc.e.Data), `"slug":"`+tc.slug+`"`) {
			t.Errorf("%s is not about %s", tc.desc, tc.slug)
		}
	}

	retracted := c.Articles[700].Slug
	if _, err := p.Retract(ctx, retracted, "wrong"); err != nil {
		t.Fatal(err)
	}
	c.Articles[100].Title += " (edited)"
	c.Articles[1200].Corrections = []content.Correction{{Date: contenttest.Base, Text: "A date was wrong."}}
	c.Articles[700].Title += " (edited while retracted)"
	c.Articles = append(c.Articles, contenttest.Article(n))

	var changed []string
	err := p.SyncCorpus(ctx, c, func(kind, id string, o store.Outcome) {
		if kind == "article" {
			changed = append(changed, id+" "+o.Event)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	want := []string{
		c.Articles[100].Slug + " ",
		c.Articles[1200].Slug + " " + events.ArticleCorrected,
		retracted + " ",
		contenttest.Article(n).Slug + " " + events.ArticlePublished,
	}
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Fatalf("second sync changed %q, want %q", changed, want)
	}
	rec, err := p.Store.Article(ctx, retracted)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Retracted() || rec.Title != c.Articles[700].Title {
		t.Errorf("retracted article: state %s, title %q; want it retracted with the new title", rec.State, rec.Title)
	}
	if total, err := p.Store.ArticleCount(ctx); err != nil || total != n {
		t.Errorf("published articles = %d (%v), want %d", total, err, n)
	}
	if again := syncCorpus(t, p, c); len(again) != 0 {
		t.Errorf("a third sync emitted %v, want nothing", again)
	}
}
