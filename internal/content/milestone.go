package content

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MilestoneStatuses are the allowed values of Milestone.Status: where the
// dated obligation stands, whatever the date says about past or future.
var MilestoneStatuses = []string{"in-force", "scheduled", "proposed", "postponed", "cancelled"}

// Obligations are the allowed values of Milestone.Obligation: what becomes
// due on the date. "format" is a structure or version that becomes
// compulsory, "software" a duty on invoicing or bookkeeping systems,
// "provider" the appointment of an accredited service provider, and
// "penalties" the end of a period without fines.
var Obligations = []string{"issue", "receive", "report", "archive", "format", "software", "provider", "penalties"}

// DatePrecisions are the allowed values of Milestone.Precision. Governments
// often announce a month ("April 2029") or a year ("from 2028") rather than a
// day; such a milestone is written on the first day of that period and says
// so, rather than inventing a day.
var DatePrecisions = []string{"day", "month", "year"}

// DateLayout is how milestone dates are written (RFC 3339 full-date).
const DateLayout = "2006-01-02"

// Milestone is one dated step of a country's e-invoicing rules, as the
// editors record it in countries.yaml under the country's milestones.
type Milestone struct {
	// Date is the day the obligation applies, YYYY-MM-DD.
	Date string `json:"date" yaml:"date"`
	// Precision says how much of Date was announced: day (the default),
	// month or year.
	Precision string `json:"precision,omitempty" yaml:"precision"`
	// Status is one of MilestoneStatuses.
	Status string `json:"status" yaml:"status"`
	// Obligation lists what becomes due, from Obligations.
	Obligation []string `json:"obligation" yaml:"obligation"`
	// Title names the step in a few words, for calendars and timelines.
	Title string `json:"title" yaml:"title"`
	// Scope says in words who is covered: thresholds, sectors, B2G/B2B.
	Scope string `json:"scope" yaml:"scope"`
	// Source is the page the date rests on; its host must belong to a
	// publisher in sources.yaml.
	Source string `json:"source" yaml:"source"`
	// SourceName is the publisher's name, filled in by the loader.
	SourceName string `json:"source_name" yaml:"-"`
	// Articles are the slugs of the articles that report the milestone. The
	// loader resolves them into Reports.
	Articles []string `json:"-" yaml:"articles"`
	// Reports are the articles of Articles, resolved by the loader so that
	// readers of the store need no join.
	Reports []ArticleRef `json:"reports" yaml:"-"`
}

// ArticleRef names an article by slug, title and site path.
type ArticleRef struct {
	Slug  string `json:"slug"`
	Title string `json:"title"`
	// Path is the article's site path without a trailing slash, as
	// Article.Path returns it.
	Path string `json:"path"`
	// Updated is the article's updated_at, else its published_at.
	Updated time.Time `json:"updated"`
}

// Day returns the milestone's date as midnight UTC. Load has checked it, so
// a Milestone from a loaded Corpus always parses.
func (m *Milestone) Day() time.Time {
	d, err := time.Parse(DateLayout, m.Date)
	if err != nil {
		return time.Time{}
	}
	return d
}

// ID names the milestone within the whole corpus: the country, the date and
// what becomes due. It is the stable part of calendar UIDs and page anchors,
// so editing a milestone's wording keeps its identity while moving its date
// makes a new milestone (the old one is kept with status "postponed").
func (m *Milestone) ID(country string) string {
	obl := slices.Clone(m.Obligation)
	slices.Sort(obl)
	return country + "-" + m.Date + "-" + strings.Join(obl, "-")
}

// DateLabel writes the date as readers expect it, to its precision:
// "1 January 2027", "April 2029" or "2028".
func (m *Milestone) DateLabel() string {
	d := m.Day()
	switch m.Precision {
	case "month":
		return d.Format("January 2006")
	case "year":
		return d.Format("2006")
	}
	return d.Format("2 January 2006")
}

