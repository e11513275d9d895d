package site_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/origin/site"
)

// get fetches path (relative to the site root, or absolute).
func get(t *testing.T, inst *origintest.Instance, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return inst.Get(t, path, header...)
}

// eventually retries check until it passes: content changes reach the
// origin's cache through Redis pub/sub, asynchronously.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type catalog struct {
	Count int `json:"count"`
	Items []struct {
		Title string `json:"title"`
		URL   string `json:"url"`
		Type  string `json:"type"`
	} `json:"items"`
}

// TestFeedsMatchTheCatalog reads every feed the catalog lists with a real
// feed parser: each parses, has the catalog's type and title, at most 50
// items newest first with absolute links and full content; and no feed the
// catalog lacks is served.
func TestFeedsMatchTheCatalog(t *testing.T) {
	inst := origintest.Start(t)
	ctx := context.Background()
	// 60 articles in all (one retracted), so the master feed is capped.
	for i := origintest.Articles; i < 60; i++ {
		if _, err := inst.Publisher.SyncArticle(ctx, contenttest.Article(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A tracked country without articles has no feed.
	if _, err := inst.Publisher.SyncCountry(ctx, &content.Country{Code: "nl", Name: "Netherlands", MandateStatus: "planned"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Publisher.SendNewsletter(ctx, content.ISOWeek(contenttest.Base), nil); err != nil {
		t.Fatal(err)
	}
	var cat catalog
	eventually(t, "the catalog shows the new articles", func() error {
		_, body := get(t, inst, "/api/v1/feeds")
		if err := json.Unmarshal(body, &cat); err != nil {
			return err
		}
		_, all := get(t, inst, "/feeds/all.json")
		if !strings.Contains(string(all), contenttest.Article(49).Slug) {
			return fmt.Errorf("the master feed does not have the new articles yet")
		}
		return nil
	})
	// Two formats of every article feed, and nothing else: the deadline
	// calendar is no Feed of the contract's types.
	want := 2 * (1 + len(content.Sections) + len(content.Audiences) + len(contenttest.Countries) + 1)
	if len(cat.Items) != want || cat.Count != want {
		t.Fatalf("catalog has %d feeds (count %d), want %d", len(cat.Items), cat.Count, want)
	}
	parser := gofeed.NewParser()
	for _, f := range cat.Items {
		t.Run(strings.TrimPrefix(f.URL, inst.SiteRoot), func(t *testing.T) {
			resp, body := get(t, inst, f.URL)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			wantType := map[string]string{"rss": "application/rss+xml", "json": "application/feed+json"}[f.Type]
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, wantType) {
				t.Errorf("Content-Type %q, want %s", ct, wantType)
			}
			feed, err := parser.ParseString(string(body))
			if err != nil {
				t.Fatalf("gofeed: %v", err)
			}
			wantFeedType := map[string]string{"rss": "rss", "json": "json"}[f.Type]
			if feed.FeedType != wantFeedType {
				t.Errorf("parsed as %s, want %s", feed.FeedType, wantFeedType)
			}
			if f.Type == "json" && feed.FeedVersion != "https://jsonfeed.org/version/1.1" {
				t.Errorf("JSON Feed version %q, want 1.1", feed.FeedVersion)
			}
			if f.Type == "rss" && feed.FeedVersion != "2.0" {
				t.Errorf("RSS version %q, want 2.0", feed.FeedVersion)
			}
			if !strings.HasPrefix(f.Title, feed.Title) || feed.Title == "" {
				t.Errorf("feed title %q does not match the catalog's %q", feed.Title, f.Title)
			}
			if feed.FeedLink != f.URL {
				t.Errorf("self link %q, want %q", feed.FeedLink, f.URL)
			}
			if len(feed.Items) == 0 || len(feed.Items) > site.FeedItems {
				t.Fatalf("%d items", len(feed.Items))
			}
			for i, it := range feed.Items {
				if !strings.HasPrefix(it.Link, inst.SiteRoot+"/") || !strings.HasPrefix(it.GUID, inst.SiteRoot+"/") {
					t.Errorf("item %d link %q / id %q is not an absolute site URL", i, it.Link, it.GUID)
				}
				if it.Content == "" || it.PublishedParsed == nil {
					t.Errorf("item %d has no content or date", i)
				}
				if i > 0 && it.PublishedParsed.After(*feed.Items[i-1].PublishedParsed) {
					t.Errorf("item %d is newer than item %d", i, i-1)
				}
				if strings.Contains(it.Link, origintest.RetractedSlug) {
					t.Error("the retracted article is in the feed")
				}
			}
			if strings.Contains(f.URL, "/feeds/all.") {
				if len(feed.Items) != site.FeedItems {
					t.Errorf("the master feed has %d items, want the newest %d", len(feed.Items), site.FeedItems)
				}
				if !strings.Contains(feed.Items[0].Content, "Body of synthetic article 0.") {
					t.Errorf("item content is not the full text: %q", feed.Items[0].Content)
				}
			}
		})
	}
	// Country codes are lowercase; one in capitals is sent to its feed's
	// one address (docs/decisions.md, "Identifiers and links").
	t.Run("a country's code in capitals", func(t *testing.T) {
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, path := range []string{"/feeds/country/DE.xml", "/feeds/country/De.json"} {
			resp, err := noFollow.Get(inst.SiteRoot + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := inst.SiteRoot + strings.ToLower(path)
			if resp.StatusCode != 301 || resp.Header.Get("Location") != want {
				t.Errorf("%s: %d, Location %q; want 301 to %s", path, resp.StatusCode, resp.Header.Get("Location"), want)
			}
		}
	})
	t.Run("feeds the catalog does not list", func(t *testing.T) {
		for _, path := range []string{"/feeds/country/nl.xml", "/feeds/country/nl.json", "/feeds/country/zz.json", "/feeds/country/ZZ.json", "/feeds/section/sport.xml",
			"/feeds/audience/cfo.json", "/feeds/all.rss", "/feeds/section/mandates.atom", "/feeds/SECTION/mandates.xml"} {
			resp, body := get(t, inst, path)
			if resp.StatusCode != 404 || !strings.Contains(string(body), `"not_found"`) {
				t.Errorf("%s: %d %s", path, resp.StatusCode, body)
			}
		}
	})
}

type urlset struct {
	URLs []struct {
		Loc     string `xml:"loc"`
		LastMod string `xml:"lastmod"`
		News    *struct {
			Name     string `xml:"publication>name"`
			Language string `xml:"publication>language"`
			Date     string `xml:"publication_date"`
			Title    string `xml:"title"`
		} `xml:"http://www.google.com/schemas/sitemap-news/0.9 news"`
	} `xml:"url"`
}

// TestSitemaps parses the index and every sitemap in it, and requests every
// address they list: each must answer 200.
func TestSitemaps(t *testing.T) {
	inst := origintest.Start(t)
	resp, body := get(t, inst, "/sitemap-index.xml")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/xml") {
		t.Fatalf("index: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var idx struct {
		XMLName  xml.Name
		Sitemaps []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	if err := xml.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.XMLName.Space != "http://www.sitemaps.org/schemas/sitemap/0.9" || idx.XMLName.Local != "sitemapindex" {
		t.Errorf("root element %v", idx.XMLName)
	}
	seen := map[string]bool{}
	for _, sm := range idx.Sitemaps {
		resp, body := get(t, inst, sm.Loc)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", sm.Loc, resp.StatusCode)
		}
		var set urlset
		if err := xml.Unmarshal(body, &set); err != nil {
			t.Fatalf("%s: %v", sm.Loc, err)
		}
		for _, u := range set.URLs {
			if seen[u.Loc] {
				continue
			}
			seen[u.Loc] = true
			if r, _ := get(t, inst, u.Loc); r.StatusCode != 200 {
				t.Errorf("%s lists %s, which answers %d", sm.Loc, u.Loc, r.StatusCode)
			}
			if u.LastMod != "" {
				if _, err := time.Parse(time.RFC3339, u.LastMod); err != nil {
					t.Errorf("lastmod %q: %v", u.LastMod, err)
				}
			}
		}
	}
	// Every published article is in the sitemaps, the retracted one is not.
	for i := range origintest.Articles {
		a := contenttest.Article(i)
		if in := seen[inst.SiteRoot+a.Path()+"/"]; in != (a.Slug != origintest.RetractedSlug) {
			t.Errorf("%s in the sitemaps: %v", a.Slug, in)
		}
	}
	for _, path := range []string{"/", "/section/guides/", "/audience/biz/", "/countries/jp/", "/developers", "/mandates"} {
		if !seen[inst.SiteRoot+path] {
			t.Errorf("the pages sitemap lacks %s", path)
		}
	}
	// Every page the navigation of every page links is in a sitemap.
	_, home := get(t, inst, "/")
	nav := regexp.MustCompile(`(?s)<nav aria-label="Sections">(.*?)</nav>`).FindSubmatch(home)
	if nav == nil {
		t.Fatal("the home page has no section navigation")
	}
	for _, m := range regexp.MustCompile(`href="([^"]+)"`).FindAllSubmatch(nav[1], -1) {
		if !seen[inst.SiteRoot+string(m[1])] {
			t.Errorf("the navigation links %s, which no sitemap lists", m[1])
		}
	}
}

// TestSitemapSplit publishes into sitemap files of at most seven URLs and
// checks that the index lists every file, that each file stays within the
// capacity, and that the files cover every article once.
func TestSitemapSplit(t *testing.T) {
	ctx := context.Background()
	st := store.New(redistest.New(t).Client())
	const capacity, articles = 7, 60
	pub := &store.Publisher{Store: st, SiteRoot: "https://iw.test", Now: time.Now, SitemapURLs: capacity}
	if err := pub.SyncCorpus(ctx, contenttest.Corpus(articles), nil); err != nil {
		t.Fatal(err)
	}
	s := &site.Site{Store: st, SiteRoot: "https://iw.test"}
	resp, err := s.SitemapIndex(httptest.NewRequest("GET", "/sitemap-index.xml", nil))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Locs []string `xml:"sitemap>loc"`
	}
	if err := xml.Unmarshal(resp.Body, &idx); err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, loc := range idx.Locs {
		if strings.Contains(loc, "/sitemaps/articles-") {
			files++
			if want := fmt.Sprintf("https://iw.test/sitemaps/articles-%d.xml", files); loc != want {
				t.Errorf("index entry %q, want %q", loc, want)
			}
		}
	}
	if files < (articles+capacity-1)/capacity {
		t.Fatalf("the index lists %d article files for %d articles of at most %d", files, articles, capacity)
	}
	all := map[string]bool{}
	for n := 1; n <= files+1; n++ {
		req := httptest.NewRequest("GET", "/", nil)
		req.SetPathValue("file", fmt.Sprintf("articles-%d.xml", n))
		resp, err := s.Sitemap(req)
		if n > files {
			if err == nil {
				t.Fatalf("articles-%d.xml exists past the end", n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var set urlset
		if err := xml.Unmarshal(resp.Body, &set); err != nil {
			t.Fatal(err)
		}
		if len(set.URLs) > capacity {
			t.Errorf("articles-%d.xml has %d URLs", n, len(set.URLs))
		}
		if want := store.TagSitemapFile(int64(n)); !slices.Equal(resp.SurrogateKeys, []string{want}) {
			t.Errorf("articles-%d.xml is tagged %v, want only %q", n, resp.SurrogateKeys, want)
		}
		for _, u := range set.URLs {
			if all[u.Loc] {
				t.Errorf("%s is in two sitemaps", u.Loc)
			}
			all[u.Loc] = true
		}
	}
	if len(all) != articles {
		t.Errorf("the sitemaps hold %d articles, want %d", len(all), articles)
	}
}

// TestPublishAndRetractNow publishes an article dated now: it appears in the
// news sitemap and the feeds; retracted, it leaves both and its page is 410.
func TestPublishAndRetractNow(t *testing.T) {
	inst := origintest.Start(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	a := contenttest.Article(0)
	a.Slug, a.Title, a.PublishedAt, a.Countries = "breaking-news-now", "Breaking: a mandate moves", now, []string{"pl"}
	// Warm the caches so the test also shows that publishing purges them.
	for _, p := range []string{"/news-sitemap.xml", "/feeds/all.xml", "/feeds/country/pl.json", "/sitemaps/articles-1.xml", a.Path() + "/"} {
		get(t, inst, p)
	}
	if _, err := inst.Publisher.SyncArticle(ctx, a); err != nil {
		t.Fatal(err)
	}
	page := inst.SiteRoot + a.Path() + "/"
	in := func(path string) (bool, error) {
		resp, body := get(t, inst, path)
		if resp.StatusCode != 200 {
			return false, fmt.Errorf("%s answered %d", path, resp.StatusCode)
		}
		return strings.Contains(string(body), page), nil
	}
	check := func(want bool) func() error {
		return func() error {
			for _, p := range []string{"/news-sitemap.xml", "/feeds/all.xml", "/feeds/all.json", "/feeds/country/pl.json", "/feeds/section/mandates.xml", "/sitemaps/articles-1.xml"} {
				got, err := in(p)
				if err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("%s lists the article: %v, want %v", p, got, want)
				}
			}
			return nil
		}
	}
	eventually(t, "the published article appears", check(true))
	_, body := get(t, inst, "/news-sitemap.xml")
	var set urlset
	if err := xml.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	for _, u := range set.URLs {
		if u.Loc == page && (u.News == nil || u.News.Title != a.Title || u.News.Name != "Invoicewire" || u.News.Language != "en" || u.News.Date != now.Format(time.RFC3339)) {
			t.Errorf("news entry %+v", u.News)
		}
	}
	if resp, _ := get(t, inst, page); resp.StatusCode != 200 {
		t.Fatalf("the page answers %d", resp.StatusCode)
	}

	if _, err := inst.Publisher.Retract(ctx, a.Slug, "Published in error."); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the retracted article disappears", check(false))
	eventually(t, "the page answers 410", func() error {
		resp, body := get(t, inst, page)
		if resp.StatusCode != 410 || !strings.Contains(string(body), "Published in error.") {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		return nil
	})
}

// TestNewsSitemapWindow pins the two-day window with the site's clock.
func TestNewsSitemapWindow(t *testing.T) {
	inst := origintest.Start(t)
	testCases := []struct {
		desc string
		now  time.Time
		want int
	}{
		{desc: "right after the newest article", now: contenttest.Base.Add(time.Minute), want: 2},
		{desc: "a day later", now: contenttest.Base.Add(24 * time.Hour), want: 2},
		{desc: "three days later", now: contenttest.Base.Add(72 * time.Hour), want: 0},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			s := &site.Site{Store: inst.Store, SiteRoot: inst.SiteRoot, Now: func() time.Time { return tc.now }}
			resp, err := s.NewsSitemap(httptest.NewRequest("GET", "/news-sitemap.xml", nil))
			if err != nil {
				t.Fatal(err)
			}
			var set urlset
			if err := xml.Unmarshal(resp.Body, &set); err != nil {
				t.Fatal(err)
			}
			// Articles 0 and 1 are a day apart, so within two days of
			// Base+1 day both count, and nothing older than two days.
			if len(set.URLs) > tc.want || (tc.want == 0 && len(set.URLs) != 0) {
				t.Errorf("%d entries, want at most %d", len(set.URLs), tc.want)
			}
			for _, u := range set.URLs {
				d, _ := time.Parse(time.RFC3339, u.News.Date)
				if tc.now.Sub(d) > site.NewsWindow {
					t.Errorf("%s is older than two days", u.Loc)
				}
			}
		})
	}
}

// TestNewsSitemapAgesOut checks that an article leaves the origin's cached
// news sitemap when it ages out of the two-day window, although no content
// change purges the cache.
func TestNewsSitemapAgesOut(t *testing.T) {
	var clock atomic.Int64
	setClock := func(at time.Time) { clock.Store(at.UnixNano()) }
	setClock(contenttest.Base.Add(time.Minute))
	inst := origintest.Start(t, func(c *origin.Config) {
		c.Now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	})
	entries := func() int {
		t.Helper()
		resp, body := get(t, inst, "/news-sitemap.xml")
		var set urlset
		if err := xml.Unmarshal(body, &set); resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET /news-sitemap.xml: %d %v", resp.StatusCode, err)
		}
		return len(set.URLs)
	}
	// Articles 0 and 1 are a day apart: both are in the window now, and
	// the second answer comes from the cache.
	for range 2 {
		if n := entries(); n != 2 {
			t.Fatalf("at Base+1m: %d entries, want 2", n)
		}
	}
	// Article 1 turned two days old at Base+24h.
	setClock(contenttest.Base.Add(30 * time.Hour))
	if n := entries(); n != 1 {
		t.Errorf("at Base+30h: %d entries, want 1 (the cached sitemap outlived its window)", n)
	}
}

// TestPageHeaders checks the security and cache headers of pages.
func TestPageHeaders(t *testing.T) {
	inst := origintest.Start(t)
	a := contenttest.Article(0)
	for _, path := range []string{"/", a.Path() + "/", "/section/network/", "/countries/fr/", "/developers"} {
		t.Run(path, func(t *testing.T) {
			resp, body := get(t, inst, path)
			h := resp.Header
			if resp.StatusCode != 200 || h.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("%d %s", resp.StatusCode, h.Get("Content-Type"))
			}
			csp := h.Get("Content-Security-Policy")
			for _, d := range []string{"default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
				if !strings.Contains(csp, d) {
					t.Errorf("CSP %q lacks %q", csp, d)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
				t.Errorf("CSP %q allows scripts", csp)
			}
			for k, want := range map[string]string{
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": "strict-origin-when-cross-origin",
				"Cache-Control":  "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400",
				"Content-Signal": site.ContentSignal,
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s %q, want %q", k, got, want)
				}
			}
			if h.Get("ETag") == "" || h.Get("Surrogate-Key") == "" {
				t.Errorf("ETag %q, Surrogate-Key %q", h.Get("ETag"), h.Get("Surrogate-Key"))
			}
			if strings.Contains(string(body), "<script>") || strings.Contains(string(body), "<script src") {
				t.Error("the page has a script")
			}
		})
	}
	t.Run("article page", func(t *testing.T) {
		resp, body := get(t, inst, a.Path()+"/")
		if v := resp.Header.Get("Vary"); v != "Accept" {
			t.Errorf("Vary %q, want Accept (docs/decisions.md, markdown twin)", v)
		}
		if !slices.Contains(strings.Fields(resp.Header.Get("Surrogate-Key")), store.TagArticle(a.Slug)) {
			t.Errorf("Surrogate-Key %q lacks article:%s", resp.Header.Get("Surrogate-Key"), a.Slug)
		}
		html := string(body)
		for _, want := range []string{
			`<link rel="canonical" href="` + inst.SiteRoot + a.Path() + `/">`,
			`<link rel="alternate" type="text/markdown" href="` + inst.SiteRoot + a.Path() + `.md"`,
			`<meta property="og:title" content="` + a.Title + `">`,
			`<meta property="og:type" content="article">`,
			`<meta name="twitter:card" content="summary">`,
			`<script type="application/ld+json">`,
			`<time datetime="2026-11-20T09:00:00Z">20 November 2026</time>`,
			a.Dek, "OpenPeppol AISBL", "Body of synthetic article 0.",
		} {
			if !strings.Contains(html, want) {
				t.Errorf("the page lacks %s", want)
			}
		}
		start := strings.Index(html, `<script type="application/ld+json">`) + len(`<script type="application/ld+json">`)
		end := strings.Index(html[start:], "</script>")
		var ld map[string]any
		if err := json.Unmarshal([]byte(html[start:start+end]), &ld); err != nil {
			t.Fatalf("JSON-LD: %v", err)
		}
		if ld["@type"] != "NewsArticle" || ld["headline"] != a.Title || ld["datePublished"] != "2026-11-20T09:00:00Z" || ld["url"] != inst.SiteRoot+a.Path()+"/" {
			t.Errorf("JSON-LD %v", ld)
		}
	})
	// Only the URL of the current version is immutable: an address
	// without it (the bare one, an old version's) must let a new file in.
	for _, tc := range []struct{ desc, path, want string }{
		{desc: "the current version is cached for a year", path: "/assets/site.css?v=" + site.AssetsVersion, want: site.AssetCacheControl},
		{desc: "the icon's current version too", path: "/assets/icon.svg?v=" + site.AssetsVersion, want: site.AssetCacheControl},
		{desc: "without a version, a day", path: "/assets/site.css", want: site.FaviconCacheControl},
		{desc: "an old version, a day", path: "/assets/icon.svg?v=old", want: site.FaviconCacheControl},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := get(t, inst, tc.path)
			if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != tc.want || len(body) == 0 {
				t.Errorf("%d, Cache-Control %q; want 200, %q", resp.StatusCode, resp.Header.Get("Cache-Control"), tc.want)
			}
		})
	}
}

// TestCorrectionShowsOnThePage corrects an article and finds the note on
// its page once the change has purged the cached page.
func TestCorrectionShowsOnThePage(t *testing.T) {
	inst := origintest.Start(t)
	a := contenttest.Article(2)
	get(t, inst, a.Path()+"/") // cached before the change
	when := contenttest.Base.Add(3 * time.Hour)
	a.Corrections = []content.Correction{{Date: when, Text: "An earlier version named the wrong authority."}}
	a.UpdatedAt = &when
	if _, err := inst.Publisher.SyncArticle(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the correction note appears", func() error {
		_, body := get(t, inst, a.Path()+"/")
		if !strings.Contains(string(body), "An earlier version named the wrong authority.") || !strings.Contains(string(body), "updated <time") {
			return fmt.Errorf("no correction on the page")
		}
		return nil
	})
}

// TestMovedArticleRedirects moves a published article to another month (its
// file moved, its published_at changed): every address it had answers a 301
// to the one it has now, in one hop with the query kept, and a retraction
// makes the old addresses 404 again while the new one answers 410
// (docs/decisions.md, "Site pages at the other form of their address").
func TestMovedArticleRedirects(t *testing.T) {
	inst := origintest.Start(t)
	ctx := context.Background()
	a := contenttest.Article(4)
	before := a.Path()
	get(t, inst, before+"/") // cached before the move: the move must purge it
	a.PublishedAt = a.PublishedAt.AddDate(0, -1, 0)
	after := a.Path()
	if after == before {
		t.Fatalf("the article stayed at %s", before)
	}
	if _, err := inst.Publisher.SyncArticle(ctx, a); err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	answer := func(path string) (int, string, error) {
		resp, err := noFollow.Get(inst.SiteRoot + path)
		if err != nil {
			return 0, "", err
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location"), nil
	}
	other := "/1999/01/" + a.Slug // a month it never was in
	testCases := []struct {
		desc, path string
		status     int
		location   string // relative to the site root, "" for none
	}{
		{desc: "the page's old address", path: before + "/", status: 301, location: after + "/"},
		{desc: "the twin's old address", path: before + ".md", status: 301, location: after + ".md"},
		{desc: "the old address without its slash: one hop to the page", path: before, status: 301, location: after + "/"},
		{desc: "the query is kept", path: before + "/?utm_source=feed", status: 301, location: after + "/?utm_source=feed"},
		{desc: "any other month, as the slug is the identity", path: other + "/", status: 301, location: after + "/"},
		{desc: "the twin under any other month", path: other + ".md", status: 301, location: after + ".md"},
		{desc: "the new page", path: after + "/", status: 200},
		{desc: "the new twin", path: after + ".md", status: 200},
		{desc: "an unknown slug under the old month", path: "/" + before[1:9] + "no-such-article/", status: 404},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			eventually(t, tc.path, func() error {
				status, loc, err := answer(tc.path)
				if err != nil {
					return err
				}
				want := ""
				if tc.location != "" {
					want = inst.SiteRoot + tc.location
				}
				if status != tc.status || loc != want {
					return fmt.Errorf("%d, Location %q; want %d, %q", status, loc, tc.status, want)
				}
				return nil
			})
		})
	}

	// A retracted article is 410 at its own address only.
	if _, err := inst.Publisher.Retract(ctx, a.Slug, "Published in error."); err != nil {
		t.Fatal(err)
	}
	for path, status := range map[string]int{before + "/": 404, before + ".md": 404, before: 404, after + "/": 410, after + ".md": 410} {
		eventually(t, "retracted: "+path, func() error {
			if got, loc, err := answer(path); err != nil || got != status {
				return fmt.Errorf("%d (Location %q, %v); want %d", got, loc, err, status)
			}
			return nil
		})
	}
}

