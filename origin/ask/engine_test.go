package ask

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// published starts a real Redis with the synthetic corpus plus one article
// about a word no other article uses, and returns the store, a publisher and
// that article.
func published(t *testing.T) (*store.Store, *store.Publisher, *content.Article) {
	t.Helper()
	st := store.New(redistest.New(t).Client())
	now := contenttest.Base.Add(24 * time.Hour)
	pub := &store.Publisher{Store: st, SiteRoot: testSiteRoot, Now: func() time.Time { return now }}
	c := contenttest.Corpus(20)
	if err := pub.SyncCorpus(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	a := contenttest.Article(100)
	a.Slug = "zanzibar-adopts-peppol"
	a.Title = "Zanzibar adopts Peppol for public procurement"
	a.Dek = "The islands' procurement agency will receive e-invoices over Peppol."
	a.Body = "Zanzibar's procurement agency announced the change on Monday. Suppliers must register first.\n"
	if _, err := pub.SyncArticle(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return st, pub, a
}

// slugs asks q and returns the slugs of the answer's articles.
func slugs(t *testing.T, e *Engine, q string) []string {
	t.Helper()
	ans, err := e.Ask(context.Background(), Request{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ans.Results {
		out = append(out, r.Slug)
	}
	return out
}

// eventually polls cond until it holds. The deadline only stops a hung
// test; how long it took is logged, never asserted (speed is for
// benchmarks).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s did not happen", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("%s after %s", what, time.Since(start).Round(time.Millisecond))
}

// TestFollowsContent drives an Engine the way the origin does (Run, and
// invalidation.Follow on a real Redis) and changes content under it: a new
// article appears, a retracted one disappears, a restored one comes back.
func TestFollowsContent(t *testing.T) {
	st, pub, a := published(t)
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	ready := make(chan struct{})
	go invalidation.Follow(ctx, st.Client(), e, st.Version, quiet, ready)
	<-ready

	const q = "Zanzibar procurement"
	if got := slugs(t, e, q); len(got) == 0 || got[0] != a.Slug {
		t.Fatalf("answers %q, want %s first", got, a.Slug)
	}

	b := contenttest.Article(101)
	b.Slug, b.Title = "pemba-follows-zanzibar", "Pemba follows Zanzibar on procurement e-invoicing"
	if _, err := pub.SyncArticle(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new article appears", func() bool { return slices.Contains(slugs(t, e, q), b.Slug) })

	if _, err := pub.Retract(ctx, a.Slug, "The agency denied the report."); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a retracted article disappears", func() bool { return !slices.Contains(slugs(t, e, q), a.Slug) })

	if _, err := pub.Restore(ctx, a.Slug); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a restored article comes back", func() bool { return slices.Contains(slugs(t, e, q), a.Slug) })
}

// TestFirstBuildOnDemandCoversStart: a question that arrives right after
// start builds the index on demand, before Run's first build takes the
// build lock; Run's build for the changes told until then (the follower's
// first clear) then finds that index and builds nothing more. A change
// told after the on-demand build still rebuilds.
func TestFirstBuildOnDemandCoversStart(t *testing.T) {
	st, _, a := published(t)
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	builds := func() float64 { return testutil.ToFloat64(e.metrics.builds.WithLabelValues("ok")) }
	ctx := context.Background()
	e.Clear() // the follower's first resync
	signalled := e.seq.Load()
	if got := slugs(t, e, "Zanzibar procurement"); len(got) == 0 || got[0] != a.Slug {
		t.Fatalf("answers %q, want %s first", got, a.Slug)
	}
	built := e.idx.Load()
	if ix, err := e.rebuildSince(ctx, signalled); err != nil || ix != built || builds() != 1 {
		t.Fatalf("Run's first build after an on-demand one: same index %v, %v builds (%v); want the same index, one build", ix == built, builds(), err)
	}
	e.Clear()
	if ix, err := e.rebuildSince(ctx, e.seq.Load()); err != nil || ix == built || builds() != 2 {
		t.Fatalf("a build for a later change: new index %v, %v builds (%v); want a new index, two builds", ix != built, builds(), err)
	}
}

// TestWillRunWaitsForRunsBuild: after WillRun a question asked before
// Run's first build waits for that build instead of building an index of
// its own, and gets the 503 for an index not available yet when the build
// does not come within the answer's timeout; once Run has built, it is
// answered from that one build.
func TestWillRunWaitsForRunsBuild(t *testing.T) {
	st, _, a := published(t)
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet, Timeout: 200 * time.Millisecond})
	builds := func() float64 { return testutil.ToFloat64(e.metrics.builds.WithLabelValues("ok")) }
	e.WillRun()
	e.Clear() // the follower's first resync
	if _, err := e.Ask(context.Background(), Request{Query: "Zanzibar procurement"}); !errors.Is(err, errUnavailable) || builds() != 0 {
		t.Fatalf("a question before Run: %v, %v builds; want the index unavailable and no build", err, builds())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	eventually(t, "an answer from Run's build", func() bool {
		ans, err := e.Ask(ctx, Request{Query: "Zanzibar procurement"})
		return err == nil && len(ans.Results) > 0 && ans.Results[0].Slug == a.Slug
	})
	// The build is counted just after its index is swapped in, so an
	// answer from it can come first.
	eventually(t, "Run's build counted", func() bool { return builds() >= 1 })
	if n := builds(); n != 1 {
		t.Fatalf("%v builds; want Run's one", n)
	}
}

// TestRetractionBeforeRebuild: the worker takes a retracted article out of
// the index it already has, without a rebuild (the base segment stays),
// and a later rebuild does not bring it back.
func TestRetractionBeforeRebuild(t *testing.T) {
	st, pub, a := published(t)
	ctx := context.Background()
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	if err := e.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	before := e.idx.Load()
	const q = "Zanzibar procurement"
	if !slices.Contains(slugs(t, e, q), a.Slug) {
		t.Fatal("the article is not found before the retraction")
	}
	if _, err := pub.Retract(ctx, a.Slug, "The agency denied the report."); err != nil {
		t.Fatal(err)
	}
	// What the invalidation follower does, then one pass of the worker without
	// the rebuild.
	e.Purge([]string{store.TagArticle(a.Slug), store.TagList})
	if err := e.applyNamed(ctx); err != nil {
		t.Fatal(err)
	}
	if e.idx.Load().base != before.base {
		t.Fatal("the index was rebuilt; this test is about the moment before")
	}
	if slices.Contains(slugs(t, e, q), a.Slug) {
		t.Fatal("the retracted article is still answered from the old index")
	}
	if err := e.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(slugs(t, e, q), a.Slug) {
		t.Fatal("the retracted article is in the new index")
	}
	if n := e.idx.Load().deltaSize(); n != 0 {
		t.Errorf("the rebuilt index still has %d changes in its delta", n)
	}
	// An article named by a change but still published stays.
	kept := contenttest.Article(1)
	e.Purge([]string{store.TagArticle(kept.Slug)})
	if err := e.applyNamed(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.idx.Load().lookup(kept.Slug); !ok {
		t.Errorf("a published article named by a change left the index")
	}
}

// TestStoreDown: without an index and without Redis, the answer is a 503,
// as JSON, before any stream.
func TestStoreDown(t *testing.T) {
	srv := redistest.New(t)
	st := store.New(srv.Client())
	srv.Stop()
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	_, err := e.Ask(context.Background(), Request{Query: "Peppol"})
	if ae := (*apierror.Error)(nil); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("Ask: %v, want a 503", err)
	}
	hs := httptest.NewServer(e)
	defer hs.Close()
	resp := post(t, hs, "application/json", `{"query":"Peppol","prefer":{"streaming":true}}`, nil)
	checkError(t, resp, readBody(t, resp), 503)
}

// TestSwapUnderLoad asks from many goroutines while the index is replaced
// again and again: no answer sees a half-built index (run with -race).
func TestSwapUnderLoad(t *testing.T) {
	small := contenttest.Corpus(30)
	bigger := contenttest.Corpus(60)
	e := mustNew(t, Config{SiteRoot: testSiteRoot})
	e.Use(Corpus{Articles: small.Articles, Countries: small.Countries, Specs: small.Specs, Synonyms: small.Synonyms})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				ans, err := e.Ask(ctx, Request{Query: "synthetic e-invoicing in Germany", MaxResults: 20})
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				if len(ans.Results) == 0 {
					t.Error("an answer without results")
					return
				}
			}
		})
	}
	for i := range 40 {
		c := small
		if i%2 == 1 {
			c = bigger
		}
		e.Use(Corpus{Articles: c.Articles, Countries: c.Countries, Specs: c.Specs, Synonyms: c.Synonyms})
	}
	cancel()
	wg.Wait()
}