// checkMilestones validates every country's milestones once articles and
// sources are known, filling in SourceName and Reports. failed are the
// slugs of cited articles whose file exists but did not load: the file's
// own errors are the editor's to fix, and a citation of it is no unknown
// article.
func (l *loader) checkMilestones(countries []*Country, sources []*Source, articles map[string]*Article, failed map[string]bool) {
	ids := map[string]string{}
	for i, c := range countries {
		if c == nil {
			continue
		}
		for j := range c.Milestones {
			m := &c.Milestones[j]
			at := fmt.Sprintf("[%d].milestones[%d]", i, j)
			l.checkMilestone(c.Code, at, m, sources, articles, failed)
			id := m.ID(c.Code)
			if prev, dup := ids[id]; dup {
				l.fail("countries.yaml", at, "same country, date and obligation as %s; merge them or tell them apart by obligation", prev)
			}
			ids[id] = at
		}
		slices.SortStableFunc(c.Milestones, func(a, b Milestone) int { return strings.Compare(a.Date, b.Date) })
	}
}

func (l *loader) checkMilestone(code, at string, m *Milestone, sources []*Source, articles map[string]*Article, failed map[string]bool) {
	const file = "countries.yaml"
	if d, err := time.Parse(DateLayout, m.Date); err != nil || d.Format(DateLayout) != m.Date {
		l.fail(file, at+".date", "must be a calendar date written YYYY-MM-DD, got %q", m.Date)
	}
	if m.Precision == "" {
		m.Precision = "day"
	}
	switch {
	case !slices.Contains(DatePrecisions, m.Precision):
		l.fail(file, at+".precision", "unknown value %q (allowed: %s)", m.Precision, strings.Join(DatePrecisions, ", "))
	case m.Precision == "month" && !strings.HasSuffix(m.Date, "-01"),
		m.Precision == "year" && !strings.HasSuffix(m.Date, "-01-01"):
		l.fail(file, at+".date", "a date known only to the %s is written on its first day, got %q", m.Precision, m.Date)
	}
	if !slices.Contains(MilestoneStatuses, m.Status) {
		l.fail(file, at+".status", "unknown value %q (allowed: %s)", m.Status, strings.Join(MilestoneStatuses, ", "))
	}
	if len(m.Obligation) == 0 {
		l.fail(file, at+".obligation", "required: at least one of %s", strings.Join(Obligations, ", "))
	}
	for _, o := range m.Obligation {
		if !slices.Contains(Obligations, o) {
			l.fail(file, at+".obligation", "unknown value %q (allowed: %s)", o, strings.Join(Obligations, ", "))
		}
	}
	if strings.TrimSpace(m.Title) == "" {
		l.fail(file, at+".title", "required")
	}
	if strings.TrimSpace(m.Scope) == "" {
		l.fail(file, at+".scope", "required: who is covered, in words")
	}
	if src, why := sourceForURL(m.Source, sources); src == nil {
		l.fail(file, at+".source", "%s", why)
	} else {
		m.SourceName = src.Name
	}
	if len(m.Articles) == 0 {
		l.fail(file, at+".articles", "required: at least one article that reports the milestone")
	}
	m.Reports = make([]ArticleRef, 0, len(m.Articles))
	for _, slug := range m.Articles {
		a := articles[slug]
		switch {
		case a == nil && failed[slug]:
			// Reported at the article's file.
		case a == nil:
			l.fail(file, at+".articles", "unknown article %q", slug)
		case !slices.Contains(a.Countries, code):
			l.fail(file, at+".articles", "article %q is not about %q (its countries: %s)", slug, code, strings.Join(a.Countries, ", "))
		default:
			m.Reports = append(m.Reports, ArticleRef{Slug: a.Slug, Title: a.Title, Path: a.Path(), Updated: a.LastModified()})
		}
	}
}

// sourceForURL finds the registered publisher a cited URL belongs to, the
// one with the most specific homepage when several match. When none does it
// says why, for the editor.
func sourceForURL(raw string, sources []*Source) (*Source, string) {
	if !isAbsoluteHTTPURL(raw) {
		return nil, fmt.Sprintf("must be an absolute http(s) URL, got %q", raw)
	}
	var best *Source
	for _, s := range sources {
		if s == nil || s.Homepage == "" {
			continue
		}
		if ok, _ := citationMatchesHomepage(raw, s.Homepage); ok && (best == nil || len(s.Homepage) > len(best.Homepage)) {
			best = s
		}
	}
	if best == nil {
		return nil, fmt.Sprintf("%s is on no publisher's site in sources.yaml; register the publisher first", raw)
	}
	return best, ""
}
