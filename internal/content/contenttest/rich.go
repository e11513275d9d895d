package contenttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Rich synthetic articles read like the real ones in length and shape: a
// headline, a dek, five to eight paragraphs under headings, a list, country
// and spec links and tags, about 500 words in all. Their words follow a
// long-tailed distribution (a domain vocabulary used often, plus a large
// supply of invented rare words), so an index built over thousands of them
// has the vocabulary size and posting-list lengths of a real archive.
// Benchmarks of the ask index use them; the text is deterministic in i.

var (
	richTopics = []string{
		"B2B e-invoicing mandate", "Peppol access point", "e-reporting obligation", "clearance platform",
		"invoice validation rules", "penalty relief", "turnover threshold", "accredited providers",
		"real-time reporting", "public procurement invoicing", "digital bookkeeping", "tax authority API",
		"structured invoice format", "certificate migration", "participant lookup", "credit note handling",
	}
	richVerbs = []string{
		"confirms", "postpones", "publishes", "tightens", "extends", "launches", "revises", "clarifies",
		"approves", "delays", "opens", "announces",
	}
	richCommon = strings.Fields(`invoice invoices e-invoicing business businesses supplier suppliers buyer buyers
tax authority mandate obligation structured format peppol network provider providers platform reporting data
government ministry law decree deadline date phase wave threshold turnover revenue penalty penalties fine
receiving issuing receive issue send exchange transmission validation rules schema specification version
release update change changes public sector procurement b2b b2g domestic cross-border vat registered
companies large small medium enterprises software vendor vendors erp accounts payable team teams process
processes archive archiving signature certificate certificates access point points lookup directory smp
participant identifier identifiers code codes scheme schemes transition period pilot voluntary compulsory
mandatory scheduled planned announced published consultation draft final official guidance letter notes
european standard cius syntax ubl cii xml pdf hybrid clearance model five-corner four-corner`)
	richFiller = strings.Fields(`the a of to in and for on with by from that this which as is are was were be
has have had will would must may can should its their it they under before after since until between
during within without across about against into over`)
	richTags = strings.Fields(`peppol b2b-mandate clearance e-reporting penalties postponement explainer guide
release validation certificates directory smp accounts-payable thresholds pilot reporting vendors`)
	syllables = strings.Fields(`ka ri to ne sa mo lu vi de pa ro ta ze fi no ga be ku li xo`)
)

// RichArticle returns the i-th rich synthetic article.
func RichArticle(i int) *content.Article {
	r := rand.New(rand.NewPCG(uint64(i), 0x1badcafe))
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	country := Countries[r.IntN(len(Countries))]
	spec := Specs[r.IntN(len(Specs))]
	topic := pick(richTopics)
	year := 2025 + r.IntN(4)
	word := func() string {
		switch x := r.Float64(); {
		case x < 0.45:
			return pick(richFiller)
		case x < 0.85:
			return pick(richCommon)
		case x < 0.92:
			return []string{country.Name, spec.Name, topic, fmt.Sprint(year)}[r.IntN(4)]
		default:
			// A rare word: one of about 20^4 invented words, mostly
			// drawn from a smaller, more frequent part of that space.
			n := 2 + r.IntN(3)
			if r.IntN(3) == 0 {
				n = 4
			}
			var b strings.Builder
			for range n {
				b.WriteString(pick(syllables))
			}
			return b.String()
		}
	}
	sentence := func(minWords, maxWords int) string {
		n := minWords + r.IntN(maxWords-minWords+1)
		words := make([]string, n)
		for k := range words {
			words[k] = word()
		}
		s := strings.Join(words, " ")
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	var body strings.Builder
	paras := 5 + r.IntN(4)
	for p := range paras {
		if p > 0 && p%2 == 0 {
			fmt.Fprintf(&body, "## %s\n\n", strings.TrimSuffix(sentence(3, 6), "."))
		}
		for s := range 3 + r.IntN(3) {
			if s > 0 {
				body.WriteString(" ")
			}
			body.WriteString(sentence(10, 24))
		}
		body.WriteString("\n\n")
		if p == 2 {
			for range 3 {
				fmt.Fprintf(&body, "- **%d %s %d:** %s\n", 1+r.IntN(28), time.Month(1+r.IntN(12)), year, sentence(6, 14))
			}
			body.WriteString("\n")
		}
	}
	var tags []string
	for range 3 + r.IntN(3) {
		if t := pick(richTags); !containsString(tags, t) {
			tags = append(tags, t)
		}
	}
	return &content.Article{
		Slug:        fmt.Sprintf("rich-%05d", i),
		Title:       fmt.Sprintf("%s %s %s rules for %d", country.Name, pick(richVerbs), topic, year),
		Kicker:      country.Name,
		Dek:         sentence(14, 26),
		Section:     content.Sections[r.IntN(len(content.Sections))],
		Audience:    []string{content.Audiences[r.IntN(len(content.Audiences))]},
		Countries:   []string{country.Code},
		Tags:        tags,
		Specs:       []string{spec.Slug},
		Locale:      "en",
		PublishedAt: Base.Add(-time.Duration(i) * time.Hour),
		Sources:     []content.Citation{{Source: "openpeppol", Name: "OpenPeppol AISBL", URL: "https://peppol.org/news/"}},
		Body:        body.String(),
	}
}

// RichCorpus returns a corpus of n rich synthetic articles with the
// registries of Corpus.
func RichCorpus(n int) *content.Corpus {
	c := &content.Corpus{Sources: Sources, Countries: Countries, Specs: Specs, Newsletters: map[string]*content.NewsletterIntro{}}
	for i := range n {
		c.Articles = append(c.Articles, RichArticle(i))
	}
	return c
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
