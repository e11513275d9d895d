package ask

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
)

// How the engine keeps its index current. Every change the store announces
// names its articles (surrogate keys "article:<slug>"); the worker reads
// each named article again and applies it to the index as one change
// (Index.with: O(the change), visible as soon as it is swapped in). A
// change to the registries the index reads (countries, specs, synonyms), a
// Clear, a batch too large to apply article by article, or a delta grown
// past maxDelta rebuilds the index from the store in the background; the
// changes applied meanwhile are applied again to the new index before it is
// swapped in.

// maxNamed bounds the articles applied one by one; a larger batch (a
// whole-corpus sync) waits for the rebuild.
const maxNamed = 1024

// rebuildTags are the surrogate keys of changes an incremental update
// cannot follow: the entity matcher and the synonym table are built from
// the registries.
var rebuildTags = map[string]bool{store.TagCountries: true, store.TagSpecs: true, store.TagSynonyms: true}

// Purge is told the surrogate keys of a content change (invalidation.Purger). It
// never blocks: the worker started by Run does the work.
func (e *Engine) Purge(tags []string) {
	seq := e.seq.Add(1)
	named, rebuild := false, false
	e.mu.Lock()
	for _, t := range tags {
		if rebuildTags[t] {
			rebuild = true
		}
		if slug, ok := strings.CutPrefix(t, "article:"); ok {
			if len(e.pending) >= maxNamed {
				rebuild = true
				continue
			}
			e.pending[slug] = seq
			named = true
		}
	}
	e.mu.Unlock()
	if named {
		select {
		case e.named <- struct{}{}:
		default:
		}
	}
	if rebuild {
		e.signal()
	}
}

// Clear is told that anything may have changed (invalidation.Purger).
func (e *Engine) Clear() {
	e.seq.Add(1)
	e.signal()
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run builds the index, then applies every announced change until ctx ends,
// rebuilding in the background when needed. A failed build is retried with
// backoff; the previous index keeps answering meanwhile.
func (e *Engine) Run(ctx context.Context) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-e.named:
				if err := e.applyNamed(ctx); err != nil && ctx.Err() == nil {
					e.log.Warn("ask: applying a change failed; rebuilding", "err", err)
					e.signal()
				}
			}
		}
	}()
	e.signal()
	var backoff time.Duration
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		}
		start := time.Now()
		ix, err := e.rebuildSince(ctx, e.seq.Load())
		if err == nil && first {
			first = false
			e.log.Info("ask: index built", "articles", ix.Len(), "terms", ix.Terms(), "postings_mib", ix.heapBytes()>>20, "took", time.Since(start).Round(time.Millisecond))
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, time.Second), 30*time.Second)
			e.log.Warn("ask: rebuilding the index failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
				e.signal()
			}
			continue
		}
		backoff = 0
	}
}

// applyNamed applies the articles named by recent changes to the current
// index. Before the first build there is nothing to apply to: the build
// applies them when it is swapped in.
func (e *Engine) applyNamed(ctx context.Context) error {
	e.mu.Lock()
	named := e.pending
	e.pending = map[string]uint64{}
	e.mu.Unlock()
	if len(named) == 0 {
		return nil
	}
	changes, err := e.read(ctx, named)
	if err != nil {
		return err
	}
	e.swapMu.Lock()
	defer e.swapMu.Unlock()
	// Recorded even before the first index exists: the build under way
	// may have read these articles before their change.
	e.mu.Lock()
	for slug, seq := range named {
		e.applied[slug] = max(e.applied[slug], seq)
	}
	e.mu.Unlock()
	cur := e.idx.Load()
	if cur == nil {
		return nil
	}
	nx := cur.with(changes)
	e.idx.Store(nx)
	if nx.deltaSize() > maxDelta {
		e.signal() // merge: rebuild the base
	}
	return nil
}

// read reads the named articles from the store as changes, in one round
// trip.
func (e *Engine) read(ctx context.Context, named map[string]uint64) ([]change, error) {
	slugs := slices.Sorted(maps.Keys(named))
	articles, err := e.readArticles(ctx, slugs)
	if err != nil {
		return nil, err
	}
	changes := make([]change, len(slugs))
	for i, slug := range slugs {
		a, err := articles[i].article()
		if err != nil {
			return nil, fmt.Errorf("ask: reading %q: %w", slug, err)
		}
		changes[i] = change{slug: slug, a: a}
	}
	return changes, nil
}