// TestBadInput sends malformed and unknown page addresses: every answer is
// the JSON error of docs/decisions.md (JSON errors) with the right status, never HTML, never a 500.
func TestBadInput(t *testing.T) {
	inst := origintest.Start(t)
	long := strings.Repeat("a", content.MaxSlugLength+1)
	testCases := []struct {
		desc string
		path string // sent as the raw request target
		want int
	}{
		{desc: "unknown page", path: "/about-us", want: 404},
		{desc: "month 13", path: "/2026/13/x/", want: 404},
		{desc: "month 00", path: "/2026/00/article-00000/", want: 404},
		{desc: "year not a number", path: "/20x6/11/article-00000/", want: 404},
		{desc: "wrong year for a retracted article", path: "/2025/11/" + origintest.RetractedSlug + "/", want: 404},
		{desc: "dot segments to no page", path: "/../about-us/", want: 404},
		{desc: "encoded dot segments", path: "/%2e%2e/%2e%2e/etc/passwd", want: 404},
		{desc: "empty segments", path: "/2026//article-00000/", want: 404},
		{desc: "overlong slug", path: "/2026/11/" + long + "/", want: 404},
		{desc: "overlong markdown slug", path: "/2026/11/" + long + ".md", want: 404},
		{desc: "invalid UTF-8", path: "/2026/11/%ff%fe/", want: 404},
		{desc: "NUL bytes", path: "/2026/11/a%00b/", want: 404},
		{desc: "uppercase slug", path: "/2026/11/ARTICLE-00000/", want: 404},
		{desc: "unicode slug", path: "/2026/11/%C3%A4rticle/", want: 404},
		{desc: "percent-encoded slash", path: "/2026/11/a%2Fb/", want: 404},
		{desc: "page 0", path: "/?page=0", want: 400},
		{desc: "page -1", path: "/?page=-1", want: 400},
		{desc: "page not a number", path: "/?page=abc", want: 400},
		{desc: "page with leading zero", path: "/?page=01", want: 400},
		{desc: "page given twice", path: "/?page=1&page=2", want: 400},
		{desc: "page huge", path: "/?page=99999999999999999999", want: 400},
		{desc: "page past the end", path: "/?page=500", want: 404},
		{desc: "unknown section", path: "/section/sport/", want: 404},
		{desc: "uppercase section", path: "/section/MANDATES/", want: 404},
		{desc: "country code with NULs", path: "/countries/%00%00/", want: 400},
		{desc: "country code one letter", path: "/countries/d/", want: 400},
		{desc: "untracked country", path: "/countries/zz/", want: 404},
		{desc: "newsletter week 99", path: "/newsletter/2026-w99/", want: 404},
		{desc: "newsletter garbage", path: "/newsletter/%3Cscript%3E/", want: 404},
		{desc: "sitemap 0", path: "/sitemaps/articles-0.xml", want: 404},
		{desc: "sitemap with a leading zero", path: "/sitemaps/articles-01.xml", want: 404},
		{desc: "sitemap garbage", path: "/sitemaps/articles-x.xml", want: 404},
		{desc: "below the developers page", path: "/developers/x", want: 404},
		{desc: "unknown asset", path: "/assets/../../etc/passwd", want: 404},
		{desc: "unknown well-known", path: "/.well-known/security.txt", want: 404},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			req, err := http.NewRequest("GET", inst.SiteRoot+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			// Send the target exactly as written, bypassing URL cleaning.
			req.URL.Opaque = strings.SplitN(tc.path, "?", 2)[0]
			if _, q, ok := strings.Cut(tc.path, "?"); ok {
				req.URL.RawQuery = q
			}
			resp, err := inst.Server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Errorf("not the docs/decisions.md (JSON errors) error shape: %s", body)
			}
		})
	}
}

