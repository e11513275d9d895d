package site

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/api"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// MarkdownType is the media type of markdown twins (RFC 7763).
const MarkdownType = "text/markdown; charset=utf-8"

// ArticleMarkdown answers GET /<yyyy>/<mm>/<slug>.md: the article as
// markdown with YAML front matter. The year and month must be the article's
// own, so each article has exactly one address.
func (s *Site) ArticleMarkdown(r *http.Request) (*respond.Response, error) {
	year, month, file := r.PathValue("year"), r.PathValue("month"), r.PathValue("file")
	slug, ok := strings.CutSuffix(file, ".md")
	notFound := func() error {
		e := apierror.NotFound("No article page at this address.", "Article pages are /<yyyy>/<mm>/<slug>/ and their markdown twins /<yyyy>/<mm>/<slug>.md; find them in the url and markdown_url fields of "+s.SiteRoot+"/api/v1/articles.")
		if ok {
			e.SurrogateKeys = []string{store.TagArticle(slug)}
		}
		return e
	}
	if !ok || !validYearMonth(year, month) || slug == "" || len(slug) > content.MaxSlugLength {
		return nil, notFound()
	}
	rec, err := s.Store.Article(r.Context(), slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound()
	}
	if err != nil {
		return nil, err
	}
	if rec.PublishedAt.Format("2006") != year || rec.PublishedAt.Format("01") != month {
		return nil, notFound()
	}
	if rec.Retracted() {
		return nil, api.Gone(rec)
	}
	body, err := Markdown(&rec.Article, s.SiteRoot)
	if err != nil {
		return nil, err
	}
	resp := respond.Bytes(MarkdownType, body, store.TagArticle(slug))
	resp.Vary = "Accept"
	return resp, nil
}

func validYearMonth(year, month string) bool {
	y, err1 := strconv.Atoi(year)
	m, err2 := strconv.Atoi(month)
	return err1 == nil && err2 == nil && len(year) == 4 && len(month) == 2 && y >= 1990 && y <= 9999 && m >= 1 && m <= 12
}

// Markdown renders the markdown twin of a: YAML front matter (title, dek,
// published_at, updated_at, url, section, countries, sources), the article,
// its corrections and its sources.
func Markdown(a *content.Article, siteRoot string) ([]byte, error) {
	type source struct {
		Name string `yaml:"name"`
		URL  string `yaml:"url"`
	}
	fm := struct {
		Title       string     `yaml:"title"`
		Dek         string     `yaml:"dek,omitempty"`
		PublishedAt time.Time  `yaml:"published_at"`
		UpdatedAt   *time.Time `yaml:"updated_at,omitempty"`
		URL         string     `yaml:"url"`
		Section     string     `yaml:"section"`
		Audience    []string   `yaml:"audience"`
		Countries   []string   `yaml:"countries"`
		Tags        []string   `yaml:"tags,omitempty"`
		Sources     []source   `yaml:"sources"`
	}{
		Title: a.Title, Dek: a.Dek, PublishedAt: a.PublishedAt, UpdatedAt: a.UpdatedAt,
		URL: siteRoot + a.Path() + "/", Section: a.Section, Audience: a.Audience, Countries: a.Countries, Tags: a.Tags,
	}
	if fm.Countries == nil {
		fm.Countries = []string{}
	}
	for _, src := range a.Sources {
		fm.Sources = append(fm.Sources, source{src.Name, src.URL})
	}
	front, err := yaml.Marshal(&fm)
	if err != nil {
		return nil, fmt.Errorf("site: encoding front matter of %q: %w", a.Slug, err)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(front)
	b.WriteString("---\n\n")
	if a.Kicker != "" {
		fmt.Fprintf(&b, "*%s*\n\n", a.Kicker)
	}
	fmt.Fprintf(&b, "# %s\n\n", a.Title)
	if a.Dek != "" {
		fmt.Fprintf(&b, "%s\n\n", a.Dek)
	}
	fmt.Fprintf(&b, "Published %s", a.PublishedAt.Format("2 January 2006"))
	if a.UpdatedAt != nil {
		fmt.Fprintf(&b, " · updated %s", a.UpdatedAt.Format("2 January 2006"))
	}
	b.WriteString("\n\n")
	b.WriteString(strings.TrimSpace(a.Body))
	b.WriteString("\n")
	if len(a.Corrections) > 0 {
		b.WriteString("\n## Corrections\n\n")
		for _, c := range a.Corrections {
			fmt.Fprintf(&b, "- %s: %s\n", c.Date.Format("2 January 2006"), c.Text)
		}
	}
	b.WriteString("\n## Sources\n\n")
	for _, src := range a.Sources {
		fmt.Fprintf(&b, "- [%s](%s)\n", src.Name, src.URL)
	}
	return b.Bytes(), nil
}
