package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// sitemapFiles reads every article sitemap file: path → (file, lastmod). It
// fails the test when a path is in two files or a file is over capacity.
func sitemapFiles(t *testing.T, st *store.Store, capacity int) map[string]placed {
	t.Helper()
	ctx := context.Background()
	files, err := st.SitemapFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]placed{}
	for n := int64(1); n <= files; n++ {
		urls, err := st.SitemapFile(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(urls) > capacity {
			t.Errorf("sitemap file %d holds %d URLs, over the capacity %d", n, len(urls), capacity)
		}
		for _, u := range urls {
			if prev, ok := out[u.Path]; ok {
				t.Errorf("%s is in files %d and %d", u.Path, prev.file, n)
			}
			out[u.Path] = placed{file: n, lastmod: u.LastModified}
		}
	}
	if _, err := st.SitemapFile(ctx, files+1); err != store.ErrNoSitemap {
		t.Errorf("file %d past the last answered %v, want ErrNoSitemap", files+1, err)
	}
	return out
}

type placed struct {
	file    int64
	lastmod time.Time
}

// TestSitemapFiles publishes an archive into sitemap files of seven URLs and
// checks that the files list every published article exactly once, that an
// edit changes and invalidates only its article's file, and that growth
// moves an article only into a file that did not exist before.
func TestSitemapFiles(t *testing.T) {
	onBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const capacity = 7
		p := newPublisher(rdb)
		p.SitemapURLs = capacity
		corpus := contenttest.Corpus(120)
		syncCorpus(t, p, corpus)
		retracted := corpus.Articles[5]
		if _, err := p.Retract(ctx, retracted.Slug, "Test."); err != nil {
			t.Fatal(err)
		}
		before := sitemapFiles(t, p.Store, capacity)
		if len(before) != len(corpus.Articles)-1 {
			t.Errorf("the files hold %d articles, want %d", len(before), len(corpus.Articles)-1)
		}
		for _, a := range corpus.Articles {
			_, in := before[a.Path()]
			if in != (a != retracted) {
				t.Errorf("%s in the sitemaps: %v", a.Slug, in)
			}
		}
		files, err := p.Store.SitemapFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if files < (119+capacity-1)/capacity {
			t.Fatalf("%d files cannot hold 119 articles of at most %d", files, capacity)
		}

		// One edit: only its file changes, and only its key is purged.
		sub := rdb.Subscribe(ctx, invalidation.Channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		edited := *corpus.Articles[40]
		when := edited.PublishedAt.Add(72 * time.Hour)
		edited.UpdatedAt, edited.Title = &when, "An edited headline"
		o, err := p.SyncArticle(ctx, &edited)
		if err != nil {
			t.Fatal(err)
		}
		// On a cluster, messages of the earlier changes may still arrive
		// after the subscription (the first publish's name every article):
		// the edit's is the one of its content version.
		var inv struct {
			Version int64
			Keys    []string
		}
		var msg *redis.Message
		for inv.Version != o.Version {
			if msg, err = sub.ReceiveMessage(ctx); err != nil {
				t.Fatal(err)
			}
			inv.Keys = nil
			if err := json.Unmarshal([]byte(msg.Payload), &inv); err != nil {
				t.Fatal(err)
			}
		}
		var sitemapKeys []string
		for _, k := range inv.Keys {
			if strings.HasPrefix(k, "sitemap") {
				sitemapKeys = append(sitemapKeys, k)
			}
		}
		want := store.TagSitemapFile(before[edited.Path()].file)
		for _, k := range sitemapKeys {
			if k != want {
				t.Errorf("the edit purged %q; only %q should go", k, want)
			}
		}
		if len(sitemapKeys) == 0 {
			t.Errorf("the edit purged no sitemap file, want %q (message %s)", want, msg.Payload)
		}
		after := sitemapFiles(t, p.Store, capacity)
		for path, was := range before {
			now := after[path]
			if path == edited.Path() {
				if now.file != was.file || !now.lastmod.Equal(when) {
					t.Errorf("edited article: file %d lastmod %v, want file %d lastmod %v", now.file, now.lastmod, was.file, when)
				}
				continue
			}
			if now != was {
				t.Errorf("%s moved from %+v to %+v on another article's edit", path, was, now)
			}
		}

		// Growth: an article moves only into a file added since.
		more := contenttest.Corpus(400)
		more.Articles = more.Articles[120:]
		syncCorpus(t, p, more)
		grown := sitemapFiles(t, p.Store, capacity)
		if len(grown) != 399 {
			t.Errorf("after growth the files hold %d articles, want 399", len(grown))
		}
		for path, was := range after {
			if now := grown[path]; now.file != was.file && now.file <= files {
				t.Errorf("%s moved from file %d to the older file %d", path, was.file, now.file)
			}
		}
	})
}

// TestSitemapBackfill: a store published before the sitemap files existed
// gets them on its next sync.
func TestSitemapBackfill(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	p := newPublisher(rdb)
	p.SitemapURLs = 5
	corpus := contenttest.Corpus(30)
	syncCorpus(t, p, corpus)
	keys, err := redistest.Keys(ctx, rdb, "iw:{content}:sitemap*")
	if err != nil || len(keys) < 2 {
		t.Fatalf("sitemap keys %v, %v", keys, err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if got := sitemapFiles(t, p.Store, 5); len(got) != 0 {
		t.Fatalf("%d articles in the sitemaps after deleting them", len(got))
	}
	syncCorpus(t, p, corpus)
	if got := sitemapFiles(t, p.Store, 5); len(got) != 30 {
		t.Errorf("the backfilled sitemaps hold %d articles, want 30", len(got))
	}
}
