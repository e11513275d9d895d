package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/store"
)

// Limits of docs/decisions.md (ask).
const (
	// MaxQueryChars bounds a question, in characters after trimming.
	MaxQueryChars = 500
	// DefaultResults and MaxResults bound the number of articles in an
	// answer (prefer.max_results).
	DefaultResults = 10
	MaxResults     = 50
	// MaxPrev bounds the earlier queries of a conversation that are read.
	MaxPrev = 10
	// SummarizeResults is the number of articles a summarize answer
	// returns unless prefer.max_results says otherwise.
	SummarizeResults = 3
	// maxLocaleBytes bounds a locale tag (RFC 5646 §4.4.1 recommends
	// supporting at least 35 characters).
	maxLocaleBytes = 35
)

// Modes of NLWeb: a list of results, or a summary first and fewer results.
// generate asks for a generated answer; it is answered as summarize, with a
// note saying so, since no generative model is used.
const (
	ModeList      = "list"
	ModeSummarize = "summarize"
	ModeGenerate  = "generate"
)

// generateNote is _meta.note of an answer to mode generate.
const generateNote = "mode generate is answered as summarize: no generative model is used; the summary quotes the articles verbatim."

// Protocol constants of the answer (NLWeb v0.55, docs/decisions.md (ask)).
const (
	protocolVersion = "0.55"
	siteName        = "Invoicewire"
)

// minResultScore is the normalised score below which an article is not
// returned, unless it scores at least half as well as the best one: it shares
// only a word or two of the question's commonest vocabulary, which is noise
// beside better answers. (A vague question scores low throughout and keeps
// its results.)
const minResultScore = 8

// Request is one question.
type Request struct {
	// Query is the question, 1 to MaxQueryChars characters after trimming.
	Query string
	// Locale is a BCP 47 language tag; "" means "en".
	Locale string
	// MaxResults bounds the number of articles, 1 to MaxResults; 0 means
	// DefaultResults.
	MaxResults int
	// RequestID names the request in _meta; "" generates one.
	RequestID string
	// Prev are the conversation's earlier queries, oldest first (NLWeb
	// prev), at most MaxPrev of at most MaxQueryChars each. A follow-up
	// ("and for the self-employed?") is answered in their context.
	Prev []string
	// Mode is the NLWeb mode: "list" (or ""), "summarize" or "generate",
	// which is answered as summarize (no generative model is used).
	Mode string
}

// localeTag is the shape of a BCP 47 tag, loosely: a language subtag and
// alphanumeric subtags (RFC 5646 §2.1), "-" or "_" separated.
var localeTag = regexp.MustCompile(`^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$`)

// normalize checks r against the ask rule's (docs/decisions.md) limits and fills in defaults. Errors are
// *apierror.Error values with status 400.
func (r Request) normalize() (Request, error) {
	r.Query = strings.TrimSpace(r.Query)
	switch n := utf8.RuneCountInString(r.Query); {
	case n == 0:
		return r, apierror.BadRequest("query is empty.", "Send a question of 1 to 500 characters in query.")
	case n > MaxQueryChars:
		return r, apierror.BadRequest(fmt.Sprintf("query has %d characters; at most %d are allowed.", n, MaxQueryChars), "Shorten the question to 500 characters or fewer.")
	}
	r.Locale = strings.TrimSpace(r.Locale)
	if r.Locale == "" {
		r.Locale = "en"
	}
	if len(r.Locale) > maxLocaleBytes || !localeTag.MatchString(r.Locale) {
		return r, apierror.BadRequest("locale is not a language tag.", "Send a BCP 47 language tag such as en or en-GB, or leave locale out.")
	}
	if len(r.Prev) > MaxPrev {
		return r, apierror.BadRequest(fmt.Sprintf("prev has %d queries; at most %d are read.", len(r.Prev), MaxPrev), "Send the last 10 queries of the conversation at most.")
	}
	prev := r.Prev[:0:0]
	for _, q := range r.Prev {
		q = strings.TrimSpace(q)
		if utf8.RuneCountInString(q) > MaxQueryChars {
			return r, apierror.BadRequest(fmt.Sprintf("a query of prev has more than %d characters.", MaxQueryChars), "Shorten each earlier query to 500 characters or fewer.")
		}
		if q != "" {
			prev = append(prev, q)
		}
	}
	r.Prev = prev
	switch r.Mode = strings.ToLower(strings.TrimSpace(r.Mode)); r.Mode {
	case "", "list", "none":
		r.Mode = ModeList
	case ModeSummarize, ModeGenerate:
	default:
		return r, apierror.BadRequest(fmt.Sprintf("mode %q is not supported.", r.Mode), "Send mode list (the default), summarize or generate.")
	}
	switch {
	case r.MaxResults == 0 && r.Mode != ModeList:
		r.MaxResults = SummarizeResults
	case r.MaxResults == 0:
		r.MaxResults = DefaultResults
	case r.MaxResults < 1 || r.MaxResults > MaxResults:
		return r, apierror.BadRequest(fmt.Sprintf("prefer.max_results %d is out of range.", r.MaxResults), "prefer.max_results must be an integer from 1 to 50.")
	}
	if r.RequestID == "" {
		r.RequestID = newRequestID()
	}
	return r, nil
}

