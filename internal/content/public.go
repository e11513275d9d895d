package content

import (
	"strings"
	"time"
)

// PublicArticle is the Article resource of the API (spec §2), also the data of
// article events (D21). Absolute URLs are built from siteRoot ({site_root}).
type PublicArticle struct {
	Slug        string       `json:"slug"`
	Title       string       `json:"title"`
	Kicker      *string      `json:"kicker"`
	Dek         *string      `json:"dek"`
	Section     string       `json:"section"`
	Audience    []string     `json:"audience"`
	Countries   []string     `json:"countries"`
	Tags        []string     `json:"tags"`
	Locale      string       `json:"locale"`
	PublishedAt time.Time    `json:"published_at"`
	UpdatedAt   *time.Time   `json:"updated_at"`
	Sources     []PublicLink `json:"sources"`
	URL         string       `json:"url"`
	MarkdownURL string       `json:"markdown_url"`
	OGImage     string       `json:"og_image,omitempty"`
	Corrections []Correction `json:"corrections,omitempty"`
}

// PublicLink is one item of PublicArticle.Sources: {name, url}.
type PublicLink struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Public returns the API form of a.
func (a *Article) Public(siteRoot string) *PublicArticle {
	p := &PublicArticle{
		Slug:        a.Slug,
		Title:       a.Title,
		Kicker:      nullable(a.Kicker),
		Dek:         nullable(a.Dek),
		Section:     a.Section,
		Audience:    nonNil(a.Audience),
		Countries:   nonNil(a.Countries),
		Tags:        nonNil(a.Tags),
		Locale:      a.Locale,
		PublishedAt: a.PublishedAt,
		UpdatedAt:   a.UpdatedAt,
		Sources:     make([]PublicLink, len(a.Sources)),
		URL:         siteRoot + a.Path() + "/",
		MarkdownURL: siteRoot + a.Path() + ".md",
		Corrections: a.Corrections,
	}
	for i, s := range a.Sources {
		p.Sources[i] = PublicLink{Name: s.Name, URL: s.URL}
	}
	if a.Image != "" {
		p.OGImage = a.Image
		if strings.HasPrefix(a.Image, "/") {
			p.OGImage = siteRoot + a.Image
		}
	}
	return p
}

// PublicCountry is the Country resource (spec §2); url is the country page (D7).
type PublicCountry struct {
	Code          string  `json:"code"`
	Name          string  `json:"name"`
	MandateStatus string  `json:"mandate_status"`
	Authority     *string `json:"authority"`
	URL           string  `json:"url"`
}

// Public returns the API form of c.
func (c *Country) Public(siteRoot string) *PublicCountry {
	return &PublicCountry{
		Code:          c.Code,
		Name:          c.Name,
		MandateStatus: c.MandateStatus,
		Authority:     nullable(c.Authority),
		URL:           siteRoot + "/countries/" + c.Code + "/",
	}
}

// PublicSpec is the Spec resource (spec §2); url is the official page (D7).
type PublicSpec struct {
	Slug        string     `json:"slug"`
	Name        string     `json:"name"`
	Version     *string    `json:"version"`
	LastChanged *time.Time `json:"last_changed"`
	URL         string     `json:"url,omitempty"`
}

// Public returns the API form of s.
func (s *Spec) Public() *PublicSpec {
	return &PublicSpec{Slug: s.Slug, Name: s.Name, Version: nullable(s.Version), LastChanged: s.LastChanged, URL: s.URL}
}

// PublicSource is the Source resource (spec §2).
type PublicSource struct {
	Slug      string `json:"slug"`
	Name      string `json:"name"`
	Homepage  string `json:"homepage,omitempty"`
	TrustTier string `json:"trust_tier,omitempty"`
}

// Public returns the API form of s.
func (s *Source) Public() *PublicSource {
	return &PublicSource{Slug: s.Slug, Name: s.Name, Homepage: s.Homepage, TrustTier: s.TrustTier}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
