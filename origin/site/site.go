// Package site serves the reader's side of {site_root}: the HTML pages
// (home, section, audience, country, newsletter and article pages), the
// markdown twins of article pages, the feeds, the sitemaps and the assets.
// It also holds the page layout (layout.go) that other packages rendering
// HTML in the site's chrome use, such as the developer portal (origin/portal).
// The discovery documents live in origin/discovery.
//
// Every handler returns a complete *respond.Response tagged with the
// surrogate keys of the content it shows, so the origin's cache and the edge
// drop it when that content changes (docs/decisions.md, "Caches and
// invalidation"). Errors are the contract's JSON errors, pages included: an
// unknown or malformed page address is a 404, a retracted article a 410, a
// bad page number a 400.
package site

import (
	"time"

	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Site answers the site-root routes.
type Site struct {
	Store *store.Store
	// SiteRoot is {site_root}; every absolute URL is built from it.
	SiteRoot string
	// Now is the clock of the news sitemap's two-day window; nil means
	// time.Now.
	Now func() time.Time
	// Ask answers the questions of /search; nil leaves /search a 500.
	Ask AskFunc
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
		{"/favicon.ico", s.Favicon},

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

		{"/{year}/{month}/{slug}/", s.ArticlePage},
		{"/{year}/{month}/{file}", s.ArticleMarkdown},
	}
}