func newRequestID() string { return events.NewID("req_", time.Now()) }

// Meta is the _meta block of an answer and of every stream event (docs/decisions.md, ask).
type Meta struct {
	ResponseType string `json:"response_type"`
	Version      string `json:"version"`
	RequestID    string `json:"request_id"`
	Locale       string `json:"locale"`
	// LocaleFallback is "en" when the requested locale has no articles and
	// the answer is in English instead.
	LocaleFallback string `json:"locale_fallback,omitempty"`
	// TookMS is the time spent on the answer so far, in milliseconds.
	TookMS float64 `json:"took_ms"`
	// SummaryMethod says how a SearchSummary is made: always by quoting.
	SummaryMethod string `json:"summary_method"`
	// Mode is the mode answered: list or summarize (generate is answered
	// as summarize).
	Mode string `json:"mode"`
	// DecontextualizedQuery is the question as answered when it was read
	// as a follow-up of prev: the query with the subject it continues.
	DecontextualizedQuery string `json:"decontextualized_query,omitempty"`
	// Note says how the answer departs from what was asked.
	Note string `json:"note,omitempty"`
}

// Result is one article of an answer.
type Result struct {
	Type string `json:"@type"`
	URL  string `json:"url"`
	Name string `json:"name"`
	Site string `json:"site"`
	// Score is the relevance on a 0–100 scale: the share of the best score
	// the question allows.
	Score int `json:"score"`
	// Description is the article's sentence that covers most of the
	// question (its dek when none does), at most 300 bytes.
	Description   string    `json:"description"`
	DatePublished time.Time `json:"datePublished"`
	Slug          string    `json:"slug"`
}

// Summary is an extractive summary: sentences quoted verbatim from the
// cited articles, never generated.
type Summary struct {
	Type string `json:"@type"`
	// Text is the quoted sentences joined by spaces.
	Text string `json:"text"`
	// Citations are the URLs of the quoted articles, in order of first use.
	Citations []string `json:"citations"`
	// Sentences are the quotes one by one, each with its article's URL.
	Sentences []Quote `json:"sentences"`
	// Answer is the span of the first sentence that answers the question
	// (a date for "when", an amount for "how much"…); nil when the
	// question asks for no such span or no sentence carries one.
	Answer *AnswerSpan `json:"answer,omitempty"`
}

// AnswerSpan is the exact words of a quoted sentence that answer the
// question.
type AnswerSpan struct {
	// Text is the span, verbatim from Sentence.
	Text string `json:"text"`
	// Sentence is the sentence it is in: the summary's first.
	Sentence string `json:"sentence"`
	// URL is the article the sentence is quoted from.
	URL string `json:"url"`
	// Kind is what the question asked for: when, amount, name or yes-no.
	Kind string `json:"kind"`
}

// Quote is one sentence of a Summary and the article it comes from.
type Quote struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Answer is the answer to a Request.
type Answer struct {
	Meta  Meta
	Query string
	// Summary is nil when the results are not strong enough to quote.
	Summary *Summary
	// Results are the articles, best first; empty when nothing matches.
	Results []Result
}

// Items returns the items of the JSON "results" array and of the stream's
// result events: the summary first when there is one, then the articles.
func (a *Answer) Items() []any {
	items := make([]any, 0, len(a.Results)+1)
	if a.Summary != nil {
		items = append(items, a.Summary)
	}
	for i := range a.Results {
		items = append(items, &a.Results[i])
	}
	return items
}

// MarshalJSON renders the JSON answer of docs/decisions.md (ask):
// {"_meta":…,"query":…,"results":[…]}.
func (a *Answer) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Meta    Meta   `json:"_meta"`
		Query   string `json:"query"`
		Results []any  `json:"results"`
	}{a.Meta, a.Query, a.Items()})
}

// marshal encodes v without HTML escaping: answers are JSON, never embedded
// in HTML, and URLs keep their "&".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

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

	// inflight counts requests being answered over HTTP.
	inflight atomic.Int64
	// beforeResult, when set by a test, runs before each result event.
	beforeResult func(ctx context.Context, index int)
}

