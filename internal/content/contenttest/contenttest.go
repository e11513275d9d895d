// Package contenttest builds small, deterministic content corpora for tests
// and benchmarks, so they do not depend on the editorial tree in content/.
package contenttest

import (
	"fmt"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Sources, Countries and Specs are the registries of every generated corpus.
var (
	Sources = []*content.Source{
		{Slug: "openpeppol", Name: "OpenPeppol AISBL", Homepage: "https://peppol.org", TrustTier: "standards-body"},
		{Slug: "kpmg-tnf", Name: "KPMG TaxNewsFlash", Homepage: "https://kpmg.com/us/en/taxnewsflash.html", TrustTier: "advisory"},
	}
	Countries = []*content.Country{
		{Code: "be", Name: "Belgium", MandateStatus: "live", Authority: "FPS Finance", Milestones: []content.Milestone{
			{Date: "2026-01-01", Precision: "day", Status: "in-force", Obligation: []string{"issue", "receive"},
				Title: "Domestic B2B e-invoicing compulsory", Scope: "Every Belgian business, for domestic B2B invoices.",
				Source: "https://kpmg.com/us/en/taxnewsflash/news/2025/12/belgium.html", SourceName: "KPMG TaxNewsFlash",
				Articles: []string{"article-00000"}, Reports: []content.ArticleRef{report(0, "be")}},
			{Date: "2028-01-01", Precision: "year", Status: "proposed", Obligation: []string{"report"},
				Title: "Near-real-time e-reporting", Scope: "Domestic B2B invoice data; a commitment <without> a bill & no date.",
				Source: "https://kpmg.com/us/en/taxnewsflash/news/2026/01/belgium-reporting.html", SourceName: "KPMG TaxNewsFlash",
				Articles: []string{"article-00000"}, Reports: []content.ArticleRef{report(0, "be")}},
		}},
		{Code: "de", Name: "Germany", MandateStatus: "phased-rollout", Authority: "Federal Ministry of Finance", Milestones: []content.Milestone{
			{Date: "2025-01-01", Precision: "day", Status: "in-force", Obligation: []string{"receive"},
				Title: "Every business must receive e-invoices", Scope: "All businesses in Germany; B2B.",
				Source: "https://peppol.org/learn-more/country-profiles/germany/", SourceName: "OpenPeppol AISBL",
				Articles: []string{"article-00001"}, Reports: []content.ArticleRef{report(1, "de")}},
			{Date: "2026-01-01", Precision: "day", Status: "postponed", Obligation: []string{"issue"},
				Title: "Issuing compulsory (original date)", Scope: "Businesses above €800,000 turnover, moved to 2027.",
				Source: "https://peppol.org/learn-more/country-profiles/germany/", SourceName: "OpenPeppol AISBL",
				Articles: []string{"article-00001"}, Reports: []content.ArticleRef{report(1, "de")}},
			{Date: "2027-01-01", Precision: "day", Status: "scheduled", Obligation: []string{"issue"},
				Title: "Issuing compulsory above €800,000 turnover", Scope: "Businesses whose prior-year turnover exceeded €800,000, for domestic B2B invoices, with a long scope text that needs folding in a calendar.",
				Source: "https://peppol.org/learn-more/country-profiles/germany/", SourceName: "OpenPeppol AISBL",
				Articles: []string{"article-00001"}, Reports: []content.ArticleRef{report(1, "de")}},
			{Date: "2029-04-01", Precision: "month", Status: "proposed", Obligation: []string{"archive", "format"},
				Title: "Structured archive; commas, semicolons \\ and backslashes", Scope: "Everyone; B2B, B2G.",
				Source: "https://peppol.org/learn-more/country-profiles/germany/", SourceName: "OpenPeppol AISBL",
				Articles: []string{"article-00001"}, Reports: []content.ArticleRef{report(1, "de")}},
		}},
		{Code: "fr", Name: "France", MandateStatus: "phased-rollout", Authority: "DGFiP"},
		{Code: "pl", Name: "Poland", MandateStatus: "phased-rollout", Authority: "Ministry of Finance"},
		{Code: "jp", Name: "Japan", MandateStatus: "voluntary"},
	}
	Specs = []*content.Spec{
		{Slug: "peppol-bis-billing-3", Name: "Peppol BIS Billing 3.0", Version: "3.0.20", LastChanged: ptr(time.Date(2025, 11, 24, 0, 0, 0, 0, time.UTC)), URL: "https://docs.peppol.eu/poacc/billing/3.0/"},
		{Slug: "en-16931", Name: "EN 16931"},
	}
)

func ptr[T any](v T) *T { return &v }

// report names the i-th synthetic article about cc without calling Article,
// which reads Countries and so cannot be used to initialise it.
func report(i int, cc string) content.ArticleRef {
	slug := fmt.Sprintf("article-%05d", i)
	published := Base.AddDate(0, 0, -i)
	return content.ArticleRef{
		Slug:    slug,
		Title:   fmt.Sprintf("Synthetic article %d about e-invoicing in %s", i, cc),
		Path:    "/" + published.Format("2006/01") + "/" + slug,
		Updated: published,
	}
}

func clone[T any](list []*T) []*T {
	out := make([]*T, len(list))
	for i, v := range list {
		c := *v
		out[i] = &c
	}
	return out
}

// Base is the publication time of the newest generated article.
var Base = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// Article returns the i-th synthetic article: one a day going back from
// Base, cycling through sections, audiences and countries, so every filter
// value has articles.
func Article(i int) *content.Article {
	sections := content.Sections
	audiences := content.Audiences
	cc := Countries[i%len(Countries)].Code
	return &content.Article{
		Slug:        fmt.Sprintf("article-%05d", i),
		Title:       fmt.Sprintf("Synthetic article %d about e-invoicing in %s", i, cc),
		Kicker:      "Test",
		Dek:         fmt.Sprintf("Dek of article %d.", i),
		Section:     sections[i%len(sections)],
		Audience:    []string{audiences[i%len(audiences)]},
		Countries:   []string{cc},
		Tags:        []string{"peppol"},
		Locale:      "en",
		PublishedAt: Base.Add(-time.Duration(i) * 24 * time.Hour),
		Sources:     []content.Citation{{Source: "openpeppol", Name: "OpenPeppol AISBL", URL: "https://peppol.org/news/"}},
		Body:        fmt.Sprintf("Body of synthetic article %d. Peppol BIS Billing 3.0 is the invoice specification.\n", i),
	}
}

// Corpus returns a corpus of n synthetic articles with copies of the
// registries above, so a test may edit it freely.
func Corpus(n int) *content.Corpus {
	c := &content.Corpus{Sources: clone(Sources), Countries: clone(Countries), Specs: clone(Specs), Newsletters: map[string]*content.NewsletterIntro{}}
	for i := range n {
		c.Articles = append(c.Articles, Article(i))
	}
	return c
}
