// Package api is the origin's JSON read API under /api/v1 (the contract,
// endpoints 1–10): articles, feeds, countries, specs, sources and the webhook
// catalog.
package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// API answers the read endpoints from the store.
type API struct {
	Store *store.Store
	// SiteRoot is {site_root}; BaseURL is derived from it.
	SiteRoot string
}

// BaseURL is {base_url}.
func (a *API) BaseURL() string { return a.SiteRoot + "/api/v1" }

// Index answers GET / (ServiceIndex; resources per docs/decisions.md (service index)).
func (a *API) Index(r *http.Request) (*respond.Response, error) {
	b := a.BaseURL()
	type resource struct {
		Name        string `json:"name"`
		Href        string `json:"href"`
		Description string `json:"description"`
	}
	return respond.JSON(struct {
		Name        string     `json:"name"`
		Version     string     `json:"version"`
		Description string     `json:"description"`
		BaseURL     string     `json:"base_url"`
		Resources   []resource `json:"resources"`
	}{
		Name:        "Invoicewire",
		Version:     "1.0.0",
		Description: "Published news about e-invoicing: the Peppol network, national mandates, specifications and vendors. Anonymous, free and read-only; no API key needed.",
		BaseURL:     b,
		Resources: []resource{
			{"articles", b + "/articles", "Published articles, newest first; filter by section, audience and country."},
			{"feeds", b + "/feeds", "Catalog of RSS 2.0 and JSON Feed 1.1 feeds."},
			{"countries", b + "/countries", "Tracked countries and their e-invoicing mandate status."},
			{"specs", b + "/specs", "Tracked specifications of the e-invoicing network."},
			{"sources", b + "/sources", "Registry of the publishers the articles cite."},
			{"webhooks", b + "/webhooks", "Webhook event kinds and subscription (bearer token required to subscribe)."},
			{"agent-auth", b + "/agent-auth/register", "Agent registration, token claim and revocation."},
			{"ask", a.SiteRoot + "/ask", "Natural-language questions over the archive, as JSON or a server-sent event stream."},
			{"openapi", a.SiteRoot + "/openapi.json", "OpenAPI 3.1 description of this API."},
		},
	}, store.TagIndex)
}

// Articles answers GET /articles (ArticleList, docs/decisions.md (pagination)).
func (a *API) Articles(r *http.Request) (*respond.Response, error) {
	vals, err := respond.Query(r)
	if err != nil {
		return nil, err
	}
	q, err := ParseListQuery(vals)
	if err != nil {
		return nil, err
	}
	page, err := a.Store.ArticleHeads(r.Context(), q.Filter, q.Offset, q.Limit, q.Cursor)
	if err != nil {
		return nil, err
	}
	items := make([]*content.PublicArticle, len(page.Articles))
	for i, rec := range page.Articles {
		items[i] = rec.Public(a.SiteRoot)
	}
	var next *string
	if end := page.Start + len(page.Articles); page.More && len(page.Articles) > 0 {
		last := page.Articles[len(page.Articles)-1]
		u := a.nextURL(q, end, store.Cursor{PublishedAt: last.PublishedAt, Slug: last.Slug})
		next = &u
	}
	return respond.JSON(struct {
		Count int                      `json:"count"`
		Next  *string                  `json:"next"`
		Items []*content.PublicArticle `json:"items"`
	}{page.Total, next, items}, listTags(q.Filter)...)
}

func (a *API) nextURL(q ListQuery, offset int, c store.Cursor) string {
	v := url.Values{}
	if q.Filter.Section != "" {
		v.Set("section", q.Filter.Section)
	}
	if q.Filter.Audience != "" {
		v.Set("audience", q.Filter.Audience)
	}
	if q.Filter.Country != "" {
		v.Set("country", q.Filter.Country)
	}
	v.Set("limit", strconv.Itoa(q.Limit))
	v.Set("offset", strconv.Itoa(min(offset, MaxOffset)))
	v.Set("cursor", c.Encode())
	return a.BaseURL() + "/articles?" + v.Encode()
}

// listTags are the surrogate keys of a filtered listing: any change to an
// article in one of the filtered sets can change the page.
func listTags(f store.ArticleFilter) []string {
	var tags []string
	if f.Section != "" {
		tags = append(tags, store.TagSection(f.Section))
	}
	if f.Audience != "" {
		tags = append(tags, store.TagAudience(f.Audience))
	}
	if f.Country != "" {
		tags = append(tags, store.TagCountry(f.Country))
	}
	if tags == nil {
		tags = []string{store.TagList}
	}
	return tags
}

// Article answers GET /articles/{slug}: 404 for an unknown slug, 410 for a
// retracted article (docs/decisions.md, retraction and correction).
func (a *API) Article(r *http.Request) (*respond.Response, error) {
	slug := r.PathValue("slug")
	rec, err := a.article(r, slug)
	if err != nil {
		return nil, err
	}
	resp, err := respond.JSON(rec.Public(a.SiteRoot), store.TagArticle(slug))
	if err != nil {
		return nil, err
	}
	resp.LastModified = rec.LastModified()
	return resp, nil
}

