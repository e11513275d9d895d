package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// An edit's outcome names the article's old and new paths exactly when its
// published_at went to another month, through both ways of publishing one:
// SyncArticle and the batched SyncArticles.
func TestOutcomeNamesAMove(t *testing.T) {
	onBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		p := newPublisher(rdb)
		corpus := contenttest.Corpus(4)
		syncCorpus(t, p, corpus)

		// Each case edits the article as published before it.
		testCases := []struct {
			desc     string
			slug     string
			shift    time.Duration
			batched  bool
			wantMove bool
		}{
			{desc: "same month, one article", slug: corpus.Articles[0].Slug, shift: time.Minute},
			{desc: "another month, one article", slug: corpus.Articles[1].Slug, shift: -40 * 24 * time.Hour, wantMove: true},
			{desc: "same month, batched", slug: corpus.Articles[2].Slug, shift: time.Minute, batched: true},
			{desc: "another month, batched", slug: corpus.Articles[3].Slug, shift: 40 * 24 * time.Hour, batched: true, wantMove: true},
		}
		for _, tc := range testCases {
			t.Run(tc.desc, func(t *testing.T) {
				var before content.Article
				for _, a := range corpus.Articles {
					if a.Slug == tc.slug {
						before = *a
					}
				}
				edited := before
				edited.PublishedAt = before.PublishedAt.Add(tc.shift)
				var o store.Outcome
				if tc.batched {
					err := p.SyncArticles(ctx, []*content.Article{&edited}, nil, func(_, _ string, got store.Outcome) { o = got })
					if err != nil {
						t.Fatal(err)
					}
				} else {
					var err error
					if o, err = p.SyncArticle(ctx, &edited); err != nil {
						t.Fatal(err)
					}
				}
				if !o.Changed {
					t.Fatal("the edit changed nothing")
				}
				if moves := before.Path() != edited.Path(); moves != tc.wantMove {
					t.Fatalf("the case moves %s to %s", before.Path(), edited.Path())
				}
				var wantFrom, wantTo string
				if tc.wantMove {
					wantFrom, wantTo = before.Path(), edited.Path()
				}
				if o.MovedFrom != wantFrom || o.MovedTo != wantTo {
					t.Errorf("moved from %q to %q; want %q to %q", o.MovedFrom, o.MovedTo, wantFrom, wantTo)
				}
			})
		}
	})
}