// TestParameterMessages: a page's 400 says what is wrong with the
// parameter sent, in the API's words: a parameter given twice is that,
// whatever its values, and a question that is not UTF-8 is not reported
// as too long.
func TestParameterMessages(t *testing.T) {
	inst := origintest.Start(t)
	testCases := []struct {
		path, message string
	}{
		{"/?page=2&page=3", "Parameter page is given more than once."},
		{"/section/network/?page=1&page=1", "Parameter page is given more than once."},
		{"/?page=abc", `page is not a whole number in plain digits: "abc".`},
		{"/?page=0", "page 0 is out of range."},
		{"/?page=01", `page "01" starts with a zero.`},
		{"/?page=99999999999999999999", "page 99999999999999999999 is out of range."},
		{"/mandates?region=eu&region=eu", "Parameter region is given more than once."},
		{"/mandates.md?obligation=report&obligation=issue", "Parameter obligation is given more than once."},
		{"/mandates?region=mars", `Unknown region "mars".`},
		{"/calendar/mandates.ics?country=de&country=de", "Parameter country is given more than once."},
		{"/calendar/mandates.ics?country=DE", `country must be a two-letter lowercase ISO 3166-1 alpha-2 code, got "DE".`},
		{"/search?q=caf%E9", "q is not valid UTF-8."},
		{"/search?q=a&q=b", "Parameter q is given more than once."},
		{"/api/v1/articles?limit=1&limit=2", "Parameter limit is given more than once."},
	}
	for _, tc := range testCases {
		resp, body := get(t, inst, tc.path)
		var e struct {
			Error struct{ Code, Message, Hint string } `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 400 || e.Error.Code != "bad_request" {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
			continue
		}
		if e.Error.Message != tc.message || e.Error.Hint == "" {
			t.Errorf("%s: message %q (hint %q), want %q", tc.path, e.Error.Message, e.Error.Hint, tc.message)
		}
	}
}

// TestFeedTitlesAreThePagesHeadings: a section's or audience's feed is
// titled as its page is headed ("Specifications", "For accounts
// payable"), in the catalog and in the feed itself, never by the filter
// value.
func TestFeedTitlesAreThePagesHeadings(t *testing.T) {
	inst := origintest.Start(t)
	_, body := get(t, inst, "/api/v1/feeds")
	var cat catalog
	if err := json.Unmarshal(body, &cat); err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, f := range cat.Items {
		titles[strings.TrimPrefix(f.URL, inst.SiteRoot)] = f.Title
	}
	h1 := regexp.MustCompile(`<h1>([^<]+)</h1>`)
	for _, name := range append(prefixed("section/", content.Sections), prefixed("audience/", content.Audiences)...) {
		_, page := get(t, inst, "/"+name+"/")
		m := h1.FindSubmatch(page)
		if m == nil {
			t.Fatalf("/%s/ has no heading", name)
		}
		want := "Invoicewire: " + html.UnescapeString(string(m[1]))
		if got := titles["/feeds/"+name+".xml"]; got != want+" (RSS)" {
			t.Errorf("the catalog titles /feeds/%s.xml %q, want %q", name, got, want+" (RSS)")
		}
		_, feed := get(t, inst, "/feeds/"+name+".json")
		var f struct{ Title string }
		if err := json.Unmarshal(feed, &f); err != nil || f.Title != want {
			t.Errorf("/feeds/%s.json is titled %q, want %q (%v)", name, f.Title, want, err)
		}
	}
}

func prefixed(prefix string, values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = prefix + v
	}
	return out
}

// TestFavicon reads /favicon.ico as an ICO file: PNG images of 16, 32 and
// 48 pixels, each the site's icon (the brand blue, transparent corners).
func TestFavicon(t *testing.T) {
	inst := origintest.Start(t)
	resp, body := get(t, inst, "/favicon.ico")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != site.FaviconType || resp.Header.Get("Cache-Control") != site.FaviconCacheControl {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
	if len(body) < 6 || binary.LittleEndian.Uint16(body[0:]) != 0 || binary.LittleEndian.Uint16(body[2:]) != 1 {
		t.Fatalf("not an ICO file: % x", body[:min(len(body), 6)])
	}
	n := int(binary.LittleEndian.Uint16(body[4:]))
	var sizes []int
	for i := range n {
		e := body[6+16*i:]
		size, length, offset := int(e[0]), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
		if int(offset)+int(length) > len(body) {
			t.Fatalf("image %d lies past the file's end", i)
		}
		img, err := png.Decode(bytes.NewReader(body[offset : offset+length]))
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		if b := img.Bounds(); b.Dx() != size || b.Dy() != size {
			t.Errorf("image %d is %v, its entry says %d", i, b, size)
		}
		if _, _, _, a := img.At(0, 0).RGBA(); a>>8 > 8 {
			t.Errorf("the %dpx icon's corner is not transparent (alpha %d)", size, a>>8)
		}
		if r, g, b, _ := img.At(1+size/8, size/2).RGBA(); r>>8 != 0x0b || g>>8 != 0x5c || b>>8 != 0xad {
			t.Errorf("the %dpx icon's edge is #%02x%02x%02x, not the brand's #0b5cad", size, r>>8, g>>8, b>>8)
		}
		sizes = append(sizes, size)
	}
	if !slices.Equal(sizes, []int{16, 32, 48}) {
		t.Errorf("sizes %v", sizes)
	}
}

// TestOpenGraphOnEveryPage: every kind of HTML page describes itself to
// link previews (ogp.me) with the same required properties, its og:url
// its canonical address, and no og:image unless it has a picture of its
// own.
func TestOpenGraphOnEveryPage(t *testing.T) {
	inst := origintest.Start(t)
	week := content.ISOWeek(contenttest.Base)
	if _, err := inst.Publisher.SendNewsletter(context.Background(), week, nil); err != nil {
		t.Fatal(err)
	}
	a := contenttest.Article(0)
	prop := regexp.MustCompile(`<meta property="(og:[a-z_]+)" content="([^"]*)">`)
	canonical := regexp.MustCompile(`<link rel="canonical" href="([^"]+)">`)
	for _, tc := range []struct{ path, typ, title string }{
		{"/", "website", "Invoicewire: e-invoicing news"},
		{"/?page=2", "website", "Invoicewire: e-invoicing news (page 2)"},
		{"/section/specs/", "website", "Specifications"},
		{"/audience/ap/", "website", "For accounts payable"},
		{"/countries/de/", "website", "Germany"},
		{a.Path() + "/", "article", a.Title},
		{"/newsletter/" + week + "/", "website", ""},
		{"/mandates", "website", "E-invoicing mandate timeline"},
		{"/search", "website", "Search"},
		{"/search?q=peppol", "website", "peppol · Search"},
		{"/developers", "website", "Developers"},
	} {
		resp, body := get(t, inst, tc.path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", tc.path, resp.StatusCode)
		}
		og := map[string]string{}
		for _, m := range prop.FindAllStringSubmatch(string(body), -1) {
			if _, dup := og[m[1]]; dup {
				t.Errorf("%s: %s twice", tc.path, m[1])
			}
			og[m[1]] = html.UnescapeString(m[2])
		}
		c := canonical.FindStringSubmatch(string(body))
		if c == nil || og["og:url"] != html.UnescapeString(c[1]) {
			t.Errorf("%s: og:url %q, canonical %v", tc.path, og["og:url"], c)
		}
		if og["og:type"] != tc.typ || og["og:site_name"] != "Invoicewire" || og["og:description"] == "" ||
			og["og:title"] == "" || (tc.title != "" && og["og:title"] != tc.title) {
			t.Errorf("%s: %v", tc.path, og)
		}
		if _, ok := og["og:image"]; ok {
			t.Errorf("%s: og:image %q, but the page has no picture", tc.path, og["og:image"])
		}
	}
}