// TestLoadCorpusPages reads an archive of several pages: every published
// article once, retracted ones never.
func TestLoadCorpusPages(t *testing.T) {
	st := store.New(redistest.New(t).Client())
	ctx := context.Background()
	pub := &store.Publisher{Store: st, SiteRoot: testSiteRoot, Now: func() time.Time { return contenttest.Base }}
	const n = 1234
	if err := pub.SyncCorpus(ctx, contenttest.Corpus(n), nil); err != nil {
		t.Fatal(err)
	}
	gone := contenttest.Article(777).Slug
	if _, err := pub.Retract(ctx, gone, "test"); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCorpus(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range c.Articles {
		if seen[a.Slug] {
			t.Errorf("%s read twice", a.Slug)
		}
		seen[a.Slug] = true
	}
	if len(seen) != n-1 || seen[gone] {
		t.Errorf("read %d articles (retracted one included: %v), want %d", len(seen), seen[gone], n-1)
	}
	if len(c.Countries) != len(contenttest.Countries) || len(c.Specs) != len(contenttest.Specs) {
		t.Errorf("registries: %d countries, %d specs", len(c.Countries), len(c.Specs))
	}
}

// TestRetractionDuringRebuild: while a rebuild is under way (here: held),
// a retraction still leaves the answers, through the quick check.
func TestRetractionDuringRebuild(t *testing.T) {
	st, pub, a := published(t)
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	go e.Run(ctx)
	ready := make(chan struct{})
	go invalidation.Follow(ctx, st.Client(), e, st.Version, quiet, ready)
	<-ready

	const q = "Zanzibar procurement"
	e.buildMu.Lock() // a rebuild that takes as long as this test needs
	defer e.buildMu.Unlock()
	before := e.idx.Load()
	if _, err := pub.Retract(ctx, a.Slug, "The agency denied the report."); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a retracted article disappears while a rebuild is held", func() bool { return !slices.Contains(slugs(t, e, q), a.Slug) })
	if e.idx.Load().base != before.base {
		t.Fatal("the index was rebuilt although the rebuild was held")
	}
}
