package ask

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/store"
)

// Config configures an Engine.
type Config struct {
	// Store is where the index is built from.
	Store *store.Store
	// SiteRoot is {site_root}, the base of the articles' URLs.
	SiteRoot string
	Log      *slog.Logger
	// Timeout bounds the work of one answer once the index is ready
	// (default 10s).
	Timeout time.Duration
	// Registry receives the engine's metrics; nil means a private one.
	Registry prometheus.Registerer
}

// Engine answers questions from an in-memory index of the published
// articles, which it rebuilds in the background when content changes.
//
// Run keeps the index current; Purge and Clear (the invalidation.Purger
// interface) tell it that content changed, so an Engine can be driven by
// invalidation.Follow next to the response cache. Ask answers a
// question in Go (the MCP ask tool uses it); ServeHTTP answers POST /ask.
type Engine struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	idx     atomic.Pointer[Index]
	buildMu sync.Mutex

	// wake has room for one signal: requests to rebuild while a build runs
	// collapse into one more build. named signals that changes named
	// articles to check.
	wake  chan struct{}
	named chan struct{}
	// seq counts announced changes; an index remembers the count when its
	// build began.
	seq atomic.Uint64

	mu sync.Mutex
	// pending are the articles named by changes since the worker last ran,
	// with the change count when they were named.
	pending map[string]uint64
	// hidden are articles found retracted (or deleted) that the current
	// index may still hold, with the change count that named them; an
	// index whose build began later no longer needs them.
	hidden atomic.Pointer[map[string]uint64]

	// inflight counts requests being answered over HTTP.
	inflight atomic.Int64
	// resultHook, set by an Option, runs before each result event of a
	// stream.
	resultHook func(ctx context.Context, index int)
}

// Option configures an Engine beyond its Config. The package's tests use
// options to watch a stream from the inside; production code passes none.
type Option func(*Engine)

// New returns an Engine. Call Run to build and maintain its index; until the
// first build completes, Ask builds it on demand. It fails only when its
// metrics cannot be registered.
func New(cfg Config, opts ...Option) (*Engine, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, log: cfg.Log, metrics: m, wake: make(chan struct{}, 1), named: make(chan struct{}, 1), pending: map[string]uint64{}}
	for _, o := range opts {
		o(e)
	}
	empty := map[string]uint64{}
	e.hidden.Store(&empty)
	return e, nil
}

