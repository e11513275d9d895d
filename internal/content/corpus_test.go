package content

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// corpusDir is the starter corpus that `make run` loads.
const corpusDir = "../../content"

// corpusCutoff is the latest publication date the starter corpus may carry:
// its facts were compiled in November 2026 and nothing may be dated after
// them.
var corpusCutoff = time.Date(2026, 11, 20, 23, 59, 59, 0, time.UTC)

// minBodyWords is the shortest body an article may have.
const minBodyWords = 200

func loadCorpus(t *testing.T) *Corpus {
	t.Helper()
	c, err := Load(corpusDir)
	if err != nil {
		t.Fatalf("Load(%s): %v", corpusDir, err)
	}
	return c
}

// countWords counts the whitespace-separated tokens that contain a letter or
// a digit, so markdown punctuation (table rules, list bullets, "|") does not
// pad the count.
func countWords(s string) int {
	n := 0
	for _, f := range strings.Fields(s) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return n
}

func TestCitationMatchesHomepage(t *testing.T) {
	testCases := []struct {
		desc     string
		cited    string
		homepage string
		want     bool
	}{
		{desc: "same host", cited: "https://kpmg.com/us/en/taxnewsflash/news/x.html", homepage: "https://kpmg.com/us/en/taxnewsflash.html", want: true},
		{desc: "www on the homepage only", cited: "https://oasis-open.org/tag/ubl", homepage: "https://www.oasis-open.org", want: true},
		{desc: "www on the citation only", cited: "https://www.vatupdate.com/2025/11/29/x", homepage: "https://vatupdate.com", want: true},
		{desc: "subdomain of the homepage host", cited: "https://cam.comarch.pl/x", homepage: "https://www.comarch.pl", want: true},
		{desc: "public suffix with two labels", cited: "https://www.revenue.ie/en/vat/x.aspx", homepage: "https://www.revenue.ie", want: true},
		{desc: "host directly under a public suffix", cited: "https://www.gov.uk/government/x", homepage: "https://www.gov.uk", want: true},
		{desc: "other site under the same public suffix", cited: "https://www.hmrc.gov.uk/x", homepage: "https://www.gov.uk", want: false},
		{desc: "relative citation", cited: "/2025/12/x", homepage: "https://kpmg.com", want: false},
		{desc: "sibling subdomain", cited: "https://globaltaxnews.ey.com/news/x", homepage: "https://taxnews.ey.com", want: false},
		{desc: "host that only ends with the same letters", cited: "https://test-docs.peppol.eu/x", homepage: "https://docs.peppol.eu", want: false},
		{desc: "other registrable domain", cited: "https://kpmg.com.evil.example/x", homepage: "https://kpmg.com", want: false},
		{desc: "other country domain of the same brand", cited: "https://cam.comarch.pl/x", homepage: "https://www.comarch.com", want: false},
		{desc: "different sites under one public suffix", cited: "https://a.github.io/x", homepage: "https://b.github.io", want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got, why := citationMatchesHomepage(tc.cited, tc.homepage)
			if got != tc.want {
				t.Errorf("citationMatchesHomepage(%q, %q) = %v (%s), want %v", tc.cited, tc.homepage, got, why, tc.want)
			}
		})
	}
}

func TestCorpusMinimums(t *testing.T) {
	c := loadCorpus(t)

	sections := map[string]bool{}
	audiences := map[string]bool{}
	countries := map[string]bool{}
	corrected := 0
	for _, a := range c.Articles {
		sections[a.Section] = true
		for _, v := range a.Audience {
			audiences[v] = true
		}
		for _, cc := range a.Countries {
			countries[cc] = true
		}
		if len(a.Corrections) > 0 {
			corrected++
		}
	}

	testCases := []struct {
		desc string
		got  int
		min  int
	}{
		{desc: "articles", got: len(c.Articles), min: 40},
		{desc: "countries in countries.yaml", got: len(c.Countries), min: 30},
		{desc: "specs in specs.yaml", got: len(c.Specs), min: 15},
		{desc: "sources in sources.yaml", got: len(c.Sources), min: 15},
		{desc: "sections covered by articles", got: len(sections), min: len(Sections)},
		{desc: "audiences covered by articles", got: len(audiences), min: len(Audiences)},
		{desc: "distinct countries in articles", got: len(countries), min: 15},
		{desc: "articles with a correction", got: corrected, min: 2},
		{desc: "newsletter intros", got: len(c.Newsletters), min: 1},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if tc.got < tc.min {
				t.Errorf("%s: got %d, want at least %d", tc.desc, tc.got, tc.min)
			}
		})
	}
}

