// Package mcp is Invoicewire's Model Context Protocol server (docs/decisions.md, agent surfaces):
// read-only tools over the same store as the JSON API, served at
// {site_root}/mcp with the official Go SDK's Streamable HTTP transport.
//
// The transport runs stateless: every POST is answered on its own, with no
// session held in one origin's memory, so any origin behind the load
// balancer can answer any request (and the 2026-07-28 revision of the
// protocol drops sessions anyway). Tool arguments are checked against each
// tool's input schema (enums, patterns, bounds, no unknown fields) before the
// tool runs; a bad argument or an unknown identifier is a tool error
// (isError: true) with a message that says what is allowed, never a
// protocol failure.
//
// The ask tool comes from the /ask engine: Server.Ask registers it (the
// origin passes its engine through AskFunc).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/api"
)

// Asker answers a natural-language question over the archive. The /ask
// endpoint's engine implements it; when Server.Ask is set the MCP server
// offers an "ask" tool that returns the engine's answer as JSON.
type Asker interface {
	Ask(ctx context.Context, query, locale string) (any, error)
}

// AskFunc adapts a function to Asker.
type AskFunc func(ctx context.Context, query, locale string) (any, error)

// Ask calls f.
func (f AskFunc) Ask(ctx context.Context, query, locale string) (any, error) {
	return f(ctx, query, locale)
}

// Server holds what the tools read.
type Server struct {
	Store *store.Store
	// SiteRoot is {site_root}, for the URLs in tool results.
	SiteRoot string
	Log      *slog.Logger
	// Ask, when set, adds the "ask" tool (the hook for the /ask engine).
	Ask Asker
	// AllowedOrigins are the origins (scheme://host[:port]) browser pages
	// may call the endpoint from; "*" allows every origin. Empty: only
	// SiteRoot's own. Requests without Origin always pass
	// (IW_MCP_ALLOWED_ORIGINS).
	AllowedOrigins []string
}

// Limits of the tools' arguments.
const (
	MaxLimit     = 50
	DefaultLimit = 10
	MaxQuery     = 200
	// scanLimit bounds how many of the newest articles a text query reads.
	scanLimit = 5000
)

// ProtocolVersions are the MCP revisions the /mcp endpoint speaks over
// Streamable HTTP, newest first: the one list the server negotiates from
// (ServerOptions.SupportedProtocolVersions) and the server card and the
// agent card announce (the tests check the SDK supports each; its own client
// negotiates the first). 2025-03-26 and 2024-11-05 are left out: 2025-03-26
// requires servers to accept JSON-RPC batches, which this endpoint refuses
// (docs/decisions.md, MCP: no batches), and 2024-11-05 has them too. An
// initialize asking for a version not listed is answered with the newest
// listed version that initialize can negotiate (MCP 2025-11-25, basic/
// lifecycle, "Version Negotiation"); a request whose MCP-Protocol-Version
// names one is refused with 400.
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18"}

// Capabilities are the server's capabilities, given to the SDK (which
// would otherwise add logging and tools.listChanged) and stated by
// initialize, server/discover and the server card alike (TestTools
// compares them). The tool list is static and the server stateless, so it
// never sends notifications/tools/list_changed: listChanged is false, and a
// subscriptions/listen request is acknowledged with no notification type and
// answered at once instead of held open. No logging either: the tools log
// nothing to the client, and 2026-07-28 has no logging/setLevel.
var Capabilities = &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}

// Tool names and describes one tool of the server.
type Tool struct{ Name, Description string }

// The tools, each named and described once: New registers them with these
// descriptions, and Tools lists them for the server card and the portal.
var (
	toolSearchArticles = Tool{"search_articles", "Search and list published articles, newest first, with the API's filters (section, audience, country) and a text query."}
	toolGetArticle     = Tool{"get_article", "Read one article as markdown, with its sources and corrections."}
	toolListCountries  = Tool{"list_countries", "List the tracked countries and their e-invoicing mandate status."}
	toolGetCountry     = Tool{"get_country", "Read one tracked country: mandate status, authority and summary."}
	toolListSpecs      = Tool{"list_specs", "List the tracked specifications of the e-invoicing network."}
	toolGetSpec        = Tool{"get_spec", "Read one tracked specification."}
	toolListSources    = Tool{"list_sources", "List the registry of publishers the articles cite."}
	toolAsk            = Tool{"ask", "Answer a question about e-invoicing with sentences quoted verbatim from the articles, with citations (the /ask engine)."}
)

// Tools lists the server's tools in the order it registers them. The ask
// tool is registered only when Server.Ask is set, as the origin always sets
// it.
var Tools = []Tool{toolSearchArticles, toolGetArticle, toolListCountries, toolGetCountry, toolListSpecs, toolGetSpec, toolListSources, toolAsk}

