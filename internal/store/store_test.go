package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

const siteRoot = "https://iw.test"

func newPublisher(rdb redis.UniversalClient) *store.Publisher {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	return &store.Publisher{Store: store.New(rdb), SiteRoot: siteRoot, Now: func() time.Time { return now }}
}

// onBackends runs test against a single redis-server and against a local
// three-master Redis Cluster (docs/decisions.md, "The integration tests run
// twice, the second time on Redis Cluster"): every multi-key operation must
// work unchanged on both.
func onBackends(t *testing.T, test func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) { test(t, redistest.Start(t).Client()) })
	t.Run("cluster", func(t *testing.T) { test(t, redistest.StartCluster(t).Client()) })
}

func syncCorpus(t *testing.T, p *store.Publisher, c *content.Corpus) (events []string) {
	t.Helper()
	err := p.SyncCorpus(context.Background(), c, func(_, _ string, o store.Outcome) {
		if o.Event != "" {
			events = append(events, o.Event)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// streamTypes reads the whole events stream.
func streamTypes(t *testing.T, rdb redis.UniversalClient) []events.Event {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), events.Stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	for _, m := range msgs {
		e, err := events.FromFields(m.Values)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestSyncIsIdempotentAndEmitsOneEventPerChange(t *testing.T) {
	onBackends(t, testSyncIsIdempotentAndEmitsOneEventPerChange)
}

func testSyncIsIdempotentAndEmitsOneEventPerChange(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(5)

	if got := syncCorpus(t, p, c); len(got) != 5 || slices.ContainsFunc(got, func(s string) bool { return s != events.ArticlePublished }) {
		t.Fatalf("first sync events = %v, want 5 × article.published", got)
	}
	if got := syncCorpus(t, p, c); len(got) != 0 {
		t.Fatalf("second sync of the same tree emitted %v, want nothing", got)
	}
	v1, _ := p.Store.Version(ctx)
	syncCorpus(t, p, c)
	if v2, _ := p.Store.Version(ctx); v2 != v1 {
		t.Fatalf("an unchanged sync moved the content version %d → %d", v1, v2)
	}

	cases := []struct {
		desc  string
		edit  func(c *content.Corpus)
		event string
	}{
		{"a new correction emits article.corrected", func(c *content.Corpus) {
			c.Articles[1].Corrections = append(c.Articles[1].Corrections, content.Correction{Date: contenttest.Base, Text: "An earlier version misstated the date."})
		}, events.ArticleCorrected},
		{"a correction replaced by a later one in one edit emits article.corrected", func(c *content.Corpus) {
			c.Articles[1].Corrections = []content.Correction{{Date: contenttest.Base.Add(48 * time.Hour), Text: "An earlier version misnamed the authority."}}
		}, events.ArticleCorrected},
		{"a fix to a correction's text emits nothing", func(c *content.Corpus) {
			c.Articles[1].Corrections = []content.Correction{{Date: contenttest.Base.Add(48 * time.Hour), Text: "An earlier version misnamed the tax authority."}}
		}, ""},
		{"a correction removed emits nothing", func(c *content.Corpus) { c.Articles[1].Corrections = nil }, ""},
		{"a silent edit of the body emits nothing", func(c *content.Corpus) { c.Articles[2].Body += "More.\n" }, ""},
		{"a changed spec version emits spec.updated", func(c *content.Corpus) { c.Specs[0].Version = "3.0.21" }, events.SpecUpdated},
		{"a changed country emits nothing", func(c *content.Corpus) { c.Countries[0].MandateStatus = "phased-rollout" }, ""},
		{"a new article emits article.published", func(c *content.Corpus) { c.Articles = append(c.Articles, contenttest.Article(99)) }, events.ArticlePublished},
		{"changed synonyms emit nothing", func(c *content.Corpus) { c.Synonyms = [][]string{{"invoice", "bill"}} }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			before := len(streamTypes(t, rdb))
			tc.edit(c)
			got := syncCorpus(t, p, c)
			want := []string{}
			if tc.event != "" {
				want = []string{tc.event}
			}
			if !slices.Equal(append([]string{}, got...), want) {
				t.Fatalf("events = %v, want %v", got, want)
			}
			if after := len(streamTypes(t, rdb)); after-before != len(want) {
				t.Fatalf("stream grew by %d entries, want %d", after-before, len(want))
			}
			if again := syncCorpus(t, p, c); len(again) != 0 {
				t.Fatalf("re-sync emitted %v", again)
			}
		})
	}

	if got, err := p.Store.Synonyms(ctx); err != nil || len(got) != 1 || !slices.Equal(got[0], []string{"invoice", "bill"}) {
		t.Fatalf("Synonyms() = %v, %v; want the synced groups", got, err)
	}

	// The stream holds well-formed envelopes whose data is the API article;
	// the oldest article is published first.
	evs := streamTypes(t, rdb)
	var art content.PublicArticle
	if err := json.Unmarshal(evs[0].Data, &art); err != nil || art.URL != siteRoot+contenttest.Article(4).Path()+"/" {
		t.Fatalf("first event data = %s (err %v), want the public article with its URL", evs[0].Data, err)
	}
	if evs[0].ID[:4] != "evt_" || evs[0].CreatedAt.IsZero() {
		t.Fatalf("event envelope %+v lacks id or created_at", evs[0])
	}
}

func TestRetractRestore(t *testing.T) { onBackends(t, testRetractRestore) }

func testRetractRestore(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(3)
	syncCorpus(t, p, c)
	slug := c.Articles[1].Slug

	o, err := p.Retract(ctx, slug, "Sources did not support the headline.")
	if err != nil || o.Event != events.ArticleRetracted {
		t.Fatalf("retract = %+v, %v", o, err)
	}
	page, err := p.Store.Articles(ctx, store.ArticleFilter{}, 0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 2 || slices.ContainsFunc(page.Articles, func(r *store.ArticleRecord) bool { return r.Slug == slug }) {
		t.Fatalf("after retraction the list has %d items including the retracted one", page.Total)
	}
	if o, _ := p.Retract(ctx, slug, "Sources did not support the headline."); o.Changed {
		t.Fatal("retracting twice changed something")
	}
	// A new reason corrects the notice, still retracted, with no event.
	if o, err := p.Retract(ctx, slug, "The sources did not support the headline."); err != nil || !o.Changed || o.Event != "" {
		t.Fatalf("retracting with a new reason = %+v, %v; want a change with no event", o, err)
	}
	if rec, err := p.Store.Article(ctx, slug); err != nil || !rec.Retracted() || rec.RetractionReason != "The sources did not support the headline." {
		t.Fatalf("after a new reason: %+v, %v", rec, err)
	}
	// A later sync never un-retracts, even when the text changes.
	c.Articles[1].Body += "Edited.\n"
	if got := syncCorpus(t, p, c); len(got) != 0 {
		t.Fatalf("sync after retraction emitted %v", got)
	}
	rec, err := p.Store.Article(ctx, slug)
	if err != nil || !rec.Retracted() || rec.RetractionReason == "" || rec.Body != c.Articles[1].Body {
		t.Fatalf("after sync: %+v, %v; want still retracted with the new body", rec, err)
	}
	if page, _ := p.Store.Articles(ctx, store.ArticleFilter{Section: c.Articles[1].Section}, 0, 10, nil); page.Total != 0 {
		t.Fatalf("the section index still lists the retracted article")
	}
	if _, err := p.Retract(ctx, "no-such-article", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retracting an unknown slug: %v, want ErrNotFound", err)
	}

	o, err = p.Restore(ctx, slug)
	if err != nil || o.Event != events.ArticlePublished {
		t.Fatalf("restore = %+v, %v", o, err)
	}
	if page, _ := p.Store.Articles(ctx, store.ArticleFilter{}, 0, 10, nil); page.Total != 3 {
		t.Fatalf("after restore the list has %d items, want 3", page.Total)
	}
	types := []string{}
	for _, e := range streamTypes(t, rdb) {
		types = append(types, e.Type)
	}
	want := []string{events.ArticlePublished, events.ArticlePublished, events.ArticlePublished, events.ArticleRetracted, events.ArticlePublished}
	if !slices.Equal(types, want) {
		t.Fatalf("stream = %v, want %v", types, want)
	}
}

func TestNewsletterSendOnce(t *testing.T) { onBackends(t, testNewsletterSendOnce) }

func testNewsletterSendOnce(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	syncCorpus(t, p, contenttest.Corpus(10))
	week := content.ISOWeek(contenttest.Base)
	intro := &content.NewsletterIntro{Week: week, Title: "A busy week", Body: "Intro."}

	o, err := p.SendNewsletter(ctx, week, intro)
	if err != nil || o.Event != events.NewsletterSent {
		t.Fatalf("send = %+v, %v", o, err)
	}
	n, err := p.Store.Newsletter(ctx, week)
	if err != nil || n.Title != "A busy week" || len(n.Articles) == 0 {
		t.Fatalf("stored newsletter %+v, %v", n, err)
	}
	for _, a := range n.Articles {
		rec, _ := p.Store.Article(ctx, a)
		if content.ISOWeek(rec.PublishedAt) != week {
			t.Fatalf("newsletter of %s lists %s published %s", week, a, rec.PublishedAt)
		}
	}
	before := len(streamTypes(t, rdb))
	if o, err := p.SendNewsletter(ctx, week, intro); err != nil || o.Changed {
		t.Fatalf("second send = %+v, %v; want unchanged", o, err)
	}
	if len(streamTypes(t, rdb)) != before {
		t.Fatal("second send emitted an event")
	}
	if _, err := p.SendNewsletter(ctx, "2001-w01", nil); !errors.Is(err, store.ErrEmptyWeek) {
		t.Fatalf("empty week: %v", err)
	}
	for _, bad := range []string{"2026-w54", "2026-47", "w47", "2026-w00", "2026-w1"} {
		if _, err := p.SendNewsletter(ctx, bad, nil); err == nil || errors.Is(err, store.ErrEmptyWeek) {
			t.Errorf("week %q: err = %v, want a format error", bad, err)
		}
	}
}

// TestPaginationUnderConcurrentPublishing pages through the listing with the
// cursor while another goroutine publishes newer articles and retracts
// others: every article published throughout is seen exactly once.
func TestPaginationUnderConcurrentPublishing(t *testing.T) {
	onBackends(t, testPaginationUnderConcurrentPublishing)
}

func testPaginationUnderConcurrentPublishing(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(120)
	syncCorpus(t, p, c)

	filters := []struct {
		desc string
		f    store.ArticleFilter
	}{
		{"unfiltered", store.ArticleFilter{}},
		{"one filter", store.ArticleFilter{Country: "de"}},
		{"intersection", store.ArticleFilter{Section: "mandates", Audience: "biz"}},
	}
	for _, tc := range filters {
		t.Run(tc.desc, func(t *testing.T) {
			stable := map[string]bool{}
			for _, a := range c.Articles {
				if matches(a, tc.f) {
					stable[a.Slug] = true
				}
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var retracted sync.Map
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					a := contenttest.Article(1000 + i)
					a.Slug = fmt.Sprintf("%s-new-%d", tc.desc[:3], i)
					a.PublishedAt = contenttest.Base.Add(time.Duration(i+1) * time.Minute)
					if _, err := p.SyncArticle(ctx, a); err != nil {
						t.Error(err)
						return
					}
					if i%5 == 0 {
						victim := c.Articles[(i*7)%len(c.Articles)].Slug
						if _, err := p.Retract(ctx, victim, "test"); err != nil {
							t.Error(err)
							return
						}
						retracted.Store(victim, true)
					}
				}
			}()
			seen := map[string]int{}
			var cursor *store.Cursor
			offset := 0
			for {
				page, err := p.Store.Articles(ctx, tc.f, offset, 7, cursor)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range page.Articles {
					seen[r.Slug]++
				}
				if len(page.Articles) == 0 || !page.More {
					break
				}
				last := page.Articles[len(page.Articles)-1]
				cursor = &store.Cursor{PublishedAt: last.PublishedAt, Slug: last.Slug}
				offset = page.Start + len(page.Articles)
			}
			close(stop)
			wg.Wait()
			for slug, n := range seen {
				if n > 1 {
					t.Errorf("%s seen %d times", slug, n)
				}
			}
			for slug := range stable {
				if _, gone := retracted.Load(slug); !gone && seen[slug] != 1 {
					t.Errorf("%s (published throughout) seen %d times, want 1", slug, seen[slug])
				}
			}
			// Restore for the next case.
			retracted.Range(func(k, _ any) bool { p.Restore(ctx, k.(string)); return true })
		})
	}
}

func matches(a *content.Article, f store.ArticleFilter) bool {
	return (f.Section == "" || a.Section == f.Section) &&
		(f.Audience == "" || slices.Contains(a.Audience, f.Audience)) &&
		(f.Country == "" || slices.Contains(a.Countries, f.Country))
}

func TestListingOrderAndOffset(t *testing.T) { onBackends(t, testListingOrderAndOffset) }

func testListingOrderAndOffset(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(4)
	// Two articles at the same instant are ordered by slug ascending (docs/decisions.md, pagination).
	c.Articles[3].PublishedAt = c.Articles[0].PublishedAt
	c.Articles[3].Slug = "aaa-same-time"
	syncCorpus(t, p, c)
	page, err := p.Store.Articles(ctx, store.ArticleFilter{}, 0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range page.Articles {
		got = append(got, r.Slug)
	}
	want := []string{"aaa-same-time", c.Articles[0].Slug, c.Articles[1].Slug, c.Articles[2].Slug}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	page, _ = p.Store.Articles(ctx, store.ArticleFilter{}, 2, 1, nil)
	if page.Total != 4 || len(page.Articles) != 1 || page.Articles[0].Slug != want[2] {
		t.Fatalf("offset 2 limit 1: total %d items %v", page.Total, page.Articles)
	}
}

// TestRedisRestartLosesNothing kills Redis (SIGKILL, as a crash) after
// publishing and finds every article and every pending event again. The
// append-only file is fsynced every second (docs/architecture.md), so the test waits
// past that window before the crash, as the README's stated loss window
// allows.
func TestRedisRestartLosesNothing(t *testing.T) {
	srv := redistest.New(t)
	rdb := srv.Client()
	p := newPublisher(rdb)
	ctx := context.Background()
	syncCorpus(t, p, contenttest.Corpus(20))
	if _, err := p.Retract(ctx, contenttest.Article(3).Slug, "test"); err != nil {
		t.Fatal(err)
	}
	before := streamTypes(t, rdb)
	time.Sleep(1500 * time.Millisecond)
	srv.Restart(true)

	page, err := p.Store.Articles(ctx, store.ArticleFilter{}, 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 19 {
		t.Fatalf("after the crash %d articles are listed, want 19", page.Total)
	}
	after := streamTypes(t, rdb)
	if len(after) != len(before) || after[len(after)-1].ID != before[len(before)-1].ID {
		t.Fatalf("events stream has %d entries after the crash, want %d", len(after), len(before))
	}
}

type recordingPurger struct {
	mu      sync.Mutex
	purged  [][]string
	cleared int
}

func (r *recordingPurger) Purge(tags []string) {
	r.mu.Lock()
	r.purged = append(r.purged, tags)
	r.mu.Unlock()
}
func (r *recordingPurger) Clear() { r.mu.Lock(); r.cleared++; r.mu.Unlock() }

// TestChangesReachFollower: the messages the change script publishes are
// the ones the invalidation follower understands, through a Redis restart.
func TestChangesReachFollower(t *testing.T) {
	srv := redistest.New(t)
	p := newPublisher(srv.Client())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rp := &recordingPurger{}
	ready := make(chan struct{})
	go invalidation.Follow(ctx, p.Store.Client(), rp, p.Store.Version, slog.New(slog.NewTextHandler(io.Discard, nil)), ready)
	<-ready

	// Every change of the sync is announced, one message per version. On a
	// cluster a message crosses the cluster bus from the content's node,
	// and may arrive well after the command that sent it returned, so wait
	// for all of them before counting the retraction's.
	syncCorpus(t, p, contenttest.Corpus(2))
	synced, err := p.Store.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		rp.mu.Lock()
		defer rp.mu.Unlock()
		return int64(len(rp.purged)) == synced
	}, "the sync's purges")

	slug := contenttest.Article(1).Slug
	if _, err := p.Retract(ctx, slug, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		rp.mu.Lock()
		defer rp.mu.Unlock()
		return int64(len(rp.purged)) == synced+1 && slices.Contains(rp.purged[synced], store.TagArticle(slug))
	}, "the retraction's purge")

	// Redis restarts; a change made while the follower is disconnected is
	// caught by the version check on resubscribe.
	rp.mu.Lock()
	clearedBefore := rp.cleared
	rp.mu.Unlock()
	srv.Restart(false)
	if _, err := p.Restore(ctx, slug); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		rp.mu.Lock()
		defer rp.mu.Unlock()
		return rp.cleared > clearedBefore || len(rp.purged) > 1
	}, "a purge or clear after the restart")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestChangedAt(t *testing.T) { onBackends(t, testChangedAt) }

// testChangedAt: every change, first publish included, records its time
// under its surrogate keys but the per-article ones, later than every
// change before it even within one second, so what a change purges is
// always dated after its last version; what it does not purge keeps its
// time. The steps run in order on one store, as fast as they go: two of
// them in one second is the case that must still move.
func testChangedAt(t *testing.T, rdb redis.UniversalClient) {
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(3)
	edited, retracted := c.Articles[0], c.Articles[1]
	feeds, specs, newsletter := store.TagFeeds, store.TagSpecs, store.TagNewsletter
	editedSection, retractedSection := store.TagSection(edited.Section), store.TagSection(retracted.Section)
	sitemap, article := store.TagSitemapFile(1), store.TagArticle(edited.Slug)
	watched := []string{feeds, specs, newsletter, editedSection, retractedSection, sitemap, article}
	changes := 0 // how many changes were applied, each at most a second ahead
	sync := func() error {
		return p.SyncCorpus(ctx, c, func(_, _ string, o store.Outcome) {
			if o.Changed {
				changes++
			}
		})
	}
	steps := []struct {
		desc     string
		change   func() error
		moved    []string // each dated after the step before
		kept     []string // each dated as before
		recorded bool     // false: not even "*" moves
	}{
		{
			desc:     "the first publish dates every key it purges but the per-article ones",
			change:   sync,
			moved:    []string{feeds, specs, editedSection, retractedSection, sitemap},
			kept:     []string{newsletter, article},
			recorded: true,
		},
		{
			desc:     "a sync with nothing to change dates nothing",
			change:   sync,
			kept:     watched,
			recorded: false,
		},
		{
			desc: "a retraction moves the feeds and its section, not the registries",
			change: func() error {
				_, err := p.Retract(ctx, retracted.Slug, "Sources did not support the headline.")
				return err
			},
			moved:    []string{feeds, retractedSection, sitemap},
			kept:     []string{specs, newsletter, article},
			recorded: true,
		},
		{
			desc: "a silent edit right after, within the same second or not, still moves the feeds",
			change: func() error {
				e := *edited
				e.Body += "A silent fix.\n"
				_, err := p.SyncArticle(ctx, &e)
				return err
			},
			moved:    []string{feeds, editedSection},
			kept:     []string{specs, newsletter, article},
			recorded: true,
		},
		{
			desc: "a restore moves the feeds again",
			change: func() error {
				_, err := p.Restore(ctx, retracted.Slug)
				return err
			},
			moved:    []string{feeds, retractedSection},
			kept:     []string{specs, newsletter},
			recorded: true,
		},
		{
			desc: "a newsletter moves the newsletter's key",
			change: func() error {
				_, err := p.SendNewsletter(ctx, "2026-w47", nil)
				return err
			},
			moved:    []string{newsletter},
			kept:     []string{specs, article},
			recorded: true,
		},
	}
	times := func() map[string]time.Time {
		t.Helper()
		m, err := p.Store.ChangeTimes(ctx, watched...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	start := time.Now().Truncate(time.Second)
	if at, err := p.Store.ChangedAt(ctx, watched...); err != nil || !at.IsZero() {
		t.Fatalf("before any change: %v %v", at, err)
	}
	var last time.Time // the latest time of any watched key so far
	for _, step := range steps {
		before := times()
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.desc, err)
		}
		if step.recorded && step.desc != steps[0].desc {
			changes++
		}
		after := times()
		for _, k := range step.moved {
			if !after[k].After(last) || !after[k].After(before[k]) {
				t.Errorf("%s: %s dated %v, not after the last change %v (its own before: %v)", step.desc, k, after[k], last, before[k])
			}
		}
		for _, k := range step.kept {
			if !after[k].Equal(before[k]) {
				t.Errorf("%s: %s moved from %v to %v", step.desc, k, before[k], after[k])
			}
		}
		latest, err := p.Store.ChangedAt(ctx, watched...)
		if err != nil {
			t.Fatal(err)
		}
		if moved := latest.After(last); moved != step.recorded {
			t.Errorf("%s: the latest time went from %v to %v", step.desc, last, latest)
		}
		last = latest
	}
	// Dated by Redis's clock, each change at most a second after the one
	// before: never further ahead than the number of changes.
	if last.Before(start) || last.After(time.Now().Add(time.Duration(changes)*time.Second)) {
		t.Errorf("the last change is dated %v, started at %v, %d changes", last, start, changes)
	}
	// The times are Redis's, not the process's: a new store reads them.
	if at, err := store.New(rdb).ChangedAt(ctx, watched...); err != nil || !at.Equal(last) {
		t.Errorf("another store reads %v (%v), not %v", at, err, last)
	}
}

// TestSampleEventsCarryTheRealEventsMembers: the synthetic event of each
// kind that POST /webhooks?test=true queues (events.Sample) has the data
// members, null or not, that a real event of that kind the publisher
// emits has: a retraction's retracted_at and retraction_reason, a
// correction's corrections and updated_at (docs/decisions.md, delivery).
// They used to share one plain article.
func TestSampleEventsCarryTheRealEventsMembers(t *testing.T) {
	rdb := redistest.Start(t).Client()
	p := newPublisher(rdb)
	ctx := context.Background()
	c := contenttest.Corpus(3)
	testCases := []struct {
		desc, kind string
		emit       func(t *testing.T)
	}{
		{desc: "a first sync publishes", kind: events.ArticlePublished, emit: func(t *testing.T) { syncCorpus(t, p, c) }},
		{desc: "a new correction", kind: events.ArticleCorrected, emit: func(t *testing.T) {
			// As the content loader does, updated_at follows the correction.
			at := contenttest.Base.Add(time.Hour)
			c.Articles[1].Corrections = append(c.Articles[1].Corrections, content.Correction{Date: at, Text: "An earlier version misstated the date."})
			c.Articles[1].UpdatedAt = &at
			syncCorpus(t, p, c)
		}},
		{desc: "a retraction", kind: events.ArticleRetracted, emit: func(t *testing.T) {
			if _, err := p.Retract(ctx, c.Articles[2].Slug, "Sources did not support the headline."); err != nil {
				t.Fatal(err)
			}
		}},
		{desc: "a newsletter", kind: events.NewsletterSent, emit: func(t *testing.T) {
			if _, err := p.SendNewsletter(ctx, content.ISOWeek(contenttest.Base), nil); err != nil {
				t.Fatal(err)
			}
		}},
		{desc: "a changed spec", kind: events.SpecUpdated, emit: func(t *testing.T) { c.Specs[0].Version = "9.9.9"; syncCorpus(t, p, c) }},
	}
	if len(testCases) != len(events.Catalog) {
		t.Fatalf("%d cases for %d event kinds: add the new kind", len(testCases), len(events.Catalog))
	}
	members := func(t *testing.T, data []byte) []string {
		t.Helper()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k, v := range m {
			if string(v) != "null" {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			tc.emit(t)
			var real *events.Event
			for _, e := range streamTypes(t, rdb) {
				if e.Type == tc.kind {
					real = &e
				}
			}
			if real == nil {
				t.Fatalf("no %s event was emitted", tc.kind)
			}
			sample, err := events.Sample(tc.kind, siteRoot, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got, want := members(t, sample.Data), members(t, real.Data); !slices.Equal(got, want) {
				t.Errorf("the test %s event's data has the members %v; a real one has %v", tc.kind, got, want)
			}
		})
	}
}