func TestCorpusArticles(t *testing.T) {
	c := loadCorpus(t)

	sources := map[string]*Source{}
	for _, s := range c.Sources {
		sources[s.Slug] = s
	}
	countries := map[string]bool{}
	for _, cc := range c.Countries {
		countries[cc.Code] = true
	}
	specs := map[string]bool{}
	for _, s := range c.Specs {
		specs[s.Slug] = true
	}
	titles := map[string]string{}
	deks := map[string]string{}

	for _, a := range c.Articles {
		t.Run(a.Slug, func(t *testing.T) {
			if len(a.Sources) == 0 {
				t.Errorf("no source")
			}
			for i, cit := range a.Sources {
				src := sources[cit.Source]
				if src == nil {
					t.Errorf("sources[%d]: unknown source %q", i, cit.Source)
					continue
				}
				if ok, why := citationMatchesHomepage(cit.URL, src.Homepage); !ok {
					t.Errorf("sources[%d]: %s is not on %s's homepage %s: %s", i, cit.URL, src.Slug, src.Homepage, why)
				}
			}

			if !slices.Contains(Sections, a.Section) {
				t.Errorf("section %q is not one of %v", a.Section, Sections)
			}
			if len(a.Audience) == 0 {
				t.Errorf("no audience")
			}
			for _, v := range a.Audience {
				if !slices.Contains(Audiences, v) {
					t.Errorf("audience %q is not one of %v", v, Audiences)
				}
			}
			for _, cc := range a.Countries {
				if !countries[cc] {
					t.Errorf("country %q is not in countries.yaml", cc)
				}
			}
			for _, s := range a.Specs {
				if !specs[s] {
					t.Errorf("spec %q is not in specs.yaml", s)
				}
			}

			if n := countWords(a.Body); n < minBodyWords {
				t.Errorf("body has %d words, want at least %d", n, minBodyWords)
			}
			if strings.TrimSpace(a.Kicker) == "" {
				t.Errorf("no kicker")
			}
			if strings.TrimSpace(a.Dek) == "" {
				t.Errorf("no dek")
			}
			if len(a.Tags) == 0 {
				t.Errorf("no tags")
			}

			if a.PublishedAt.After(corpusCutoff) {
				t.Errorf("published_at %s is after the corpus cut-off %s", a.PublishedAt.Format(time.RFC3339), corpusCutoff.Format(time.RFC3339))
			}
			for i, cor := range a.Corrections {
				if !cor.Date.After(a.PublishedAt) {
					t.Errorf("corrections[%d]: date %s is not after published_at", i, cor.Date.Format(time.RFC3339))
				}
				if cor.Date.After(corpusCutoff) {
					t.Errorf("corrections[%d]: date %s is after the corpus cut-off", i, cor.Date.Format(time.RFC3339))
				}
			}

			key := strings.ToLower(strings.TrimSpace(a.Title))
			if prev, dup := titles[key]; dup {
				t.Errorf("title %q repeats %s's", a.Title, prev)
			}
			titles[key] = a.Slug
			key = strings.ToLower(strings.TrimSpace(a.Dek))
			if prev, dup := deks[key]; dup && key != "" {
				t.Errorf("dek repeats %s's", prev)
			}
			deks[key] = a.Slug
		})
	}
}