// MaxBody bounds MCP request bodies, like every other body (docs/decisions.md (subscriptions): 64 KiB).
const MaxBody = 64 << 10

// ArticleSummary is one article in search results.
type ArticleSummary struct {
	Slug        string    `json:"slug"`
	Title       string    `json:"title"`
	Dek         string    `json:"dek,omitempty"`
	Section     string    `json:"section"`
	Audience    []string  `json:"audience"`
	Countries   []string  `json:"countries"`
	PublishedAt time.Time `json:"published_at"`
	URL         string    `json:"url"`
	MarkdownURL string    `json:"markdown_url"`
}

// SearchInput are the arguments of search_articles.
type SearchInput struct {
	Query    string `json:"query,omitempty" jsonschema:"words that must all appear in the article (title, dek, tags or text) as whole words; case and diacritics do not count, and a hyphenated word also matches its parts written together (e-invoicing, einvoicing)"`
	Section  string `json:"section,omitempty" jsonschema:"only articles of this section"`
	Audience string `json:"audience,omitempty" jsonschema:"only articles for this audience"`
	Country  string `json:"country,omitempty" jsonschema:"only articles about this country (ISO 3166-1 alpha-2 code)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"how many articles to return"`
	Offset   int    `json:"offset,omitempty" jsonschema:"how many matching articles to skip"`
}

// SearchOutput is the result of search_articles.
type SearchOutput struct {
	// Count is the number of matching articles (all pages).
	Count int              `json:"count"`
	Items []ArticleSummary `json:"items"`
}

// SlugInput names an article or a specification.
type SlugInput struct {
	Slug string `json:"slug" jsonschema:"the slug: lowercase words joined by hyphens"`
}

// CodeInput names a country.
type CodeInput struct {
	Code string `json:"code" jsonschema:"ISO 3166-1 alpha-2 code, either case"`
}

// NoInput is the arguments of the list tools: none.
type NoInput struct{}

// CountryOutput is one country with its editor's summary.
type CountryOutput struct {
	content.PublicCountry
	Summary string `json:"summary,omitempty"`
	// Articles is how many published articles name the country.
	Articles int64 `json:"articles"`
}

// List is the result of the list tools.
type List[T any] struct {
	Count int `json:"count"`
	Items []T `json:"items"`
}

// AskInput are the arguments of the ask tool.
type AskInput struct {
	Query  string `json:"query" jsonschema:"the question, 1 to 500 characters once trimmed of blanks at either end"`
	Locale string `json:"locale,omitempty" jsonschema:"the answer's language, a BCP 47 tag such as en (default en); not blank when sent"`
}

func ptr[T any](v T) *T { return &v }

// schema infers a tool's input schema from T and lets adjust tighten it.
func schema[T any](adjust func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema: %v", err))
	}
	if adjust != nil {
		adjust(s.Properties)
	}
	return s
}

