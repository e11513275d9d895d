package ask

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
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
// articles, which it keeps current change by change (live.go) and rebuilds
// in the background when the changes pile up or the registries change.
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

	// swapMu orders the replacements of idx: a change applied and a
	// rebuild swapped in never overwrite each other.
	swapMu sync.Mutex

	// wake has room for one signal: requests to rebuild while a build runs
	// collapse into one more build. named signals that changes named
	// articles to apply.
	wake  chan struct{}
	named chan struct{}
	// seq counts announced changes; an index remembers the count when its
	// build began.
	seq atomic.Uint64

	mu sync.Mutex
	// pending are the articles named by changes since the worker last ran,
	// with the change count when they were named.
	pending map[string]uint64
	// applied are the articles changed since the current base's build
	// began, with the change count that named them: a rebuild that read the
	// store before their change applies them again before it is swapped in.
	applied map[string]uint64

	// willRun is set by WillRun; firstBuilt is closed once the first
	// index is in (builtOnce closes it).
	willRun    atomic.Bool
	firstBuilt chan struct{}
	builtOnce  sync.Once

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
	e := &Engine{cfg: cfg, log: cfg.Log, metrics: m, wake: make(chan struct{}, 1), named: make(chan struct{}, 1), firstBuilt: make(chan struct{}), pending: map[string]uint64{}, applied: map[string]uint64{}}
	for _, o := range opts {
		o(e)
	}
	return e, nil
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

// WillRun tells the engine that Run is about to build and maintain its
// index (the origin calls it as it starts following content changes).
// Until Run's first build is in, a question waits for it, up to the
// answer's timeout, instead of building an index of its own: one built on
// demand before the follower's first clear must be built again after it,
// two whole builds at start, which at a million articles is two indexes
// in memory and a minute of both cores (docs/scale.md).
func (e *Engine) WillRun() { e.willRun.Store(true) }

// Index returns the current index. Before the first one is in, it waits
// for Run's (after WillRun) or builds it.
func (e *Engine) Index(ctx context.Context) (*Index, error) {
	if ix := e.idx.Load(); ix != nil {
		return ix, nil
	}
	if e.willRun.Load() {
		t := time.NewTimer(e.cfg.Timeout)
		defer t.Stop()
		select {
		case <-e.firstBuilt:
			return e.idx.Load(), nil
		case <-t.C:
			return nil, errUnavailable
		case <-ctx.Done():
			return nil, ctx.Err()
		}
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
