package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
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

// TestFirstPublishMatchesOneByOne publishes the same corpus into two empty
// stores, once as a sync does (runs of new articles in one change each)
// and once article by article with SyncArticle: records, indexes, sitemap
// files and the events' data must be the same, and the sitemap files must
// have split alike.
func TestFirstPublishMatchesOneByOne(t *testing.T) {
	ctx := context.Background()
	c := contenttest.Corpus(700) // three runs of firstPublishBatch
	var dumps [2]map[string]string
	for i, publish := range []func(p *store.Publisher) error{
		func(p *store.Publisher) error { return p.SyncCorpus(ctx, c, nil) },
		func(p *store.Publisher) error {
			if err := p.SyncRegistries(ctx, c, nil); err != nil {
				return err
			}
			for j := len(c.Articles) - 1; j >= 0; j-- { // oldest first
				if _, err := p.SyncArticle(ctx, c.Articles[j]); err != nil {
					return err
				}
			}
			return nil
		},
	} {
		rdb := redistest.Start(t).Client()
		p := newPublisher(rdb)
		p.SitemapURLs = 40
		if err := publish(p); err != nil {
			t.Fatal(err)
		}
		dumps[i] = contentDump(t, rdb)
		// The change times differ by when each store was written: the
		// same keys must have one.
		const changed = "iw:{content}:changed"
		var fields []string
		for _, line := range strings.Split(dumps[i][changed], "\n") {
			name, _, _ := strings.Cut(line, "=")
			fields = append(fields, name)
		}
		dumps[i][changed] = strings.Join(fields, " ")
	}
	if len(dumps[0]) < len(c.Articles)+10 {
		t.Fatalf("the store holds only %d keys", len(dumps[0]))
	}
	for k, v := range dumps[1] {
		if dumps[0][k] != v {
			t.Errorf("%s: batched %.200q, one by one %.200q", k, dumps[0][k], v)
		}
	}
	for k := range dumps[0] {
		if _, ok := dumps[1][k]; !ok {
			t.Errorf("%s: only in the batched store", k)
		}
	}
}

// contentDump renders every content key but the version as text: strings
// as they are, hashes and sorted sets as their sorted members, the events
// stream as its events' types and data in order.
func contentDump(t *testing.T, rdb redis.UniversalClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "iw:{content}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		if strings.HasSuffix(k, ":version") {
			continue
		}
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		switch typ {
		case "string":
			lines = []string{rdb.Get(ctx, k).Val()}
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				lines = append(lines, f+"="+v)
			}
		case "zset":
			for _, z := range rdb.ZRangeWithScores(ctx, k, 0, -1).Val() {
				lines = append(lines, fmt.Sprintf("%v %v", z.Score, z.Member))
			}
		case "stream":
			for _, e := range streamTypes(t, rdb) {
				lines = append(lines, e.Type+" "+string(e.Data))
			}
		default:
			t.Fatalf("%s: unexpected type %s", k, typ)
		}
		if typ != "stream" {
			slices.Sort(lines)
		}
		out[k] = strings.Join(lines, "\n")
	}
	return out
}

func TestSyncWithWrongNewGuess(t *testing.T) { onBackends(t, testSyncWithWrongNewGuess) }

// testSyncWithWrongNewGuess: articles a caller wrongly believes new (here
// every one: the articles already stored, edited or not, and one really
// new) are stored exactly as without the guess. A run holding a stored
// article writes nothing and is redone article by article, so nothing is
// published twice and every change still has its one event.
func testSyncWithWrongNewGuess(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	const n = 600 // three runs of new articles
	c := contenttest.Corpus(n)
	if got := syncCorpus(t, p, c); len(got) != n {
		t.Fatalf("first sync emitted %d events, want %d", len(got), n)
	}
	c.Articles[100].Title += " (edited)"
	c.Articles[500].Corrections = []content.Correction{{Date: contenttest.Base, Text: "A date was wrong."}}
	c.Articles = append(c.Articles, contenttest.Article(n))
	byAge := slices.Clone(c.Articles)
	slices.SortStableFunc(byAge, func(a, b *content.Article) int { return a.PublishedAt.Compare(b.PublishedAt) })
	allNew := func(string) bool { return true }

	var changed []string
	report := func(kind, id string, o store.Outcome) { changed = append(changed, id+" "+o.Event) }
	if err := p.SyncArticles(ctx, byAge, allNew, report); err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	want := []string{
		c.Articles[100].Slug + " ",
		c.Articles[500].Slug + " " + events.ArticleCorrected,
		contenttest.Article(n).Slug + " " + events.ArticlePublished,
	}
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Fatalf("sync with every article guessed new changed %q, want %q", changed, want)
	}
	if stream := streamTypes(t, rdb); len(stream) != n+2 {
		t.Errorf("stream holds %d events, want %d (one per article and one correction)", len(stream), n+2)
	}
	if total, err := p.Store.ArticleCount(ctx); err != nil || total != n+1 {
		t.Errorf("published articles = %d (%v), want %d", total, err, n+1)
	}
	changed = nil
	if err := p.SyncArticles(ctx, byAge, allNew, report); err != nil || len(changed) != 0 {
		t.Errorf("syncing the same articles again changed %q (%v), want nothing", changed, err)
	}
}

func TestFirstPublishSeenWhole(t *testing.T) { onBackends(t, testFirstPublishSeenWhole) }

// testFirstPublishSeenWhole watches a first publish from another
// connection: however often it looks, it must see as many records as
// index entries and events. A run's records are stored by an MSETNX after
// its script (firstPublishScript); were the two not in one transaction,
// a reader between them would see articles listed without their records.
func testFirstPublishSeenWhole(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(1300) // three batches, several runs each
	keys := []string{"iw:{content}:idx:all", events.Stream}
	for _, a := range c.Articles {
		keys = append(keys, "iw:{content}:article:"+a.Slug)
	}
	look := redis.NewScript(`
local records = redis.call('EXISTS', unpack(KEYS, 3))
return {records, redis.call('ZCARD', KEYS[1]), redis.call('XLEN', KEYS[2])}`)
	done := make(chan error, 1)
	go func() { done <- p.SyncCorpus(ctx, c, nil) }()
	looks, partial := 0, 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		seen, err := look.Run(ctx, rdb, keys).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		looks++
		if seen[0] > 0 && seen[0] < int64(len(c.Articles)) {
			partial++
		}
		if seen[0] != seen[1] || seen[0] != seen[2] {
			t.Fatalf("look %d saw %d records, %d listed, %d events", looks, seen[0], seen[1], seen[2])
		}
	}
	if seen, _ := look.Run(ctx, rdb, keys).Int64Slice(); len(seen) == 0 || seen[0] != int64(len(c.Articles)) {
		t.Errorf("after the sync: %v records, want %d", seen, len(c.Articles))
	}
	t.Logf("%d looks, %d during the publish", looks, partial)
}