// article loads a published article or returns the 404/410 error for slug.
func (a *API) article(r *http.Request, slug string) (*store.ArticleRecord, error) {
	notFound := func() error {
		e := apierror.NotFound("No article with slug "+strconv.Quote(truncate(slug))+".", "List articles at "+a.BaseURL()+"/articles; slugs are lowercase words joined by hyphens.")
		e.SurrogateKeys = []string{store.TagArticle(slug)}
		return e
	}
	if !content.ValidSlug(slug) {
		return nil, notFound()
	}
	rec, err := a.Store.Article(r.Context(), slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound()
	}
	if err != nil {
		return nil, err
	}
	if rec.Retracted() {
		return nil, Gone(rec)
	}
	return rec, nil
}

// Gone is the 410 answer for a retracted article, naming date and reason.
func Gone(rec *store.ArticleRecord) *apierror.Error {
	e := apierror.New(http.StatusGone,
		"The article "+strconv.Quote(rec.Slug)+" was retracted on "+rec.RetractedAt.Format(time.DateOnly)+".",
		"Reason for the retraction: "+rec.RetractionReason)
	e.SurrogateKeys = []string{store.TagArticle(rec.Slug)}
	return e
}

// Countries answers GET /countries.
func (a *API) Countries(r *http.Request) (*respond.Response, error) {
	list, err := a.Store.Countries(r.Context())
	if err != nil {
		return nil, err
	}
	items := make([]*content.PublicCountry, len(list))
	for i, c := range list {
		items[i] = c.Public(a.SiteRoot)
	}
	return respond.JSON(listOf(items), store.TagCountries, store.TagMilestones)
}

// Country answers GET /countries/{code}. Codes are case-insensitive; a code
// that is not two letters is a 400, an unknown one a 404 (docs/decisions.md, identifiers and links).
func (a *API) Country(r *http.Request) (*respond.Response, error) {
	raw := r.PathValue("code")
	code, ok := CountryCode(raw)
	if !ok {
		return nil, apierror.BadRequest("A country code is two letters (ISO 3166-1 alpha-2), got "+strconv.Quote(truncate(raw))+".", "List the tracked countries at "+a.BaseURL()+"/countries.")
	}
	c, err := a.Store.Country(r.Context(), code)
	if errors.Is(err, store.ErrNotFound) {
		e := apierror.NotFound("Country "+strconv.Quote(code)+" is not tracked.", "List the tracked countries at "+a.BaseURL()+"/countries.")
		e.SurrogateKeys = []string{store.TagCountries}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return respond.JSON(c.Public(a.SiteRoot), store.TagCountry(code), store.TagCountries, store.TagMilestones)
}

// Specs answers GET /specs.
func (a *API) Specs(r *http.Request) (*respond.Response, error) {
	list, err := a.Store.Specs(r.Context())
	if err != nil {
		return nil, err
	}
	items := make([]*content.PublicSpec, len(list))
	for i, s := range list {
		items[i] = s.Public()
	}
	return respond.JSON(listOf(items), store.TagSpecs)
}

// Spec answers GET /specs/{slug}.
func (a *API) Spec(r *http.Request) (*respond.Response, error) {
	slug := r.PathValue("slug")
	notFound := apierror.NotFound("No specification with slug "+strconv.Quote(truncate(slug))+".", "List the tracked specifications at "+a.BaseURL()+"/specs.")
	notFound.SurrogateKeys = []string{store.TagSpecs}
	if !content.ValidSlug(slug) {
		return nil, notFound
	}
	s, err := a.Store.Spec(r.Context(), slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	return respond.JSON(s.Public(), store.TagSpec(slug), store.TagSpecs)
}

// Sources answers GET /sources.
func (a *API) Sources(r *http.Request) (*respond.Response, error) {
	list, err := a.Store.Sources(r.Context())
	if err != nil {
		return nil, err
	}
	items := make([]*content.PublicSource, len(list))
	for i, s := range list {
		items[i] = s.Public()
	}
	return respond.JSON(listOf(items), store.TagSources)
}

func listOf[T any](items []T) any {
	return struct {
		Count int `json:"count"`
		Items []T `json:"items"`
	}{len(items), items}
}

// Webhooks answers GET /webhooks (WebhookCatalog).
func (a *API) Webhooks(r *http.Request) (*respond.Response, error) {
	return respond.JSON(struct {
		Events          []string `json:"events"`
		RegistrationURL string   `json:"registration_url"`
		Signing         string   `json:"signing"`
	}{
		Events:          events.Kinds,
		RegistrationURL: a.BaseURL() + "/webhooks",
		Signing: "Every delivery is signed with HMAC-SHA256 over the raw request body, keyed by the subscription's secret: " +
			"header X-Invoicewire-Signature: sha256=<lowercase hex>. Deliveries also carry Standard Webhooks headers " +
			"(webhook-id, webhook-timestamp, webhook-signature) and an RFC 9421 HTTP Message Signature with the key published at " +
			a.SiteRoot + "/.well-known/http-message-signatures-directory.",
	}, store.TagIndex)
}
