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
		{Code: "be", Name: "Belgium", MandateStatus: "live", Authority: "FPS Finance"},
		{Code: "de", Name: "Germany", MandateStatus: "phased-rollout", Authority: "Federal Ministry of Finance"},
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
