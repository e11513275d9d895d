package site_test

import (
	"net/http/httptest"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/origin/site"
)

// BenchmarkArticlePageMiss renders article pages of the real corpus as a
// cache miss does: the record, its countries and specifications from Redis,
// the markdown and the template (docs/scale.md).
func BenchmarkArticlePageMiss(b *testing.B) {
	s, c := publishedSite(b)
	arts := c.Articles
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		a := arts[i%len(arts)]
		i++
		r := httptest.NewRequest("GET", a.Path()+"/", nil)
		r.SetPathValue("year", a.PublishedAt.UTC().Format("2006"))
		r.SetPathValue("month", a.PublishedAt.UTC().Format("01"))
		r.SetPathValue("slug", a.Slug)
		if _, err := s.ArticlePage(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFeedMiss renders /feeds/all.xml of the real corpus as a cache
// miss does: the newest 50 articles with their full text.
func BenchmarkFeedMiss(b *testing.B) {
	s, _ := publishedSite(b)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("GET", "/feeds/all.xml", nil)
		if _, err := s.Feed(r); err != nil {
			b.Fatal(err)
		}
	}
}

// publishedSite is a site over a test Redis holding the real corpus.
func publishedSite(b *testing.B) (*site.Site, *content.Corpus) {
	inst := origintest.Start(b)
	c, err := content.Load("../../content")
	if err != nil {
		b.Fatal(err)
	}
	if err := inst.Publisher.SyncCorpus(b.Context(), c, nil); err != nil {
		b.Fatal(err)
	}
	return &site.Site{Store: inst.Store, SiteRoot: inst.SiteRoot}, c
}
