package ask

import (
	"context"
	"errors"
	"fmt"
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
		ix, err := e.rebuild(ctx)
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
// reads them.
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
	cur := e.idx.Load()
	if cur == nil {
		return nil
	}
	nx := cur.with(changes)
	e.idx.Store(nx)
	e.mu.Lock()
	for slug, seq := range named {
		e.applied[slug] = max(e.applied[slug], seq)
	}
	e.mu.Unlock()
	if nx.deltaSize() > maxDelta {
		e.signal() // merge: rebuild the base
	}
	return nil
}

// read reads the named articles from the store as changes.
func (e *Engine) read(ctx context.Context, named map[string]uint64) ([]change, error) {
	changes := make([]change, 0, len(named))
	for slug := range named {
		a, err := e.readArticle(ctx, slug)
		if err != nil {
			return nil, err
		}
		changes = append(changes, change{slug: slug, a: a})
	}
	return changes, nil
}

// readArticle reads a published article from the store: nil, nil when it
// is retracted or gone.
func (e *Engine) readArticle(ctx context.Context, slug string) (*content.Article, error) {
	rec, err := e.cfg.Store.Article(ctx, slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask: reading article %s: %w", slug, err)
	}
	if rec.Retracted() {
		return nil, nil
	}
	return &rec.Article, nil
}

// Use replaces the index with one built from c, for tests and offline tools
// that have a corpus in hand rather than a store. A running Run replaces it
// again at the next rebuild.
func (e *Engine) Use(c Corpus) {
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	start := time.Now()
	ix := buildIndex(c, e.cfg.SiteRoot)
	e.swapMu.Lock()
	ix.seq = e.seq.Load()
	e.idx.Store(ix)
	e.swapMu.Unlock()
	e.metrics.built(ix, time.Since(start), nil)
}

// Rebuild builds a new index from the store now and swaps it in.
func (e *Engine) Rebuild(ctx context.Context) error {
	_, err := e.rebuild(ctx)
	return err
}

func (e *Engine) rebuild(ctx context.Context) (*Index, error) {
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	seq := e.seq.Load()
	start := time.Now()
	c, err := LoadCorpus(ctx, e.cfg.Store)
	if err != nil {
		e.metrics.built(nil, 0, err)
		return nil, err
	}
	ix := buildWith(c, e.cfg.SiteRoot, e.readArticle)
	c = Corpus{} // the articles' text is not kept
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
	e.metrics.built(ix, time.Since(start), nil)
	e.log.Debug("ask: index rebuilt", "articles", ix.Len(), "terms", ix.Terms(), "took", time.Since(start))
	return ix, nil
}