func TestCorpusRegistries(t *testing.T) {
	c := loadCorpus(t)

	for _, s := range c.Sources {
		t.Run("source/"+s.Slug, func(t *testing.T) {
			if s.Homepage == "" {
				t.Errorf("no homepage")
			}
			if !slices.Contains(TrustTiers, s.TrustTier) {
				t.Errorf("trust_tier %q is not one of %v", s.TrustTier, TrustTiers)
			}
		})
	}
	for _, cc := range c.Countries {
		t.Run("country/"+cc.Code, func(t *testing.T) {
			if !slices.Contains(MandateStatuses, cc.MandateStatus) {
				t.Errorf("mandate_status %q is not one of %v", cc.MandateStatus, MandateStatuses)
			}
			if strings.TrimSpace(cc.Authority) == "" {
				t.Errorf("no authority")
			}
			if strings.TrimSpace(cc.Summary) == "" {
				t.Errorf("no summary")
			}
			if len(cc.Aliases) == 0 {
				t.Errorf("no aliases in aliases.yaml (demonyms, other and informal names)")
			}
		})
	}
	for _, s := range c.Specs {
		t.Run("spec/"+s.Slug, func(t *testing.T) {
			if s.URL == "" {
				t.Errorf("no url (the specification's official page, docs/decisions.md (identifiers and links))")
			}
			if strings.TrimSpace(s.Summary) == "" {
				t.Errorf("no summary")
			}
			if len(s.Aliases) == 0 {
				t.Errorf("no aliases in aliases.yaml (short forms, informal names)")
			}
			if s.LastChanged != nil && s.LastChanged.After(corpusCutoff) {
				t.Errorf("last_changed %s is after the corpus cut-off", s.LastChanged.Format(time.RFC3339))
			}
		})
	}
	for week, n := range c.Newsletters {
		t.Run("newsletter/"+week, func(t *testing.T) {
			if strings.TrimSpace(n.Title) == "" {
				t.Errorf("no title")
			}
			if strings.TrimSpace(n.Body) == "" {
				t.Errorf("no intro text")
			}
		})
	}
}

// TestCorpusMilestones holds the mandate timeline to its promise: most
// tracked countries have dated milestones, and every date is one that an
// article it cites actually states, in the words a reader sees there.
func TestCorpusMilestones(t *testing.T) {
	c := loadCorpus(t)
	bySlug := map[string]*Article{}
	for _, a := range c.Articles {
		bySlug[a.Slug] = a
	}
	withMilestones, total := 0, 0
	for _, cty := range c.Countries {
		if len(cty.Milestones) > 0 {
			withMilestones++
		}
		for _, m := range cty.Milestones {
			total++
			t.Run(m.ID(cty.Code), func(t *testing.T) {
				// The loader resolved every slug; a milestone whose article
				// was dropped would show up here as a missing report.
				if len(m.Reports) != len(m.Articles) {
					t.Fatalf("%d articles but %d resolved reports", len(m.Articles), len(m.Reports))
				}
				var layouts []string
				switch m.Precision {
				case "day":
					layouts = []string{"2 January 2006"}
				case "month":
					layouts = []string{"January 2006"}
				case "year":
					layouts = []string{"2006"}
				}
				for _, slug := range m.Articles {
					body := strings.Join(strings.Fields(bySlug[slug].Body), " ")
					for _, layout := range layouts {
						if strings.Contains(body, m.Day().Format(layout)) {
							return
						}
					}
				}
				t.Errorf("no cited article (%s) states %q", strings.Join(m.Articles, ", "), m.Day().Format(layouts[0]))
			})
		}
	}
	if withMilestones < 25 {
		t.Errorf("%d countries have milestones, want at least 25", withMilestones)
	}
	if total < 60 {
		t.Errorf("%d milestones, want at least 60", total)
	}
}

