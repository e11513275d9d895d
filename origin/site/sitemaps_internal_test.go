package site

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/store"
)

// TestAppendURLSet holds the hand-written article sitemap to what
// encoding/xml writes for the same URLs, escaping included.
func TestAppendURLSet(t *testing.T) {
	t0 := time.Date(2024, 3, 9, 10, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		desc, root string
		urls       []store.SitemapURL
	}{
		{desc: "empty file", root: "https://iw.test"},
		{desc: "one URL", root: "https://iw.test", urls: []store.SitemapURL{{Path: "/2024/03/a-b", LastModified: t0}}},
		{desc: "site root and path that need escaping", root: "https://iw.test/a&b<c>", urls: []store.SitemapURL{
			{Path: "/2024/03/x", LastModified: t0}, {Path: "/2024/03/\"q'&<é>", LastModified: t0.Add(time.Hour)}}},
		{desc: "many URLs", root: "http://127.0.0.1:8080", urls: func() []store.SitemapURL {
			var out []store.SitemapURL
			for i := range 500 {
				out = append(out, store.SitemapURL{Path: fmt.Sprintf("/2020/%02d/slug-%d", i%12+1, i), LastModified: t0.Add(time.Duration(i) * time.Minute)})
			}
			return out
		}()},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			set := urlSet{NS: nsSitemap, URLs: make([]sitemapURL, 0, len(tc.urls))}
			for _, u := range tc.urls {
				set.URLs = append(set.URLs, sitemapURL{Loc: tc.root + u.Path + "/", LastMod: u.LastModified.Format(isoLayout)})
			}
			want, err := xmlResponse(set)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendURLSet(nil, tc.root, tc.urls); !bytes.Equal(got, want.Body) {
				t.Errorf("got\n%s\nwant\n%s", got, want.Body)
			}
		})
	}
}

// BenchmarkSitemapFile renders a file of 16,000 URLs, the size of a file at
// a million articles (docs/scale.md), by hand and with encoding/xml.
func BenchmarkSitemapFile(b *testing.B) {
	t0 := time.Date(2024, 3, 9, 10, 4, 5, 0, time.UTC)
	urls := make([]store.SitemapURL, 16000)
	for i := range urls {
		urls[i] = store.SitemapURL{Path: fmt.Sprintf("/2020/%02d/peppol-e-invoicing-mandate-news-%d", i%12+1, i), LastModified: t0.Add(time.Duration(i) * time.Minute)}
	}
	const root = "https://invoicewire.example"
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			appendURLSet(nil, root, urls)
		}
	})
	b.Run("encoding-xml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			set := urlSet{NS: nsSitemap, URLs: make([]sitemapURL, 0, len(urls))}
			for _, u := range urls {
				set.URLs = append(set.URLs, sitemapURL{Loc: root + u.Path + "/", LastMod: u.LastModified.Format(isoLayout)})
			}
			xmlResponse(set)
		}
	})
}