// readArticles reads articles from the store with one MGET (an
// articleSource), fingerprinted by their stored bytes: an article whose
// analysed text is cached is not decoded.
func (e *Engine) readArticles(ctx context.Context, slugs []string) ([]sourced, error) {
	recs, err := e.cfg.Store.ArticlesBySlug(ctx, slugs)
	if err != nil {
		return nil, fmt.Errorf("ask: reading articles: %w", err)
	}
	out := make([]sourced, len(slugs))
	for i, rec := range recs {
		if rec != nil {
			out[i] = sourced{fingerprint: storedFingerprint(rec), stored: rec}
		}
	}
	return out, nil
}

// buildFromStore builds an index from the store, reading the articles a
// page at a time (an archive's text is never in memory whole) and their text
// for answers from the store again. Pages are read by offset: an article
// published or retracted meanwhile may be missed or read twice (the index
// keeps one copy), and the change that moved it is applied once the build
// is swapped in.
func (e *Engine) buildFromStore(ctx context.Context) (*Index, error) {
	st := e.cfg.Store
	first, err := st.Articles(ctx, store.ArticleFilter{}, 0, 1, nil)
	if err != nil {
		return nil, fmt.Errorf("ask: reading articles: %w", err)
	}
	var c Corpus
	if c.Countries, err = st.Countries(ctx); err != nil {
		return nil, fmt.Errorf("ask: reading countries: %w", err)
	}
	if c.Specs, err = st.Specs(ctx); err != nil {
		return nil, fmt.Errorf("ask: reading specs: %w", err)
	}
	if c.Synonyms, err = st.Synonyms(ctx); err != nil {
		return nil, fmt.Errorf("ask: reading synonyms: %w", err)
	}
	read := func(ctx context.Context, lo, hi int) ([]*content.Article, error) {
		if hi <= lo {
			return nil, nil
		}
		p, err := st.Articles(ctx, store.ArticleFilter{}, lo, hi-lo, nil)
		if err != nil {
			return nil, fmt.Errorf("ask: reading articles: %w", err)
		}
		out := make([]*content.Article, len(p.Articles))
		for i, rec := range p.Articles {
			out[i] = &rec.Article
		}
		return out, nil
	}
	return buildPaged(ctx, c, first.Total, read, e.cfg.SiteRoot, e.readArticles)
}

// Use replaces the index with one built from c, for tests and offline tools
// that have a corpus in hand rather than a store. A running Run replaces it
// at the next change it is told of.
func (e *Engine) Use(c Corpus) {
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	start := time.Now()
	ix := buildIndex(c, e.cfg.SiteRoot)
	e.swapMu.Lock()
	ix.seq = e.seq.Load()
	e.idx.Store(ix)
	e.builtOnce.Do(func() { close(e.firstBuilt) })
	e.swapMu.Unlock()
	e.metrics.built(ix, time.Since(start), nil)
}

// Rebuild builds a new index from the store now and swaps it in.
func (e *Engine) Rebuild(ctx context.Context) error {
	_, err := e.rebuild(ctx)
	return err
}

// rebuild builds a new index from the store and swaps it in.
func (e *Engine) rebuild(ctx context.Context) (*Index, error) {
	return e.rebuildSince(ctx, math.MaxUint64)
}

// rebuildSince is rebuild for the changes counted up to signalled: when the
// current index's build began after all of them (a request built it on
// demand while this call waited for the build lock, as one arriving right
// after start does), that index already reflects them and is returned as
// it is, instead of a second whole build.
func (e *Engine) rebuildSince(ctx context.Context, signalled uint64) (*Index, error) {
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	if cur := e.idx.Load(); cur != nil && cur.seq >= signalled {
		return cur, nil
	}
	seq := e.seq.Load()
	start := time.Now()
	ix, err := e.buildFromStore(ctx)
	if err != nil {
		e.metrics.built(nil, 0, err)
		return nil, err
	}
	ix.seq = seq

	// Changes applied since this build read the store are applied again:
	// the build may have read an article before its change.
	e.swapMu.Lock()
	defer e.swapMu.Unlock()
	e.mu.Lock()
	again := map[string]uint64{}
	for slug, s := range e.applied {
		if s > seq {
			again[slug] = s
		} else {
			delete(e.applied, slug)
		}
	}
	e.mu.Unlock()
	if len(again) > 0 {
		changes, err := e.read(ctx, again)
		if err != nil {
			e.metrics.built(nil, 0, err)
			return nil, err
		}
		ix = ix.with(changes)
	}
	e.idx.Store(ix)
	e.builtOnce.Do(func() { close(e.firstBuilt) })
	e.metrics.built(ix, time.Since(start), nil)
	e.log.Debug("ask: index rebuilt", "articles", ix.Len(), "terms", ix.Terms(), "took", time.Since(start))
	return ix, nil
}
