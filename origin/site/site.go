// Package site serves the origin's surfaces at {site_root} other than the
// JSON API: the HTML pages (home, section, audience, country, newsletter and
// article pages), the markdown twins of article pages (DESIGN D11), the feeds
// (D8), the sitemaps, the developer portal and its text documents (auth.md,
// llms.txt, robots.txt), and the discovery documents of D23, among them the
// signed HTTP message signatures directory.
//
// Every handler returns a complete *respond.Response tagged with the
// surrogate keys of the content it shows (D12), so the origin's cache and the
// edge drop it when that content changes. Errors are the JSON of D6, pages
// included: an unknown or malformed page address is a 404, a retracted
// article a 410, a bad page number a 400.
package site

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Site answers the site-root routes.
type Site struct {
	Store *store.Store
	// SiteRoot is {site_root}; every absolute URL is built from it.
	SiteRoot string
	// Keys hands out the service signing key (the signatures directory).
	Keys *signing.Source
	// Now is the clock of the news sitemap's two-day window and of
	// signatures; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
	// SitemapURLs is the most articles per sitemap; 0 means SitemapURLs
	// (50,000). Tests lower it to exercise the split.
	SitemapURLs int
	// Ask answers the questions of /search; nil leaves /search a 500.
	Ask AskFunc

	portalOnce sync.Once
	portal     *portal
	portalErr  error
}

func (s *Site) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Route is one cacheable GET route of the site.
type Route struct {
	Pattern string
	Handler respond.Handler
}

// Mount is one raw route of the site, answering every method itself.
type Mount struct {
	Pattern string
	Handler http.Handler
}

// Routes lists the site's GET routes in the order they must be registered:
// literal paths before the /{year}/{month}/… wildcards, which would
// otherwise take three-segment paths such as /feeds/section/x.xml.
func (s *Site) Routes() []Route {
	return []Route{
		{"/", s.Home},
		{"/section/{section}/", s.SectionPage},
		{"/audience/{audience}/", s.AudiencePage},
		{"/countries/{code}/", s.CountryPage},
		{"/newsletter/{issue}/", s.NewsletterPage},
		{"/mandates", s.MandatesPage},
		{"/mandates.md", s.MandatesMarkdown},
		{CalendarPath, s.Calendar},
		{"/search", s.Search},
		{"/opensearch.xml", s.OpenSearch},
		{"/assets/{file}", s.Asset},

		{"/feeds/all.xml", s.Feed},
		{"/feeds/all.json", s.Feed},
		{"/feeds/newsletter.xml", s.Feed},
		{"/feeds/newsletter.json", s.Feed},
		{"/feeds/section/{file}", s.Feed},
		{"/feeds/audience/{file}", s.Feed},
		{"/feeds/country/{file}", s.Feed},

		{"/sitemap-index.xml", s.SitemapIndex},
		{"/sitemaps/{file}", s.Sitemap},
		{"/news-sitemap.xml", s.NewsSitemap},

		{"/developers", s.Developers},
		{"/auth.md", s.AuthMarkdown},
		{"/llms.txt", s.LLMsTxt},
		{"/robots.txt", s.RobotsTxt},

		{"/.well-known/oauth-protected-resource", s.ProtectedResourceMetadata},
		{"/.well-known/oauth-authorization-server", s.AuthorizationServerMetadata},
		{"/.well-known/mcp/server-card.json", s.MCPServerCard},
		{"/mcp/server-card", s.MCPServerCard},
		{"/.well-known/ai-catalog.json", s.AICatalog},
		{"/.well-known/agent-card.json", s.AgentCard},

		{"/{year}/{month}/{slug}/", s.ArticlePage},
		{"/{year}/{month}/{file}", s.ArticleMarkdown},
	}
}

// Mounts lists the site's raw routes: the signatures directory signs each
// answer afresh, so it never comes from the origin's response cache.
func (s *Site) Mounts() []Mount {
	return []Mount{
		{"/.well-known/http-message-signatures-directory", http.HandlerFunc(s.SignaturesDirectory)},
	}
}
