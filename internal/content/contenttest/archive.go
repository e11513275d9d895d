package contenttest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// An archive is a large corpus made from a real one: every generated article
// takes a real article as its template (headline, kicker, section, sources,
// tags, locale) and recombines paragraphs from the whole real corpus into its
// body, so the text keeps the real vocabulary and its non-ASCII characters
// (names such as Košice or Zürich, €, dashes and quotes). Scale tests and
// make bench-scale use it; everything follows from the seed and the index of
// the article, so the same (seed, i) always gives the same article and
// archives of any size can be made in parallel or streamed to disk.

// ArchiveYears is how far back the publication dates of an archive reach.
const ArchiveYears = 20

// ArchiveEnd is the publication time of the newest possible archive article.
var ArchiveEnd = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// ArchiveSource is a real corpus prepared for recombination. It is read-only
// once built and safe for concurrent use.
type ArchiveSource struct {
	seed       uint64
	templates  []*content.Article
	paragraphs []string
	// headings are the "## ..." lines of the real bodies, to break up
	// recombined text as the real articles do.
	headings    []string
	corrections []string
}

// NewArchiveSource prepares base (a loaded content tree with at least one
// article) for Article; seed fixes every choice.
func NewArchiveSource(base *content.Corpus, seed uint64) *ArchiveSource {
	s := &ArchiveSource{seed: seed, templates: base.Articles}
	for _, a := range base.Articles {
		for _, p := range strings.Split(a.Body, "\n\n") {
			p = strings.TrimSpace(p)
			switch {
			case p == "":
			case strings.HasPrefix(p, "#"):
				s.headings = append(s.headings, p)
			default:
				s.paragraphs = append(s.paragraphs, p)
			}
		}
		for _, c := range a.Corrections {
			s.corrections = append(s.corrections, c.Text)
		}
	}
	if len(s.corrections) == 0 {
		s.corrections = []string{"An earlier version of this article gave the wrong date for the second phase."}
	}
	return s
}

// Article returns the i-th article of the archive (i ≥ 0). The first ones
// are the real articles themselves, so whatever the registries cite
// (milestones name real articles) is in every archive; the others are
// generated. About 3% of those carry a correction; their publication dates
// spread over ArchiveYears, denser towards the present as an archive that
// grows each year is.
func (s *ArchiveSource) Article(i int) *content.Article {
	if i < len(s.templates) {
		a := *s.templates[i]
		return &a
	}
	r := rand.New(rand.NewPCG(s.seed, uint64(i)))
	t := s.templates[r.IntN(len(s.templates))]
	other := func() *content.Article { return s.templates[r.IntN(len(s.templates))] }

	span := float64(ArchiveYears * 365 * 24 * time.Hour)
	// Density grows linearly with time: the age is span·(1-√u).
	age := time.Duration(span * (1 - math.Sqrt(r.Float64())))
	published := ArchiveEnd.Add(-age).Truncate(time.Minute)

	a := &content.Article{
		Slug:        archiveSlug(t.Slug, i),
		Title:       t.Title,
		Kicker:      t.Kicker,
		Dek:         other().Dek,
		Section:     t.Section,
		Audience:    t.Audience,
		Countries:   t.Countries,
		Tags:        t.Tags,
		Specs:       t.Specs,
		Locale:      t.Locale,
		PublishedAt: published,
		Image:       t.Image,
		Sources:     t.Sources,
	}
	// Four in ten articles take their section or countries from another
	// real article: every combination of filters the real corpus allows
	// gets articles, in the real proportions.
	if r.IntN(10) < 4 {
		a.Section = other().Section
	}
	if r.IntN(10) < 4 {
		o := other()
		a.Countries, a.Audience = o.Countries, o.Audience
	}

	var body strings.Builder
	body.WriteString(firstParagraph(t))
	for k, n := 0, 3+r.IntN(6); k < n; k++ {
		body.WriteString("\n\n")
		if len(s.headings) > 0 && r.IntN(4) == 0 {
			body.WriteString(s.headings[r.IntN(len(s.headings))])
			body.WriteString("\n\n")
		}
		body.WriteString(s.paragraphs[r.IntN(len(s.paragraphs))])
	}
	body.WriteString("\n")
	a.Body = body.String()

	if r.IntN(100) < 3 {
		d := published.Add(time.Duration(1+r.IntN(30)) * 24 * time.Hour)
		a.Corrections = []content.Correction{{Date: d, Text: s.corrections[r.IntN(len(s.corrections))]}}
		a.UpdatedAt = &d
	}
	return a
}

// Retracted reports whether the i-th article of the archive is one that a
// scale run retracts after publishing it: one in two hundred.
func (s *ArchiveSource) Retracted(i int) bool {
	return rand.New(rand.NewPCG(s.seed^0x5eed, uint64(i))).IntN(200) == 0
}

// Archive returns a corpus of the first n articles of an archive made from
// base with seed, with base's registries. It holds every article in memory;
// make bench-scale streams ArchiveSource.Article instead.
func Archive(base *content.Corpus, n int, seed uint64) *content.Corpus {
	s := NewArchiveSource(base, seed)
	c := &content.Corpus{Sources: base.Sources, Countries: base.Countries, Specs: base.Specs, Newsletters: map[string]*content.NewsletterIntro{}}
	c.Articles = make([]*content.Article, n)
	for i := range n {
		c.Articles[i] = s.Article(i)
	}
	return c
}

// archiveSlug is the template's slug, cut to leave room, with i in base 36:
// unique in the archive and a valid slug.
func archiveSlug(template string, i int) string {
	const room = 100
	if len(template) > room {
		template = strings.TrimRight(template[:room], "-")
	}
	return template + "-" + strconv.FormatInt(int64(i), 36)
}

// firstParagraph is the template's opening paragraph, which usually names
// what the headline says.
func firstParagraph(a *content.Article) string {
	for _, p := range strings.Split(a.Body, "\n\n") {
		if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, "#") {
			return p
		}
	}
	return strings.TrimSpace(a.Body)
}