// TestCorpusHoldsToCorrections holds the corpus to one set of facts: the
// wording a correction withdraws (Correction.Withdraws) appears nowhere a
// reader could still meet it as fact: not in the corrected article, the
// summary and milestones of its countries, the milestones that cite it,
// the other articles on its countries, or a newsletter. Wording an editor
// did not record is not checked; a correction that only adds a fact has
// nothing to record.
func TestCorpusHoldsToCorrections(t *testing.T) {
	c := loadCorpus(t)
	byCode := map[string]*Country{}
	for _, cty := range c.Countries {
		byCode[cty.Code] = cty
	}
	recorded := 0
	for _, a := range c.Articles {
		for _, cr := range a.Corrections {
			if len(cr.Withdraws) == 0 {
				continue
			}
			recorded++
			t.Run(a.Slug+"/"+cr.Date.Format(time.RFC3339), func(t *testing.T) {
				for _, p := range correctionScope(c, byCode, a) {
					for _, w := range cr.Withdraws {
						if containsWording(p.text, w) {
							t.Errorf("%s still states %q, which the correction withdrew", p.where, w)
						}
					}
				}
			})
		}
	}
	if recorded < 5 {
		t.Errorf("%d corrections record the wording they withdrew, want at least 5", recorded)
	}
}

// place is a text a reader sees, and where it is.
type place struct{ where, text string }

// correctionScope is every text that states facts of a's: a itself, the
// summary and milestones of its countries and any milestone citing it, the
// other articles on its countries, and the newsletters.
func correctionScope(c *Corpus, byCode map[string]*Country, a *Article) []place {
	article := func(o *Article) place {
		return place{"article " + o.Slug, o.Title + "\n" + o.Dek + "\n" + o.Body}
	}
	milestone := func(cty *Country, m *Milestone) place {
		return place{"milestone " + m.ID(cty.Code), m.Title + "\n" + m.Scope}
	}
	out := []place{article(a)}
	for _, cty := range c.Countries {
		lists := slices.Contains(a.Countries, cty.Code)
		if lists {
			out = append(out, place{"the summary of " + cty.Code, cty.Summary})
		}
		for i := range cty.Milestones {
			if m := &cty.Milestones[i]; lists || slices.Contains(m.Articles, a.Slug) {
				out = append(out, milestone(cty, m))
			}
		}
	}
	for _, o := range c.Articles {
		if o != a && slices.ContainsFunc(o.Countries, func(cc string) bool { return slices.Contains(a.Countries, cc) }) {
			out = append(out, article(o))
		}
	}
	for week, n := range c.Newsletters {
		out = append(out, place{"newsletter " + week, n.Title + "\n" + n.Body})
	}
	return out
}

// containsWording reports whether text states wording as a reader reads
// it: case, line breaks and markdown emphasis ("**RM10,000**") aside.
func containsWording(text, wording string) bool {
	return strings.Contains(readerWords(text), readerWords(wording))
}

func readerWords(s string) string {
	s = strings.NewReplacer("**", "", "*", "", "`", "").Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

func TestContainsWording(t *testing.T) {
	testCases := []struct {
		desc, text, wording string
		want                bool
	}{
		{desc: "same words", text: "Transactions above RM10,000 need an individual e-invoice.", wording: "RM10,000 need an individual e-invoice", want: true},
		{desc: "across a line break and emphasis", text: "above **RM10,000**\nneed an  individual e-invoice", wording: "RM10,000 need an individual e-invoice", want: true},
		{desc: "another case", text: "Government prefers a Peppol mandate", wording: "government prefers", want: true},
		{desc: "the corrected wording", text: "A report recommends a Peppol mandate; the government has not decided.", wording: "government prefers", want: false},
		{desc: "a part of the wording only", text: "a certified provider or AADE's free apps", wording: "through certified providers", want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := containsWording(tc.text, tc.wording); got != tc.want {
				t.Errorf("containsWording(%q, %q) = %v, want %v", tc.text, tc.wording, got, tc.want)
			}
		})
	}
}
