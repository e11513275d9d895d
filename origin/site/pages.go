package site

import (
	"errors"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/api"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// PageSize is the number of articles on one listing page.
const PageSize = 20

// maxPage bounds page numbers as the API bounds offset (docs/decisions.md (pagination): at most 10000).
const maxPage = api.MaxOffset/PageSize + 1

func notFoundPage(siteRoot string) *apierror.Error {
	return apierror.NotFound("No page at this address.", "Start at "+siteRoot+"/ or read the API at "+siteRoot+"/api/v1/.")
}

// pageNumber reads ?page= (1 when absent): a positive integer of at most
// maxPage, given once, or a 400 that says which (in the API's words,
// docs/decisions.md, invalid query parameters).
func pageNumber(r *http.Request) (int, error) {
	query, err := respond.Query(r)
	if err != nil {
		return 0, err
	}
	v, ok, err := respond.Single(query, "page")
	if err != nil || !ok {
		return 1, err
	}
	hint := "page must be a whole number from 1 to " + strconv.Itoa(maxPage) + "; follow the page's own next and previous links."
	switch {
	case v == "" || strings.TrimLeft(v, "0123456789") != "":
		return 0, apierror.BadRequest("page is not a whole number in plain digits: "+strconv.Quote(truncate(v))+".", hint)
	case len(v) > 1 && v[0] == '0':
		// One address per page: ?page=01 is not ?page=1's other name.
		return 0, apierror.BadRequest("page "+strconv.Quote(truncate(v))+" starts with a zero.", hint)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPage {
		return 0, apierror.BadRequest("page "+truncate(v)+" is out of range.", hint)
	}
	return n, nil
}

// teaser is one article in a listing.
type teaser struct {
	URL, Title, Kicker, Dek, Section string
	Published                        string
	PublishedISO                     string
	Countries                        []string
}

func (s *Site) teasers(recs []*store.ArticleRecord) []teaser {
	out := make([]teaser, len(recs))
	for i, rec := range recs {
		out[i] = teaser{
			URL: rec.Path() + "/", Title: rec.Title, Kicker: rec.Kicker, Dek: rec.Dek, Section: rec.Section,
			Published: longDate(rec.PublishedAt), PublishedISO: rec.PublishedAt.UTC().Format(isoLayout),
			Countries: rec.Countries,
		}
	}
	return out
}

// listing is the data of home, section, audience and country pages.
type listing struct {
	Head
	Heading  string
	Intro    string
	Articles []teaser
	Page     int
	Pages    int
	Total    int
	Country  *content.Country
	Feeds    []Link
	Issues   []issueLink
}

type issueLink struct {
	URL, Title, Date string
}

// list loads one page of a filtered listing and fills the pagination of h
// (rel=prev/next and the canonical address of this page). A page past the
// end is a 404 tagged like the listing, so it appears once enough articles
// exist.
func (s *Site) list(r *http.Request, f store.ArticleFilter, path string, h *Head, keys []string) (*store.Page, int, error) {
	n, err := pageNumber(r)
	if err != nil {
		return nil, 0, err
	}
	p, err := s.Store.Articles(r.Context(), f, (n-1)*PageSize, PageSize, nil)
	if err != nil {
		return nil, 0, err
	}
	if n > 1 && len(p.Articles) == 0 {
		e := apierror.NotFound("There is no page "+strconv.Itoa(n)+" of this listing.", "The first page is "+s.SiteRoot+path+".")
		e.SurrogateKeys = keys
		return nil, 0, e
	}
	pageURL := func(k int) string {
		if k == 1 {
			return path
		}
		return path + "?page=" + strconv.Itoa(k)
	}
	if n > 1 {
		h.Canonical = s.SiteRoot + pageURL(n)
		h.Prev = pageURL(n - 1)
		h.Title += " (page " + strconv.Itoa(n) + ")"
	}
	if n*PageSize < p.Total {
		h.Next = pageURL(n + 1)
	}
	return p, n, nil
}

func pages(total int) int { return max(1, (total+PageSize-1)/PageSize) }

// Home answers GET /: the latest articles and newsletter issues.
func (s *Site) Home(r *http.Request) (*respond.Response, error) {
	h := s.NewHead("Invoicewire: e-invoicing news", "News about e-invoicing: the Peppol network, national mandates, specifications and vendors.", "/")
	keys := []string{store.TagList, store.TagNewsletter, store.TagSite}
	p, n, err := s.list(r, store.ArticleFilter{}, "/", &h, keys)
	if err != nil {
		return nil, err
	}
	ld, err := jsonLD(map[string]any{
		"@context": "https://schema.org", "@type": "WebSite", "name": "Invoicewire", "url": s.SiteRoot + "/",
		"description": h.Description,
	})
	if err != nil {
		return nil, err
	}
	h.JSONLD = ld
	data := listing{Head: h, Heading: "Latest news", Articles: s.teasers(p.Articles), Page: n, Pages: pages(p.Total), Total: p.Total}
	if n == 1 {
		issues, err := s.Store.Newsletters(r.Context(), 5)
		if err != nil {
			return nil, err
		}
		for _, is := range issues {
			data.Issues = append(data.Issues, issueLink{URL: "/newsletter/" + is.Week + "/", Title: is.Title, Date: longDate(is.SentAt)})
		}
	}
	data.Feeds = []Link{
		{Type: "RSS", Href: "/feeds/all.xml", Title: "All articles"},
		{Type: "JSON Feed", Href: "/feeds/all.json", Title: "All articles"},
	}
	return render("list", data, keys...)
}

// SectionPage answers GET /section/{section}/.
func (s *Site) SectionPage(r *http.Request) (*respond.Response, error) {
	sec := r.PathValue("section")
	if !slices.Contains(content.Sections, sec) {
		return nil, apierror.NotFound("No section "+strconv.Quote(truncate(sec))+".", "Sections are "+strings.Join(content.Sections, ", ")+".")
	}
	return s.filtered(r, store.ArticleFilter{Section: sec}, "/section/"+sec+"/", label(sec), "Articles in the "+label(sec)+" section.",
		"section/"+sec, store.TagSection(sec))
}

// AudiencePage answers GET /audience/{audience}/.
func (s *Site) AudiencePage(r *http.Request) (*respond.Response, error) {
	au := r.PathValue("audience")
	if !slices.Contains(content.Audiences, au) {
		return nil, apierror.NotFound("No audience "+strconv.Quote(truncate(au))+".", "Audiences are "+strings.Join(content.Audiences, ", ")+".")
	}
	return s.filtered(r, store.ArticleFilter{Audience: au}, "/audience/"+au+"/", content.AudienceHeading(au), "Articles written for "+strings.ToLower(content.AudienceNames[au])+".",
		"audience/"+au, store.TagAudience(au))
}

func (s *Site) filtered(r *http.Request, f store.ArticleFilter, path, heading, intro, feed, tag string) (*respond.Response, error) {
	h := s.NewHead(heading+" · Invoicewire", intro, path)
	keys := []string{tag, store.TagSite}
	p, n, err := s.list(r, f, path, &h, keys)
	if err != nil {
		return nil, err
	}
	h.Alternates = append(h.Alternates,
		Link{Rel: "alternate", Type: "application/rss+xml", Href: s.SiteRoot + "/feeds/" + feed + ".xml", Title: heading + " (RSS)"},
		Link{Rel: "alternate", Type: "application/feed+json", Href: s.SiteRoot + "/feeds/" + feed + ".json", Title: heading + " (JSON Feed)"})
	data := listing{Head: h, Heading: heading, Intro: intro, Articles: s.teasers(p.Articles), Page: n, Pages: pages(p.Total), Total: p.Total,
		Feeds: []Link{{Type: "RSS", Href: "/feeds/" + feed + ".xml", Title: heading}, {Type: "JSON Feed", Href: "/feeds/" + feed + ".json", Title: heading}}}
	return render("list", data, keys...)
}

// CountryPage answers GET /countries/{code}/: the country's mandate status,
// authority and summary, and its articles. A code in capitals is a 301 to
// the page's lowercase address; a code that is not two letters is a 400, an
// unknown one a 404 (docs/decisions.md, identifiers and links).
func (s *Site) CountryPage(r *http.Request) (*respond.Response, error) {
	raw := r.PathValue("code")
	code, ok := api.CountryCode(raw)
	if !ok {
		return nil, apierror.BadRequest("A country code is two letters (ISO 3166-1 alpha-2), got "+strconv.Quote(truncate(raw))+".", "Country pages are listed at "+s.SiteRoot+"/api/v1/countries (the url field).")
	}
	c, err := s.Store.Country(r.Context(), code)
	if errors.Is(err, store.ErrNotFound) {
		e := apierror.NotFound("Country "+strconv.Quote(code)+" is not tracked.", "Country pages are listed at "+s.SiteRoot+"/api/v1/countries (the url field).")
		e.SurrogateKeys = []string{store.TagCountries}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	path := "/countries/" + code + "/"
	desc := c.Name + ": e-invoicing mandate status (" + label(c.MandateStatus) + ") and news."
	h := s.NewHead(c.Name+" · Invoicewire", desc, path)
	keys := []string{store.TagCountry(code), store.TagCountries, store.TagSite}
	p, n, err := s.list(r, store.ArticleFilter{Country: code}, path, &h, keys)
	if err != nil {
		return nil, err
	}
	if raw != code {
		// A page has one address, with the code in lowercase, as the
		// country's feed has (docs/decisions.md, "Identifiers and links"):
		// the code in capitals is a 301 there, query kept. Only once that
		// page is known to answer: an untracked code, or a page past the
		// end, is the 404 itself, not a redirect to one.
		return respond.Redirect(r, s.SiteRoot, path, keys...), nil
	}
	data := listing{Head: h, Heading: c.Name, Intro: c.Summary, Articles: s.teasers(p.Articles), Page: n, Pages: pages(p.Total), Total: p.Total, Country: c}
	if p.Total > 0 {
		h.Alternates = append(h.Alternates,
			Link{Rel: "alternate", Type: "application/rss+xml", Href: s.SiteRoot + "/feeds/country/" + code + ".xml", Title: c.Name + " (RSS)"},
			Link{Rel: "alternate", Type: "application/feed+json", Href: s.SiteRoot + "/feeds/country/" + code + ".json", Title: c.Name + " (JSON Feed)"})
		data.Head = h
		data.Feeds = []Link{{Type: "RSS", Href: "/feeds/country/" + code + ".xml", Title: c.Name}, {Type: "JSON Feed", Href: "/feeds/country/" + code + ".json", Title: c.Name}}
	}
	return render("list", data, keys...)
}

// articleView is the data of an article page.
type articleView struct {
	Head
	A           *store.ArticleRecord
	Body        template.HTML
	Countries   []*content.Country
	Specs       []*content.Spec
	MarkdownURL string
}

// ArticlePage answers GET /<yyyy>/<mm>/<slug>/: 404 for an unknown article,
// 410 for a retracted one (docs/decisions.md, retraction and correction), a
// 301 to the page's own address for a published article under another year
// or month.
func (s *Site) ArticlePage(r *http.Request) (*respond.Response, error) {
	rec, err := s.article(r, r.PathValue("year"), r.PathValue("month"), r.PathValue("slug"))
	if resp, ok := s.toMoved(r, err, "/"); ok {
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	body, err := RenderMarkdown(rec.Body)
	if err != nil {
		return nil, err
	}
	path := rec.Path() + "/"
	h := s.NewHead(rec.Title+" · Invoicewire", rec.Dek, path)
	v := articleView{A: rec, Body: body, MarkdownURL: s.SiteRoot + rec.Path() + ".md"}
	h.Alternates = append([]Link{{Rel: "alternate", Type: "text/markdown", Href: v.MarkdownURL, Title: "This article as markdown"}}, h.Alternates...)

	// Only the article's own countries and specifications are read, not
	// the registries whole (docs/scale.md).
	if v.Countries, err = s.Store.CountriesByCode(r.Context(), rec.Countries); err != nil {
		return nil, err
	}
	if v.Specs, err = s.Store.SpecsBySlug(r.Context(), rec.Specs); err != nil {
		return nil, err
	}

	pub := rec.Public(s.SiteRoot)
	// The properties every page has come from h (Head.OG): the title, the
	// canonical address (pub.URL) and the dek.
	h.OGType = "article"
	h.OpenGraph = []meta{
		{Property: "article:published_time", Content: rec.PublishedAt.UTC().Format(isoLayout)},
		{Property: "article:section", Content: label(rec.Section)},
	}
	if rec.UpdatedAt != nil {
		h.OpenGraph = append(h.OpenGraph, meta{Property: "article:modified_time", Content: rec.UpdatedAt.UTC().Format(isoLayout)})
	}
	for _, t := range rec.Tags {
		h.OpenGraph = append(h.OpenGraph, meta{Property: "article:tag", Content: t})
	}
	card := "summary"
	if pub.OGImage != "" {
		card = "summary_large_image"
		h.OpenGraph = append(h.OpenGraph, meta{Property: "og:image", Content: pub.OGImage})
		h.Twitter = append(h.Twitter, meta{Name: "twitter:image", Content: pub.OGImage})
	}
	h.Twitter = append([]meta{{Name: "twitter:card", Content: card}, {Name: "twitter:title", Content: rec.Title}}, h.Twitter...)
	if rec.Dek != "" {
		h.Twitter = append(h.Twitter, meta{Name: "twitter:description", Content: rec.Dek})
	}

	ld := map[string]any{
		"@context":            "https://schema.org",
		"@type":               "NewsArticle",
		"headline":            rec.Title,
		"url":                 pub.URL,
		"mainEntityOfPage":    map[string]any{"@type": "WebPage", "@id": pub.URL},
		"datePublished":       rec.PublishedAt.UTC().Format(isoLayout),
		"dateModified":        rec.LastModified().UTC().Format(isoLayout),
		"articleSection":      label(rec.Section),
		"inLanguage":          "en",
		"isAccessibleForFree": true,
		"author":              map[string]any{"@type": "Organization", "name": "Invoicewire", "url": s.SiteRoot + "/"},
		"publisher":           map[string]any{"@type": "Organization", "name": "Invoicewire", "url": s.SiteRoot + "/"},
	}
	if rec.Dek != "" {
		ld["description"] = rec.Dek
	}
	if len(rec.Tags) > 0 {
		ld["keywords"] = strings.Join(rec.Tags, ", ")
	}
	if pub.OGImage != "" {
		ld["image"] = []string{pub.OGImage}
	}
	var cites []map[string]any
	for _, src := range rec.Sources {
		cites = append(cites, map[string]any{"@type": "CreativeWork", "name": src.Name, "url": src.URL})
	}
	ld["citation"] = cites
	if h.JSONLD, err = jsonLD(ld); err != nil {
		return nil, err
	}
	v.Head = h
	resp, err := render("article", v, store.TagArticle(rec.Slug), store.TagCountries, store.TagSpecs)
	if err != nil {
		return nil, err
	}
	// The edge answers Accept: text/markdown here with the twin (docs/decisions.md, markdown twin).
	resp.Vary = "Accept"
	resp.LastModified = rec.LastModified()
	return resp, nil
}

// movedArticle is article's answer for a published article asked for
// under a year or month that is not its published_at's: its file was moved
// to another month, and the address it was published at must keep working.
type movedArticle struct{ rec *store.ArticleRecord }

func (m *movedArticle) Error() string { return "article " + m.rec.Slug + " is at " + m.rec.Path() }

// toMoved answers err when it is a movedArticle: a 301 to the article's own
// address with suffix ("/" for the page, ".md" for the twin), one hop,
// query kept, tagged with the article so its next change purges it.
func (s *Site) toMoved(r *http.Request, err error, suffix string) (*respond.Response, bool) {
	var m *movedArticle
	if !errors.As(err, &m) {
		return nil, false
	}
	return respond.Redirect(r, s.SiteRoot, m.rec.Path()+suffix, store.TagArticle(m.rec.Slug)), true
}

// article loads the published article at /year/month/slug, or returns the
// 404 or 410 for that address. An article's slug is its identity and its
// address follows its published_at, so under another year and month a
// published article is a *movedArticle (docs/decisions.md, "Site pages at
// the other form of their address"): links handed out before its date was
// moved keep working. A retracted one is 410 at its own address only.
func (s *Site) article(r *http.Request, year, month, slug string) (*store.ArticleRecord, error) {
	notFound := func() error { return s.noArticle(slug) }
	if !validYearMonth(year, month) {
		// Not an article address at all (/api/v1/nope has three segments
		// too): the answer of any path nothing is published at.
		return nil, apierror.NoSuchAddress(s.SiteRoot)
	}
	if !content.ValidSlug(slug) {
		return nil, notFound()
	}
	rec, err := s.Store.Article(r.Context(), slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound()
	}
	if err != nil {
		return nil, err
	}
	if rec.PublishedAt.UTC().Format("2006") != year || rec.PublishedAt.UTC().Format("01") != month {
		if rec.Retracted() {
			return nil, notFound()
		}
		return nil, &movedArticle{rec}
	}
	if rec.Retracted() {
		return nil, api.Gone(rec)
	}
	return rec, nil
}

// newsletterView is the data of a newsletter issue page.
type newsletterView struct {
	Head
	N        *store.Newsletter
	Intro    template.HTML
	Articles []teaser
}

// NewsletterPage answers GET /newsletter/<yyyy>-w<ww>/ (docs/decisions.md, newsletter): the issue's
// intro and its articles, without any retracted since.
func (s *Site) NewsletterPage(r *http.Request) (*respond.Response, error) {
	week := r.PathValue("issue")
	notFound := apierror.NotFound("No newsletter issue "+strconv.Quote(truncate(week))+".", "Issues are named by ISO week, e.g. /newsletter/2026-w47/; the newsletter feed "+s.SiteRoot+"/feeds/newsletter.json lists them.")
	if _, err := content.WeekStart(week); err != nil {
		return nil, notFound
	}
	notFound.SurrogateKeys = []string{store.TagNewsletterWeek(week)}
	n, err := s.Store.Newsletter(r.Context(), week)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	keys := []string{store.TagNewsletterWeek(week), store.TagNewsletter}
	recs, err := s.publishedArticles(r, n.Articles)
	if err != nil {
		return nil, err
	}
	for _, slug := range n.Articles {
		keys = append(keys, store.TagArticle(slug))
	}
	intro, err := RenderMarkdown(n.Intro)
	if err != nil {
		return nil, err
	}
	path := "/newsletter/" + week + "/"
	h := s.NewHead(n.Title+" · Invoicewire", "The Invoicewire weekly newsletter, "+week+".", path)
	h.Alternates = append(h.Alternates,
		Link{Rel: "alternate", Type: "application/rss+xml", Href: s.SiteRoot + "/feeds/newsletter.xml", Title: "Invoicewire Weekly (RSS)"},
		Link{Rel: "alternate", Type: "application/feed+json", Href: s.SiteRoot + "/feeds/newsletter.json", Title: "Invoicewire Weekly (JSON Feed)"})
	return render("newsletter", newsletterView{Head: h, N: n, Intro: intro, Articles: s.teasers(recs)}, keys...)
}

// publishedArticles loads the named articles that are still published, in
// the given order.
func (s *Site) publishedArticles(r *http.Request, slugs []string) ([]*store.ArticleRecord, error) {
	var out []*store.ArticleRecord
	for _, slug := range slugs {
		rec, err := s.Store.Article(r.Context(), slug)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !rec.Retracted() {
			out = append(out, rec)
		}
	}
	return out, nil
}

// isoLayout is RFC 3339 in UTC, the form of every machine-readable date.
const isoLayout = time.RFC3339

// longDate is the form of dates shown to readers.
func longDate(t time.Time) string { return t.UTC().Format("2 January 2006") }

// truncate shortens user input quoted back in an error message.
func truncate(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "�")
}