// caughtUp waits until the clock has passed the last change st recorded
// under keys: a burst of changes dates them ahead of the clock
// (store.ChangedAt), and a Last-Modified is sent, and a lastmod shown,
// only once it is no longer in the future.
func caughtUp(t *testing.T, st *store.Store, keys ...string) time.Time {
	t.Helper()
	at, err := st.ChangedAt(context.Background(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(at.Add(time.Second)))
	return at
}

// TestSitemapIndexLastmod: each file of the sitemap index carries the time
// it last changed, the last change under its keys, and the file itself
// says the same in Last-Modified; a change moves the lastmod of the files
// it changed and of no other.
func TestSitemapIndexLastmod(t *testing.T) {
	ctx := context.Background()
	st := store.New(redistest.New(t).Client())
	pub := &store.Publisher{Store: st, SiteRoot: "https://iw.test", Now: time.Now, SitemapURLs: 7}
	corpus := contenttest.Corpus(40)
	if err := pub.SyncCorpus(ctx, corpus, nil); err != nil {
		t.Fatal(err)
	}
	s := &site.Site{Store: st, SiteRoot: "https://iw.test"}
	pagesKeys := []string{store.TagSitemaps, store.TagCountries, store.TagNewsletter}
	// fileKeys are the keys of each file of the index, by path.
	fileKeys := map[string][]string{"/sitemaps/pages.xml": pagesKeys}
	index := func() map[string]time.Time {
		t.Helper()
		resp, err := s.SitemapIndex(httptest.NewRequest("GET", "/sitemap-index.xml", nil))
		if err != nil {
			t.Fatal(err)
		}
		var idx struct {
			Sitemaps []struct {
				Loc     string `xml:"loc"`
				LastMod string `xml:"lastmod"`
			} `xml:"sitemap"`
		}
		if err := xml.Unmarshal(resp.Body, &idx); err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, sm := range idx.Sitemaps {
			path := strings.TrimPrefix(sm.Loc, "https://iw.test")
			if path == "/news-sitemap.xml" {
				if sm.LastMod != "" {
					t.Errorf("the news sitemap has lastmod %s, though entries leave it undated", sm.LastMod)
				}
				continue
			}
			lm, err := time.Parse(time.RFC3339, sm.LastMod)
			if err != nil {
				t.Fatalf("%s: lastmod %q: %v", path, sm.LastMod, err)
			}
			if n, ok := strings.CutPrefix(path, "/sitemaps/articles-"); ok {
				num, _ := strconv.ParseInt(strings.TrimSuffix(n, ".xml"), 10, 64)
				fileKeys[path] = []string{store.TagSitemapFile(num)}
			}
			want, err := st.ChangedAt(ctx, fileKeys[path]...)
			if err != nil || !lm.Equal(want) {
				t.Errorf("%s: lastmod %v, its keys %v last changed %v (%v)", path, lm, fileKeys[path], want, err)
			}
			// The file itself says the same in Last-Modified.
			req := httptest.NewRequest("GET", path, nil)
			req.SetPathValue("file", strings.TrimPrefix(path, "/sitemaps/"))
			if file, err := s.Sitemap(req); err != nil || !file.LastModified.Equal(lm) {
				t.Errorf("%s: Last-Modified %v, the index's lastmod %v (%v)", path, file.LastModified, lm, err)
			}
			out[path] = lm
			for _, k := range fileKeys[path] {
				if !slices.Contains(resp.SurrogateKeys, k) {
					t.Errorf("the index is not tagged %s, so a change to %s would leave it as it is: %v", k, path, resp.SurrogateKeys)
				}
			}
		}
		return out
	}
	// fileOf is the article file that lists a.
	fileOf := func(a *content.Article) string {
		t.Helper()
		for path := range fileKeys {
			if !strings.HasPrefix(path, "/sitemaps/articles-") {
				continue
			}
			req := httptest.NewRequest("GET", "/", nil)
			req.SetPathValue("file", strings.TrimPrefix(path, "/sitemaps/"))
			resp, err := s.Sitemap(req)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(resp.Body), a.Path()+"/") {
				return path
			}
		}
		t.Fatalf("%s is in no file", a.Slug)
		return ""
	}
	edited, retracted := corpus.Articles[11], corpus.Articles[30]
	caughtUp(t, st, store.TagSitemaps)
	before := index()
	if len(before) < 4 {
		t.Fatalf("%d files: %v", len(before), before)
	}
	editedFile, retractedFile := fileOf(edited), fileOf(retracted)
	if editedFile == retractedFile {
		t.Fatalf("both articles are in %s", editedFile)
	}
	steps := []struct {
		desc   string
		change func() error
		moved  []string
	}{
		{
			desc: "an edit of an article's date moves its file, no other",
			change: func() error {
				changed := *edited
				updated := time.Now().UTC().Truncate(time.Second)
				changed.UpdatedAt = &updated
				_, err := pub.SyncArticle(ctx, &changed)
				return err
			},
			moved: []string{editedFile},
		},
		{
			desc: "a retraction moves the file it leaves, no other",
			change: func() error {
				_, err := pub.Retract(ctx, retracted.Slug, "Test.")
				return err
			},
			moved: []string{retractedFile},
		},
		{
			desc: "a newsletter moves the pages sitemap, which lists its issue",
			change: func() error {
				_, err := pub.SendNewsletter(ctx, "2026-w47", nil)
				return err
			},
			moved: []string{"/sitemaps/pages.xml"},
		},
	}
	for _, step := range steps {
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.desc, err)
		}
		var all []string
		for _, keys := range fileKeys {
			all = append(all, keys...)
		}
		caughtUp(t, st, all...)
		after := index()
		for path, lm := range after {
			if moved := lm.After(before[path]); moved != slices.Contains(step.moved, path) {
				t.Errorf("%s: %s went from %v to %v", step.desc, path, before[path], lm)
			}
		}
		before = after
	}
}