// Purge is told the surrogate keys of a content change (invalidation.Purger). It
// never blocks: the worker started by Run does the work.
func (e *Engine) Purge(tags []string) {
	seq := e.seq.Add(1)
	named := false
	e.mu.Lock()
	for _, t := range tags {
		// Past maxQuickChecks (a whole-corpus sync) the rebuild settles
		// everything; the map stays small meanwhile.
		if slug, ok := strings.CutPrefix(t, "article:"); ok && len(e.pending) <= maxQuickChecks {
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
	e.signal()
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

// Run builds the index and rebuilds it after every announced change until
// ctx ends. A failed build is retried with backoff; the previous index keeps
// answering meanwhile. Beside the rebuilds, a second loop checks the
// articles that changes name, so a retraction is not kept waiting by a
// rebuild under way.
func (e *Engine) Run(ctx context.Context) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-e.named:
				e.hideRetracted(ctx)
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
			e.log.Info("ask: index built", "articles", ix.Len(), "terms", len(ix.idf), "took", time.Since(start).Round(time.Millisecond))
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

// maxQuickChecks bounds the articles checked one by one; a larger batch (a
// whole-corpus sync) waits for the rebuild.
const maxQuickChecks = 64

// hideRetracted checks the articles named by recent changes and hides at
// once those that are no longer published.
// A rebuild of a large corpus takes a while; a retraction must not wait for
// it (docs/decisions.md (retraction and correction): a retracted article disappears from every search answer).
func (e *Engine) hideRetracted(ctx context.Context) {
	e.mu.Lock()
	named := e.pending
	e.pending = map[string]uint64{}
	e.mu.Unlock()
	if len(named) == 0 || len(named) > maxQuickChecks {
		return
	}
	// Every named article is checked, not only those the current index
	// holds: a rebuild under way may have read one before its retraction.
	var gone map[string]uint64
	for slug, seq := range named {
		rec, err := e.cfg.Store.Article(ctx, slug)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			continue // the rebuild that follows will settle it
		}
		if err == nil && !rec.Retracted() {
			continue
		}
		if gone == nil {
			gone = map[string]uint64{}
		}
		gone[slug] = seq
	}
	if len(gone) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := map[string]uint64{}
	for k, v := range *e.hidden.Load() {
		next[k] = v
	}
	for k, v := range gone {
		next[k] = v
	}
	e.hidden.Store(&next)
}

// Use replaces the index with one built from c, for tests and offline tools
// that have a corpus in hand rather than a store. A running Run replaces it
// again at the next content change.
func (e *Engine) Use(c Corpus) {
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	start := time.Now()
	ix := buildIndex(c, e.cfg.SiteRoot)
	ix.seq = e.seq.Load()
	e.idx.Store(ix)
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
	ix := buildIndex(c, e.cfg.SiteRoot)
	ix.seq = seq
	e.idx.Store(ix)
	e.metrics.built(ix, time.Since(start), nil)
	e.mu.Lock()
	if h := *e.hidden.Load(); len(h) > 0 {
		next := map[string]uint64{}
		for k, v := range h {
			if v > seq {
				next[k] = v
			}
		}
		e.hidden.Store(&next)
	}
	e.mu.Unlock()
	e.log.Debug("ask: index rebuilt", "articles", ix.Len(), "terms", len(ix.idf), "took", time.Since(start))
	return ix, nil
}

// LoadCorpus reads every published article and the country and spec
// registries from the store. Pages are read by offset, several at once: an
// article published or retracted meanwhile may be missed or read twice (the
// index keeps one copy), and the change that moved it triggers the next
// rebuild anyway.
func LoadCorpus(ctx context.Context, st *store.Store) (Corpus, error) {
	var c Corpus
	const page, readers = 500, 4
	first, err := st.Articles(ctx, store.ArticleFilter{}, 0, page, nil)
	if err != nil {
		return c, fmt.Errorf("ask: reading articles: %w", err)
	}
	pages := make([][]*store.ArticleRecord, max(1, (first.Total+page-1)/page))
	pages[0] = first.Articles
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		readErr error
		next    atomic.Int64
	)
	next.Store(1)
	for range min(readers, len(pages)-1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pages) || ctx.Err() != nil {
					return
				}
				p, err := st.Articles(ctx, store.ArticleFilter{}, i*page, page, nil)
				if err != nil {
					errOnce.Do(func() { readErr = err })
					return
				}
				pages[i] = p.Articles
			}
		})
	}
	wg.Wait()
	if readErr != nil {
		return c, fmt.Errorf("ask: reading articles: %w", readErr)
	}
	for _, p := range pages {
		for _, rec := range p {
			c.Articles = append(c.Articles, &rec.Article)
		}
	}
	if c.Countries, err = st.Countries(ctx); err != nil {
		return c, fmt.Errorf("ask: reading countries: %w", err)
	}
	if c.Specs, err = st.Specs(ctx); err != nil {
		return c, fmt.Errorf("ask: reading specs: %w", err)
	}
	if c.Synonyms, err = st.Synonyms(ctx); err != nil {
		return c, fmt.Errorf("ask: reading synonyms: %w", err)
	}
	return c, nil
}

// errUnavailable is returned when there is no index and none can be built.
var errUnavailable = apierror.New(http.StatusServiceUnavailable, "The search index is not available yet.", "Try again in a few seconds.")

// Index returns the current index, building it first if there is none yet.
func (e *Engine) Index(ctx context.Context) (*Index, error) {
	if ix := e.idx.Load(); ix != nil {
		return ix, nil
	}
	// Requests that arrive together before the first build wait for one
	// build, not one each.
	e.buildMu.Lock()
	ix := e.idx.Load()
	e.buildMu.Unlock()
	if ix != nil {
		return ix, nil
	}
	ix, err := e.rebuild(ctx)
	if err != nil {
		if ix := e.idx.Load(); ix != nil {
			return ix, nil // built by Run while this one failed
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e.log.ErrorContext(ctx, "ask: building the index failed", "err", err)
		return nil, errUnavailable
	}
	return ix, nil
}

// hiddenDocs returns the documents of ix to leave out: articles retracted
// since its build began.
func (e *Engine) hiddenDocs(ix *Index) map[uint32]struct{} {
	h := *e.hidden.Load()
	if len(h) == 0 {
		return nil
	}
	out := map[uint32]struct{}{}
	for slug, seq := range h {
		if d, ok := ix.bySlug[slug]; ok && seq > ix.seq {
			out[d] = struct{}{}
		}
	}
	return out
}