// New returns an Engine. Call Run to build and maintain its index; until the
// first build completes, Ask builds it on demand. It fails only when its
// metrics cannot be registered.
func New(cfg Config) (*Engine, error) {
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
	e := &Engine{cfg: cfg, log: cfg.Log, metrics: m, wake: make(chan struct{}, 1), named: make(chan struct{}, 1), pending: map[string]uint64{}, applied: map[string]uint64{}}
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

// Ask answers a question. Errors are *apierror.Error values (400 for a
// request outside the ask rule's (docs/decisions.md) limits, 503 when the index cannot be built) or the
// context's error.
func (e *Engine) Ask(ctx context.Context, req Request) (*Answer, error) {
	start := time.Now()
	req, err := req.normalize()
	if err != nil {
		return nil, err
	}
	ix, err := e.Index(ctx)
	if err != nil {
		return nil, err
	}
	p := e.begin(ctx, ix, req, start)
	defer p.cancel()
	return e.collect(ctx, p, start)
}

// late turns the failure of an answer under way into the error to report:
// the caller's own cancellation as is, the engine's timeout as a 503.
func (e *Engine) late(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apierror.New(http.StatusServiceUnavailable, fmt.Sprintf("The answer took longer than %s.", e.cfg.Timeout), "Try a shorter question, or try again.")
	}
	return err
}

// prepared is an answer whose articles are ranked and whose summary is
// chosen, with the descriptions still to be cut: a stream sends each result
// as soon as its description is ready.
type prepared struct {
	ctx     context.Context
	cancel  context.CancelFunc
	ix      *Index
	q       *query
	req     Request
	hits    []hit
	summary *Summary
	// text is the question answered: the query, or the query with the
	// subject of prev when it is a follow-up (then followUp is true);
	// asked is what it asks for.
	text     string
	asked    question
	followUp bool
	// lang is the language searched; fallback is "en" when the requested
	// locale has no articles.
	lang     string
	fallback string
}

// begin starts an answer to req from ix: the work that follows is bounded by
// the engine's timeout. The locale is settled here, so a stream can announce
// it before any ranking is done.
func (e *Engine) begin(ctx context.Context, ix *Index, req Request, start time.Time) *prepared {
	actx, cancel := context.WithDeadline(ctx, start.Add(e.cfg.Timeout))
	p := &prepared{ctx: actx, cancel: cancel, ix: ix, req: req, lang: primaryLanguage(req.Locale)}
	if !ix.hasLanguage(p.lang) && p.lang != "en" {
		p.fallback, p.lang = "en", "en"
	}
	p.text, p.asked, p.followUp = ix.contextualize(req.Query, req.Prev)
	return p
}

// rank ranks the articles and chooses the summary. The caller's own
// cancellation is returned as is; the engine's timeout as a 503.
func (e *Engine) rank(ctx context.Context, p *prepared) error {
	p.q = p.ix.parse(p.text)
	p.ix.expand(p.q)
	accept := func(d uint32) bool { return p.ix.meta(d).lang == p.lang }
	hits, err := p.ix.search(p.ctx, p.q, accept, p.req.MaxResults)
	if err != nil {
		return e.late(ctx, err)
	}
	if hits, err = p.ix.load(p.ctx, hits); err != nil {
		return e.late(ctx, err)
	}
	for i, h := range hits {
		if h.norm < minResultScore && 2*h.norm < hits[0].norm {
			hits = hits[:i]
			break
		}
	}
	p.hits = hits
	p.summary = p.ix.summarize(p.q, p.asked, hits)
	return nil
}

// result renders the i-th article.
func (p *prepared) result(i int) Result {
	h := p.hits[i]
	d := h.text
	return Result{
		Type:          "NewsArticle",
		URL:           d.url,
		Name:          d.title,
		Site:          siteName,
		Score:         h.norm,
		Description:   p.ix.snippet(d, p.q),
		DatePublished: d.published,
		Slug:          d.slug,
	}
}

// itemCount is the number of items the answer has.
func (p *prepared) itemCount() int {
	n := len(p.hits)
	if p.summary != nil {
		n++
	}
	return n
}

// meta is the _meta block, with the time spent since start.
func (p *prepared) meta(start time.Time) Meta {
	m := Meta{
		ResponseType:   "answer",
		Version:        protocolVersion,
		RequestID:      p.req.RequestID,
		Locale:         p.req.Locale,
		LocaleFallback: p.fallback,
		TookMS:         math.Round(float64(time.Since(start).Microseconds())/10) / 100,
		SummaryMethod:  "extractive",
	}
	m.Mode = p.req.Mode
	if m.Mode == ModeGenerate {
		m.Mode, m.Note = ModeSummarize, generateNote
	}
	if p.followUp {
		m.DecontextualizedQuery = p.text
	}
	return m
}

// Tool adapts the engine to callers that pass a question and a locale and
// take any JSON-encodable answer, such as the MCP server's ask tool
// (origin/mcp's Asker): mcp.Server{Ask: engine.Tool()}.
func (e *Engine) Tool() Tool { return Tool{e} }

// Tool is an Engine seen as a question-and-locale tool.
type Tool struct{ e *Engine }

// Ask answers query in locale ("" for en) with the default number of
// results. The answer marshals to the JSON answer of POST /ask.
func (t Tool) Ask(ctx context.Context, query, locale string) (any, error) {
	ans, err := t.e.Ask(ctx, Request{Query: query, Locale: locale})
	if err != nil {
		return nil, err
	}
	return ans, nil
}