var lastBuildDate = regexp.MustCompile(`<lastBuildDate>([^<]*)</lastBuildDate>`)

// TestFeedLastModified: a feed's Last-Modified is the last change under
// its keys and answers If-Modified-Since; each change to the feed moves
// it, also those that add no newer item (an older article retracted, the
// newest one retracted, whose date going back would tell a reader
// revalidating by date that a copy listing it is current, a silent edit),
// so the date of the copy before the change is answered in full. An RSS
// feed's lastBuildDate is the same instant.
func TestFeedLastModified(t *testing.T) {
	inst := origintest.Start(t)
	ctx := context.Background()
	articleKeys := []string{store.TagFeeds, store.TagCountries}
	feeds := map[string][]string{
		"/feeds/all.xml":             articleKeys,
		"/feeds/all.json":            articleKeys,
		"/feeds/section/network.xml": articleKeys,
		"/feeds/country/de.json":     articleKeys,
		"/feeds/newsletter.xml":      append(slices.Clone(articleKeys), store.TagNewsletter),
	}
	// dates reads every feed once its date is due and the origin has
	// dropped the copies from before the last change: each Last-Modified
	// is the last change under the feed's keys, and answers
	// If-Modified-Since with 304, a second earlier in full.
	dates := func(desc string) map[string]time.Time {
		t.Helper()
		out := map[string]time.Time{}
		for path, keys := range feeds {
			want := caughtUp(t, inst.Store, keys...)
			var body []byte
			eventually(t, desc+": "+path, func() error {
				var resp *http.Response
				resp, body = get(t, inst, path)
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				lm, err := http.ParseTime(resp.Header.Get("Last-Modified"))
				if err != nil || !lm.Equal(want) {
					return fmt.Errorf("Last-Modified %q, the last change under %v is %v", resp.Header.Get("Last-Modified"), keys, want)
				}
				out[path] = lm
				return nil
			})
			// RSS says the same in lastBuildDate, "the last time the content
			// of the channel changed", not its newest item's date.
			if strings.HasSuffix(path, ".xml") {
				var built string
				if m := lastBuildDate.FindSubmatch(body); m != nil {
					built = string(m[1])
				}
				if at, err := time.Parse(time.RFC1123Z, built); err != nil || !at.Equal(out[path]) {
					t.Errorf("%s: %s: lastBuildDate %q, Last-Modified %v", desc, path, built, out[path])
				}
			}
			if r, _ := get(t, inst, path, "If-Modified-Since", out[path].Format(http.TimeFormat)); r.StatusCode != http.StatusNotModified || r.Header.Get("Last-Modified") == "" {
				t.Errorf("%s: %s: If-Modified-Since its own date answered %d, Last-Modified %q", desc, path, r.StatusCode, r.Header.Get("Last-Modified"))
			}
			if r, _ := get(t, inst, path, "If-Modified-Since", out[path].Add(-time.Second).Format(http.TimeFormat)); r.StatusCode != 200 {
				t.Errorf("%s: %s: If-Modified-Since a second earlier answered %d", desc, path, r.StatusCode)
			}
		}
		return out
	}
	older, newest, edited := contenttest.Article(7), contenttest.Article(0), *contenttest.Article(5)
	edited.Body += "A silent fix.\n"
	steps := []struct {
		desc   string
		change func() (store.Outcome, error)
		gone   string // a path no feed lists after the change
	}{
		{
			desc:   "an older article retracted",
			change: func() (store.Outcome, error) { return inst.Publisher.Retract(ctx, older.Slug, "Test.") },
			gone:   older.Path() + "/",
		},
		{
			desc:   "the newest article retracted",
			change: func() (store.Outcome, error) { return inst.Publisher.Retract(ctx, newest.Slug, "Test.") },
			gone:   newest.Path() + "/",
		},
		{
			desc:   "an article edited without a new date",
			change: func() (store.Outcome, error) { return inst.Publisher.SyncArticle(ctx, &edited) },
		},
		{
			desc: "a newsletter sent",
			change: func() (store.Outcome, error) {
				return inst.Publisher.SendNewsletter(ctx, "2026-w46", nil)
			},
		},
	}
	before := dates("as published")
	for _, step := range steps {
		if o, err := step.change(); err != nil || !o.Changed {
			t.Fatalf("%s: %+v %v", step.desc, o, err)
		}
		after := dates(step.desc)
		for path, lm := range after {
			if !lm.After(before[path]) {
				t.Errorf("%s: %s: Last-Modified %v, not after %v", step.desc, path, lm, before[path])
			}
			resp, body := get(t, inst, path, "If-Modified-Since", before[path].Format(http.TimeFormat))
			if resp.StatusCode != 200 {
				t.Errorf("%s: %s: If-Modified-Since the date before answered %d", step.desc, path, resp.StatusCode)
			}
			if step.gone != "" && bytes.Contains(body, []byte(step.gone)) {
				t.Errorf("%s: %s still lists %s", step.desc, path, step.gone)
			}
		}
		before = after
	}
}