func enum(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

// sdkLog is the logger handed to the SDK: its warnings and errors, not the
// three info lines it writes for every stateless request.
func (s *Server) sdkLog() *slog.Logger { return logging.AtLeast(s.Log, slog.LevelWarn) }

// New builds the MCP server with its tools.
func (s *Server) New() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "invoicewire", Title: "Invoicewire", Version: "1.0.0", WebsiteURL: s.SiteRoot + "/developers#mcp"},
		&sdk.ServerOptions{
			Logger:                    s.sdkLog(),
			Capabilities:              Capabilities,
			SupportedProtocolVersions: ProtocolVersions,
			Instructions: "Invoicewire publishes news about e-invoicing (Peppol, national mandates, specifications, vendors). " +
				"Use search_articles to find articles, get_article to read one as markdown, and the country and spec tools for the registries. " +
				"Cite the article url and its sources.",
		})
	srv.AddReceivingMiddleware(checkArguments, boundResults)
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false), IdempotentHint: true}

	sdk.AddTool(srv, &sdk.Tool{Name: toolSearchArticles.Name, Description: toolSearchArticles.Description, Annotations: readOnly,
		InputSchema: schema[SearchInput](func(p map[string]*jsonschema.Schema) {
			p["query"].MaxLength = ptr(MaxQuery)
			p["section"].Enum = enum(content.Sections)
			p["audience"].Enum = enum(content.Audiences)
			p["country"].Pattern = "^[A-Za-z]{2}$"
			p["limit"].Minimum, p["limit"].Maximum, p["limit"].Default = ptr(1.0), ptr(float64(MaxLimit)), []byte("10")
			p["offset"].Minimum, p["offset"].Maximum = ptr(0.0), ptr(float64(api.MaxOffset))
		})}, s.searchArticles)

	sdk.AddTool(srv, &sdk.Tool{Name: toolGetArticle.Name, Description: toolGetArticle.Description, Annotations: readOnly,
		InputSchema: schema[SlugInput](func(p map[string]*jsonschema.Schema) {
			p["slug"].Pattern, p["slug"].MaxLength = content.SlugPattern, ptr(content.MaxSlugLength)
		})}, s.getArticle)

	sdk.AddTool(srv, &sdk.Tool{Name: toolListCountries.Name, Description: toolListCountries.Description, Annotations: readOnly}, s.listCountries)
	sdk.AddTool(srv, &sdk.Tool{Name: toolGetCountry.Name, Description: toolGetCountry.Description, Annotations: readOnly,
		InputSchema: schema[CodeInput](func(p map[string]*jsonschema.Schema) { p["code"].Pattern = "^[A-Za-z]{2}$" })}, s.getCountry)
	sdk.AddTool(srv, &sdk.Tool{Name: toolListSpecs.Name, Description: toolListSpecs.Description, Annotations: readOnly}, s.listSpecs)
	sdk.AddTool(srv, &sdk.Tool{Name: toolGetSpec.Name, Description: toolGetSpec.Description, Annotations: readOnly,
		InputSchema: schema[SlugInput](func(p map[string]*jsonschema.Schema) {
			p["slug"].Pattern, p["slug"].MaxLength = content.SlugPattern, ptr(content.MaxSlugLength)
		})}, s.getSpec)
	sdk.AddTool(srv, &sdk.Tool{Name: toolListSources.Name, Description: toolListSources.Description, Annotations: readOnly}, s.listSources)

	if s.Ask != nil {
		// The query's schema states no minLength or maxLength: those count
		// the string as sent, while docs/decisions.md (Ask) counts it once
		// trimmed, so a question POST /ask takes would be refused here (and
		// quoted whole in the refusal). The /ask engine's own check decides
		// for both surfaces; the description states the limit.
		sdk.AddTool(srv, &sdk.Tool{Name: toolAsk.Name, Description: toolAsk.Description, Annotations: readOnly,
			// A locale sent blank is refused, as POST /ask refuses it
			// (docs/decisions.md, Ask); one left out means en.
			InputSchema: schema[AskInput](func(p map[string]*jsonschema.Schema) { p["locale"].Pattern = `\S` })}, s.ask)
	}
	return srv
}

// toolError is a tool failure the caller can act on.
func toolError(format string, args ...any) error { return fmt.Errorf(format, args...) }

// unavailable logs a store failure and returns the tool error a client
// sees, which names no internals.
func (s *Server) unavailable(ctx context.Context, tool string, err error) error {
	if s.Log != nil {
		s.Log.ErrorContext(ctx, "mcp: tool failed", "tool", tool, "err", err)
	}
	return errors.New("the content store is unavailable; try again in a few seconds")
}

func (s *Server) summary(rec *store.ArticleRecord) ArticleSummary {
	p := rec.Public(s.SiteRoot)
	return ArticleSummary{Slug: rec.Slug, Title: rec.Title, Dek: rec.Dek, Section: rec.Section, Audience: p.Audience,
		Countries: p.Countries, PublishedAt: rec.PublishedAt, URL: p.URL, MarkdownURL: p.MarkdownURL}
}

func (s *Server) searchArticles(ctx context.Context, _ *sdk.CallToolRequest, in SearchInput) (*sdk.CallToolResult, SearchOutput, error) {
	f := store.ArticleFilter{Section: in.Section, Audience: in.Audience, Country: strings.ToLower(in.Country)}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	out := SearchOutput{Items: []ArticleSummary{}}
	words := queryWords(in.Query)
	if len(words) == 0 {
		// Only a query left out lists every article: blanks are a query
		// without words, as punctuation is.
		if in.Query != "" {
			return nil, out, toolError("the query %q has no words: search for words of letters or digits", in.Query)
		}
		p, err := s.Store.Articles(ctx, f, in.Offset, limit, nil)
		if err != nil {
			return nil, out, s.unavailable(ctx, "search_articles", err)
		}
		out.Count = p.Total
		for _, rec := range p.Articles {
			out.Items = append(out.Items, s.summary(rec))
		}
		return nil, out, nil
	}
	p, err := s.Store.Articles(ctx, f, 0, scanLimit, nil)
	if err != nil {
		return nil, out, s.unavailable(ctx, "search_articles", err)
	}
	m := newWordMatcher(words)
	for _, rec := range p.Articles {
		if !m.matchAll(rec.Title + "\n" + rec.Dek + "\n" + strings.Join(rec.Tags, "\n") + "\n" + rec.Body) {
			continue
		}
		if out.Count >= in.Offset && len(out.Items) < limit {
			out.Items = append(out.Items, s.summary(rec))
		}
		out.Count++
	}
	return nil, out, nil
}

