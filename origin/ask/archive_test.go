package ask

import (
	"context"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

// archiveArticles is the size of the generated archive the index is built
// from: large enough that the build runs one share per CPU with thousands
// of articles each, which is where a transformer shared between goroutines
// broke (x/text transform chains keep state; make test runs this under the
// race detector).
const archiveArticles = 20_000

// TestBuildArchive builds the index of a 20,000-article archive generated
// from the real corpus (its non-ASCII text kept) and checks that it holds
// every article and finds words with diacritics in both spellings.
func TestBuildArchive(t *testing.T) {
	base, err := content.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	c := contenttest.Archive(base, archiveArticles, 15)
	withDiacritics := 0
	for _, a := range c.Articles {
		if strings.Contains(a.Body, "Račun") {
			withDiacritics++
		}
	}
	if withDiacritics == 0 {
		t.Fatal("the generated archive has no article with the word eRačun; the test would check nothing")
	}

	e := mustNew(t, Config{SiteRoot: testSiteRoot, Log: quiet})
	e.Use(Corpus{Articles: c.Articles, Countries: c.Countries, Specs: c.Specs})
	ix := e.idx.Load()
	if ix.Len() != archiveArticles {
		t.Fatalf("index holds %d articles, want %d", ix.Len(), archiveArticles)
	}
	bySlug := map[string]*content.Article{}
	for _, a := range c.Articles {
		bySlug[a.Slug] = a
	}
	for _, tc := range []struct {
		desc, query string
	}{
		{desc: "as written", query: "eRačun"},
		{desc: "diacritics folded", query: "eracun"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ans, err := e.Ask(context.Background(), Request{Query: tc.query, RequestID: "req_archive"})
			if err != nil {
				t.Fatal(err)
			}
			if len(ans.Results) == 0 {
				t.Fatalf("%q found nothing; %d articles contain eRačun", tc.query, withDiacritics)
			}
			for _, r := range ans.Results {
				a := bySlug[r.Slug]
				if a == nil {
					t.Fatalf("result %q is not an article of the archive", r.Slug)
				}
				if !strings.Contains(a.Title+a.Dek+a.Body, "Račun") {
					t.Errorf("result %q does not contain eRačun", r.Slug)
				}
			}
		})
	}
}
