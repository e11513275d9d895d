package content

import (
	"strings"
	"time"
)

// PublicArticle is the Article resource of the API (the contract), also the data of
// article events (docs/decisions.md, delivery). Absolute URLs are built from siteRoot ({site_root}).
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

// PublicCountry is the Country resource (the contract); url is the country page (docs/decisions.md, identifiers and links).
type PublicCountry struct {
	Code          string  `json:"code"`
	Name          string  `json:"name"`
	MandateStatus string  `json:"mandate_status"`
	Authority     *string `json:"authority"`
	URL           string  `json:"url"`
	// Milestones are the country's dated steps, oldest first; empty when
	// none is recorded.
	Milestones []PublicMilestone `json:"milestones"`
}

// Public returns the API form of c.
func (c *Country) Public(siteRoot string) *PublicCountry {
	p := &PublicCountry{
		Code:          c.Code,
		Name:          c.Name,
		MandateStatus: c.MandateStatus,
		Authority:     nullable(c.Authority),
		URL:           siteRoot + "/countries/" + c.Code + "/",
		Milestones:    make([]PublicMilestone, len(c.Milestones)),
	}
	for i := range c.Milestones {
		p.Milestones[i] = c.Milestones[i].Public(c.Code, siteRoot)
	}
	return p
}

// PublicMilestone is one item of PublicCountry.Milestones.
type PublicMilestone struct {
	ID            string       `json:"id"`
	Date          string       `json:"date"`
	DatePrecision string       `json:"date_precision"`
	Status        string       `json:"status"`
	Obligation    []string     `json:"obligation"`
	Title         string       `json:"title"`
	Scope         string       `json:"scope"`
	Source        PublicLink   `json:"source"`
	Articles      []PublicLink `json:"articles"`
}

// Public returns the API form of m, a milestone of the country code.
func (m *Milestone) Public(code, siteRoot string) PublicMilestone {
	p := PublicMilestone{
		ID:            m.ID(code),
		Date:          m.Date,
		DatePrecision: m.Precision,
		Status:        m.Status,
		Obligation:    nonNil(m.Obligation),
		Title:         m.Title,
		Scope:         m.Scope,
		Source:        PublicLink{Name: m.SourceName, URL: m.Source},
		Articles:      make([]PublicLink, len(m.Reports)),
	}
	if p.DatePrecision == "" {
		p.DatePrecision = "day"
	}
	for i, r := range m.Reports {
		p.Articles[i] = PublicLink{Name: r.Title, URL: siteRoot + r.Path + "/"}
	}
	return p
}

// PublicSpec is the Spec resource (the contract); url is the official page (docs/decisions.md, identifiers and links).
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

// PublicSource is the Source resource (the contract).
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
