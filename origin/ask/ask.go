package ask

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// Answering: a request is normalised, the articles ranked, the summary
// chosen, and the results rendered, all within the engine's timeout.

// minResultScore is the normalised score below which an article is not
// returned, unless it scores at least half as well as the best one: it shares
// only a word or two of the question's commonest vocabulary, which is noise
// beside better answers. (A vague question scores low throughout and keeps
// its results.)
const minResultScore = 8

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
	p.asked.text = p.text
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
