// Package content holds Invoicewire's content model and the loader that
// reads the editorial tree (content/) into it.
//
// The tree looks like this:
//
//	content/articles/<yyyy>/<mm>/<slug>.md   YAML front matter + markdown body
//	content/countries.yaml                   tracked countries
//	content/specs.yaml                       tracked specifications
//	content/sources.yaml                     the registry of cited publishers
//	content/newsletters/<yyyy>-w<ww>.md      optional editor's intro per issue
//
// Everything the loader returns has been validated: a Corpus either loads
// whole or not at all.
package content

import (
	"strings"
	"time"
)

// Sections are the allowed values of Article.Section (the contract, GET /articles).
var Sections = []string{"mandates", "network", "vendors", "policy", "specs", "guides"}

// Audiences are the allowed values of Article.Audience.
var Audiences = []string{"biz", "ap", "vendor", "policy"}

// SectionNames and AudienceNames are the values of Sections and Audiences
// as readers see them: the headings of the section and audience pages and
// the titles of their feeds.
var (
	SectionNames  = map[string]string{"mandates": "Mandates", "network": "Network", "vendors": "Vendors", "policy": "Policy", "specs": "Specifications", "guides": "Guides"}
	AudienceNames = map[string]string{"biz": "Businesses", "ap": "Accounts payable", "vendor": "Vendors and providers", "policy": "Policy makers"}
)

// AudienceHeading names the readers of an audience as its page and feed
// do: "For accounts payable".
func AudienceHeading(a string) string {
	if n, ok := AudienceNames[a]; ok {
		return "For " + strings.ToLower(n)
	}
	return "For " + a
}

// MandateStatuses are the allowed values of Country.MandateStatus (docs/decisions.md, vocabularies).
var MandateStatuses = []string{"live", "phased-rollout", "scheduled", "planned", "b2g-only", "reporting-only", "voluntary"}

// TrustTiers are the allowed values of Source.TrustTier (docs/decisions.md, vocabularies).
var TrustTiers = []string{"primary-official", "standards-body", "industry-association", "advisory", "vendor", "press", "community-technical"}

// Article is one published piece as the editors wrote it. Fields that the
// API derives from configuration (url, markdown_url) are not stored here.
type Article struct {
	Slug        string       `json:"slug" yaml:"slug"`
	Title       string       `json:"title" yaml:"title"`
	Kicker      string       `json:"kicker,omitempty" yaml:"kicker"`
	Dek         string       `json:"dek,omitempty" yaml:"dek"`
	Section     string       `json:"section" yaml:"section"`
	Audience    []string     `json:"audience" yaml:"audience"`
	Countries   []string     `json:"countries" yaml:"countries"`
	Tags        []string     `json:"tags,omitempty" yaml:"tags"`
	Specs       []string     `json:"specs,omitempty" yaml:"specs"`
	Locale      string       `json:"locale" yaml:"locale"`
	PublishedAt time.Time    `json:"published_at" yaml:"published_at"`
	UpdatedAt   *time.Time   `json:"updated_at,omitempty" yaml:"updated_at"`
	Image       string       `json:"image,omitempty" yaml:"image"`
	Sources     []Citation   `json:"sources" yaml:"sources"`
	Corrections []Correction `json:"corrections,omitempty" yaml:"corrections"`
	// Body is the article's markdown, without front matter.
	Body string `json:"body" yaml:"-"`
}

// Citation is one source an article relies on: a registry entry and the
// exact page the facts came from. Name is filled in from the registry by the
// loader so readers of the store need not join.
type Citation struct {
	Source string `json:"source" yaml:"source"`
	Name   string `json:"name" yaml:"-"`
	URL    string `json:"url" yaml:"url"`
}

// Correction is an editor's note appended to a published article. Adding one
// sets the article's updated_at and emits article.corrected (docs/decisions.md, retraction and correction).
type Correction struct {
	Date time.Time `json:"date" yaml:"date"`
	Text string    `json:"text" yaml:"text"`
	// Withdraws lists, word for word, the wording the correction took back
	// ("RM10,000 need an individual e-invoice"), so the corpus test can
	// hold every other place that states the same facts (the milestones
	// and summary of the article's countries, the other articles on them,
	// the newsletters) to the correction. It is an editors' record for that
	// test, not part of the note readers see, so the API never carries it.
	Withdraws []string `json:"-" yaml:"withdraws,omitempty"`
}

// Path returns the article's site path without a trailing slash:
// /<yyyy>/<mm>/<slug>. Pages append "/", the markdown twin ".md" (docs/decisions.md, markdown twin).
func (a *Article) Path() string {
	return "/" + a.PublishedAt.UTC().Format("2006/01") + "/" + a.Slug
}

// LastModified is updated_at when set, else published_at.
func (a *Article) LastModified() time.Time {
	if a.UpdatedAt != nil {
		return *a.UpdatedAt
	}
	return a.PublishedAt
}

// Country is a tracked jurisdiction (the contract's Country resource).
type Country struct {
	Code          string `json:"code" yaml:"code"`
	Name          string `json:"name" yaml:"name"`
	MandateStatus string `json:"mandate_status" yaml:"mandate_status"`
	Authority     string `json:"authority,omitempty" yaml:"authority"`
	// Summary is a short editor's note on the country's position, shown on
	// the country page.
	Summary string `json:"summary,omitempty" yaml:"summary"`
	// Aliases are the other names readers use for the country, its
	// demonyms and the informal names of its platforms and formats, from
	// aliases.yaml. /ask finds the country's articles by them.
	Aliases []string `json:"aliases,omitempty" yaml:"-"`
	// Milestones are the country's dated steps, oldest first once loaded.
	Milestones []Milestone `json:"milestones,omitempty" yaml:"milestones"`
}

// Spec is a tracked specification of the e-invoicing network (the contract's Spec resource).
type Spec struct {
	Slug        string     `json:"slug" yaml:"slug"`
	Name        string     `json:"name" yaml:"name"`
	Version     string     `json:"version,omitempty" yaml:"version"`
	LastChanged *time.Time `json:"last_changed,omitempty" yaml:"last_changed"`
	URL         string     `json:"url,omitempty" yaml:"url"`
	Summary     string     `json:"summary,omitempty" yaml:"summary"`
	// Aliases are the short forms and informal names readers use for the
	// spec, from aliases.yaml.
	Aliases []string `json:"aliases,omitempty" yaml:"-"`
}

// Source is an entry of the registry of cited publishers (the contract's Source resource).
type Source struct {
	Slug      string `json:"slug" yaml:"slug"`
	Name      string `json:"name" yaml:"name"`
	Homepage  string `json:"homepage,omitempty" yaml:"homepage"`
	TrustTier string `json:"trust_tier,omitempty" yaml:"trust_tier"`
}

// NewsletterIntro is the optional editor's intro for one weekly issue (docs/decisions.md, newsletter).
type NewsletterIntro struct {
	// Week is the ISO week, formatted "2026-w47".
	Week  string `json:"week"`
	Title string `json:"title,omitempty"`
	Body  string `json:"body"`
}

// Corpus is a whole validated content tree.
type Corpus struct {
	Articles    []*Article
	Countries   []*Country
	Specs       []*Spec
	Sources     []*Source
	Newsletters map[string]*NewsletterIntro
	// Synonyms are groups of words that mean the same to a reader
	// (aliases.yaml's terms), for /ask.
	Synonyms [][]string
	// Unchanged counts the article files a Stream skipped as unchanged
	// (StreamOptions.Unchanged and Known).
	Unchanged int
}