func (s *Server) getArticle(ctx context.Context, _ *sdk.CallToolRequest, in SlugInput) (*sdk.CallToolResult, any, error) {
	rec, err := s.Store.Article(ctx, in.Slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, toolError("no article with slug %q; find slugs with search_articles", in.Slug)
	}
	if err != nil {
		return nil, nil, s.unavailable(ctx, "get_article", err)
	}
	if rec.Retracted() {
		return nil, nil, toolError("the article %q was retracted on %s: %s", rec.Slug, rec.RetractedAt.Format(time.DateOnly), rec.RetractionReason)
	}
	md, err := rec.Article.Markdown(s.SiteRoot)
	if err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(md)}}}, nil, nil
}

func (s *Server) listCountries(ctx context.Context, _ *sdk.CallToolRequest, _ NoInput) (*sdk.CallToolResult, List[*content.PublicCountry], error) {
	list, err := s.Store.Countries(ctx)
	if err != nil {
		return nil, List[*content.PublicCountry]{}, s.unavailable(ctx, "list_countries", err)
	}
	out := List[*content.PublicCountry]{Count: len(list), Items: []*content.PublicCountry{}}
	for _, c := range list {
		out.Items = append(out.Items, c.Public(s.SiteRoot))
	}
	return nil, out, nil
}

func (s *Server) getCountry(ctx context.Context, _ *sdk.CallToolRequest, in CodeInput) (*sdk.CallToolResult, CountryOutput, error) {
	code := strings.ToLower(in.Code)
	c, err := s.Store.Country(ctx, code)
	if errors.Is(err, store.ErrNotFound) {
		return nil, CountryOutput{}, toolError("country %q is not tracked; list_countries names the tracked ones", code)
	}
	if err != nil {
		return nil, CountryOutput{}, s.unavailable(ctx, "get_country", err)
	}
	counts, err := s.Store.CountryArticleCounts(ctx, []string{code})
	if err != nil {
		return nil, CountryOutput{}, s.unavailable(ctx, "get_country", err)
	}
	return nil, CountryOutput{PublicCountry: *c.Public(s.SiteRoot), Summary: c.Summary, Articles: counts[code]}, nil
}

func (s *Server) listSpecs(ctx context.Context, _ *sdk.CallToolRequest, _ NoInput) (*sdk.CallToolResult, List[*content.PublicSpec], error) {
	list, err := s.Store.Specs(ctx)
	if err != nil {
		return nil, List[*content.PublicSpec]{}, s.unavailable(ctx, "list_specs", err)
	}
	out := List[*content.PublicSpec]{Count: len(list), Items: []*content.PublicSpec{}}
	for _, sp := range list {
		out.Items = append(out.Items, sp.Public())
	}
	return nil, out, nil
}

// SpecOutput is one specification with its editor's summary.
type SpecOutput struct {
	content.PublicSpec
	Summary string `json:"summary,omitempty"`
}

func (s *Server) getSpec(ctx context.Context, _ *sdk.CallToolRequest, in SlugInput) (*sdk.CallToolResult, SpecOutput, error) {
	sp, err := s.Store.Spec(ctx, in.Slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, SpecOutput{}, toolError("no specification with slug %q; list_specs names the tracked ones", in.Slug)
	}
	if err != nil {
		return nil, SpecOutput{}, s.unavailable(ctx, "get_spec", err)
	}
	return nil, SpecOutput{PublicSpec: *sp.Public(), Summary: sp.Summary}, nil
}

func (s *Server) listSources(ctx context.Context, _ *sdk.CallToolRequest, _ NoInput) (*sdk.CallToolResult, List[*content.PublicSource], error) {
	list, err := s.Store.Sources(ctx)
	if err != nil {
		return nil, List[*content.PublicSource]{}, s.unavailable(ctx, "list_sources", err)
	}
	out := List[*content.PublicSource]{Count: len(list), Items: []*content.PublicSource{}}
	for _, src := range list {
		out.Items = append(out.Items, src.Public())
	}
	return nil, out, nil
}

func (s *Server) ask(ctx context.Context, _ *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, any, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return nil, nil, toolError("the question is empty")
	}
	locale := in.Locale
	if locale == "" {
		locale = "en"
	}
	ans, err := s.Ask.Ask(ctx, q, locale)
	if err != nil {
		// The engine's refusals (too long, a bad locale, not ready yet)
		// are the caller's to act on; say what they are.
		var ae *apierror.Error
		if errors.As(err, &ae) && ae.Status < 500 {
			return nil, nil, toolError("%s %s", ae.Message, ae.Hint)
		}
		return nil, nil, s.unavailable(ctx, "ask", err)
	}
	return nil, ans, nil
}
