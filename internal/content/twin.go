package content

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MarkdownType is the media type of markdown twins (RFC 7763).
const MarkdownType = "text/markdown; charset=utf-8"

// Markdown renders the markdown twin of a, the page the site serves at
// <article path>.md and the MCP server's get_article tool returns: YAML front matter (title, dek,
// published_at, updated_at, url, section, countries, sources), the article,
// its corrections and its sources.
func (a *Article) Markdown(siteRoot string) ([]byte, error) {
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
		return nil, fmt.Errorf("content: encoding front matter of %q: %w", a.Slug, err)
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
