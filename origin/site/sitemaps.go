package site

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Sitemap limits (sitemaps.org; Google News sitemaps).
const (
	// NewsURLs is the most news:news entries of the news sitemap.
	NewsURLs = 1000
	// NewsWindow is how far back the news sitemap reaches: Google asks for
	// articles "created in the last two days".
	NewsWindow = 48 * time.Hour
)

// XMLType is the media type of sitemaps.
const XMLType = "application/xml; charset=utf-8"

const (
	nsSitemap = "http://www.sitemaps.org/schemas/sitemap/0.9"
	nsNews    = "http://www.google.com/schemas/sitemap-news/0.9"
)

type sitemapIndex struct {
	XMLName  xml.Name     `xml:"sitemapindex"`
	NS       string       `xml:"xmlns,attr"`
	Sitemaps []sitemapRef `xml:"sitemap"`
}

type sitemapRef struct {
	Loc     string `xml:"loc"`
	LastMod string `xml:"lastmod,omitempty"`
}

type urlSet struct {
	XMLName xml.Name     `xml:"urlset"`
	NS      string       `xml:"xmlns,attr"`
	NewsNS  string       `xml:"xmlns:news,attr,omitempty"`
	URLs    []sitemapURL `xml:"url"`
}

type sitemapURL struct {
	Loc     string    `xml:"loc"`
	LastMod string    `xml:"lastmod,omitempty"`
	News    *newsItem `xml:"news:news,omitempty"`
}

type newsItem struct {
	Publication     newsPublication `xml:"news:publication"`
	PublicationDate string          `xml:"news:publication_date"`
	Title           string          `xml:"news:title"`
}

type newsPublication struct {
	Name     string `xml:"news:name"`
	Language string `xml:"news:language"`
}

func xmlResponse(v any, keys ...string) (*respond.Response, error) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("site: writing a sitemap: %w", err)
	}
	b.WriteByte('\n')
	return respond.Bytes(XMLType, b.Bytes(), keys...), nil
}

// SitemapIndex answers GET /sitemap-index.xml: the pages sitemap, every
// article sitemap file and the news sitemap, each file with the time it
// last changed as its lastmod: the last change under the keys it is
// tagged with (store.ChangeTimes), so the index is tagged with them all
// and dropped whenever one of its files is. The news sitemap has none:
// entries leave its two-day window with no change to date it.
func (s *Site) SitemapIndex(r *http.Request) (*respond.Response, error) {
	files, err := s.Store.SitemapFiles(r.Context())
	if err != nil {
		return nil, err
	}
	keys := slices.Clone(pagesSitemapKeys) // TagSitemaps among them
	for i := int64(1); i <= files; i++ {
		keys = append(keys, store.TagSitemapFile(i))
	}
	// Read after the files, unlike a feed's Last-Modified: a lastmod
	// tells a crawler to fetch a file it saw before that time, so a later
	// one costs a fetch and an earlier one would miss a change.
	times, err := s.Store.ChangeTimes(r.Context(), keys...)
	if err != nil {
		return nil, err
	}
	// A change time can run ahead of the clock after a burst of changes
	// (store.ChangedAt); a lastmod says no later than now, which the
	// change also was. The real clock, as the change times are.
	now := time.Now().UTC().Truncate(time.Second)
	lastmod := func(keys ...string) string {
		var latest time.Time
		for _, k := range keys {
			if t := times[k]; t.After(latest) {
				latest = t
			}
		}
		if latest.IsZero() {
			return ""
		}
		if latest.After(now) {
			latest = now
		}
		return latest.Format(isoLayout)
	}
	idx := sitemapIndex{NS: nsSitemap, Sitemaps: []sitemapRef{{Loc: s.SiteRoot + "/sitemaps/pages.xml", LastMod: lastmod(pagesSitemapKeys...)}}}
	for i := int64(1); i <= files; i++ {
		idx.Sitemaps = append(idx.Sitemaps, sitemapRef{Loc: s.SiteRoot + "/sitemaps/articles-" + strconv.FormatInt(i, 10) + ".xml", LastMod: lastmod(store.TagSitemapFile(i))})
	}
	idx.Sitemaps = append(idx.Sitemaps, sitemapRef{Loc: s.SiteRoot + "/news-sitemap.xml"})
	return xmlResponse(idx, keys...)
}

// Sitemap answers GET /sitemaps/pages.xml and /sitemaps/articles-<n>.xml.
// An article file lists the articles the store keeps in it (at most
// store.SitemapURLs); it is tagged with its own surrogate key, so an edit
// drops that file's cache entry and no other. Either file's Last-Modified
// is the lastmod the index gives it.
func (s *Site) Sitemap(r *http.Request) (*respond.Response, error) {
	file := r.PathValue("file")
	notFound := apierror.NotFound("No sitemap at this address.", "The sitemaps are listed at "+s.SiteRoot+"/sitemap-index.xml.")
	notFound.SurrogateKeys = []string{store.TagSitemaps}
	if file == "pages.xml" {
		return s.pagesSitemap(r)
	}
	num, ok := strings.CutPrefix(file, "articles-")
	num, ok2 := strings.CutSuffix(num, ".xml")
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || !ok2 || err != nil || n < 1 || strconv.FormatInt(n, 10) != num {
		return nil, notFound
	}
	// Last-Modified is the file's last change, the lastmod the index
	// gives it, read before the file as a feed's is (Feed).
	changed, err := s.Store.ChangedAt(r.Context(), store.TagSitemapFile(n))
	if err != nil {
		return nil, err
	}
	urls, err := s.Store.SitemapFile(r.Context(), n)
	if errors.Is(err, store.ErrNoSitemap) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	resp := respond.Bytes(XMLType, appendURLSet(nil, s.SiteRoot, urls), store.TagSitemapFile(n))
	resp.LastModified = changed
	return resp, nil
}

// appendURLSet appends the article sitemap of urls to b, byte for byte what
// xmlResponse writes for the same urlSet. A file holds up to 50,000 URLs
// (2.5 MB at a million articles), and encoding/xml's reflection took most
// of a miss's time and garbage; an edit purges the file, so the next reader
// waits for this (docs/scale.md).
func appendURLSet(b []byte, siteRoot string, urls []store.SitemapURL) []byte {
	var root bytes.Buffer
	xml.EscapeText(&root, []byte(siteRoot))
	if b == nil {
		b = make([]byte, 0, 128+len(urls)*(root.Len()+len("  <url>\n    <loc></loc>\n    <lastmod>2006-01-02T15:04:05Z</lastmod>\n  </url>\n")+120))
	}
	b = append(b, xml.Header...)
	b = append(b, `<urlset xmlns="`+nsSitemap+`">`...)
	var loc bytes.Buffer
	for _, u := range urls {
		b = append(b, "\n  <url>\n    <loc>"...)
		b = append(b, root.Bytes()...)
		if safeXMLText(u.Path) {
			b = append(b, u.Path...)
		} else {
			loc.Reset()
			xml.EscapeText(&loc, []byte(u.Path))
			b = append(b, loc.Bytes()...)
		}
		b = append(b, "/</loc>\n    <lastmod>"...)
		b = appendUTC(b, u.LastModified)
		b = append(b, "</lastmod>\n  </url>"...)
	}
	if len(urls) > 0 {
		b = append(b, '\n')
	}
	return append(b, "</urlset>\n"...)
}

// appendUTC appends t as isoLayout (RFC 3339) writes a UTC time of a year
// 0–9999, about ten times faster than time.Time.AppendFormat; other times
// take AppendFormat.
func appendUTC(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if t.Location() != time.UTC || year < 0 || year > 9999 || t.Nanosecond() != 0 {
		return t.AppendFormat(b, isoLayout)
	}
	hour, minute, sec := t.Clock()
	two := func(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
	b = two(two(b, year/100), year%100)
	b = two(append(b, '-'), int(month))
	b = two(append(b, '-'), day)
	b = two(append(b, 'T'), hour)
	b = two(append(b, ':'), minute)
	b = two(append(b, ':'), sec)
	return append(b, 'Z')
}

// safeXMLText reports whether s needs no escaping as XML character data:
// the article paths (slugs are lowercase ASCII letters, digits and hyphens).
func safeXMLText(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '&' || c == '<' || c == '>' || c == '"' || c == '\'' || c < 0x20 || c >= 0x7f:
			return false
		}
	}
	return true
}

// pagesSitemap lists the site's pages other than articles: home, sections,
// audiences, countries, newsletter issues, the mandate timeline and the
// developer portal (every page the navigation links).
func (s *Site) pagesSitemap(r *http.Request) (*respond.Response, error) {
	changed, err := s.Store.ChangedAt(r.Context(), pagesSitemapKeys...)
	if err != nil {
		return nil, err
	}
	set := urlSet{NS: nsSitemap}
	add := func(path string) { set.URLs = append(set.URLs, sitemapURL{Loc: s.SiteRoot + path}) }
	add("/")
	for _, sec := range content.Sections {
		add("/section/" + sec + "/")
	}
	for _, au := range content.Audiences {
		add("/audience/" + au + "/")
	}
	countries, err := s.Store.Countries(r.Context())
	if err != nil {
		return nil, err
	}
	for _, c := range countries {
		add("/countries/" + c.Code + "/")
	}
	issues, err := s.Store.Newsletters(r.Context(), 1000)
	if err != nil {
		return nil, err
	}
	for _, n := range issues {
		add("/newsletter/" + n.Week + "/")
	}
	add("/mandates")
	add("/developers")
	resp, err := xmlResponse(set, pagesSitemapKeys...)
	if err != nil {
		return nil, err
	}
	resp.LastModified = changed
	return resp, nil
}

// pagesSitemapKeys are the surrogate keys of the pages sitemap: what it
// lists beyond fixed pages is the countries and the newsletter issues.
var pagesSitemapKeys = []string{store.TagSitemaps, store.TagCountries, store.TagNewsletter}

// NewsSitemap answers GET /news-sitemap.xml (Google News): the articles
// first published in the last two days, newest first, at most NewsURLs. An
// empty sitemap is valid. Its cache entry is dropped by every article change
// and, at the latest, when its oldest entry leaves the window (Expires).
func (s *Site) NewsSitemap(r *http.Request) (*respond.Response, error) {
	since := s.now().Add(-NewsWindow)
	// Only the articles inside the window are read: reading NewsURLs
	// records to keep none of them cost 25 ms at 100,000 articles.
	recent, err := s.Store.ArticlesSince(r.Context(), since)
	if err != nil {
		return nil, err
	}
	p, err := s.Store.Articles(r.Context(), store.ArticleFilter{}, 0, int(min(recent, NewsURLs)), nil)
	if err != nil {
		return nil, err
	}
	set := urlSet{NS: nsSitemap, NewsNS: nsNews, URLs: []sitemapURL{}}
	for _, rec := range p.Articles {
		if rec.PublishedAt.Before(since) {
			break // newest first: the rest are older still
		}
		set.URLs = append(set.URLs, sitemapURL{
			Loc: s.SiteRoot + rec.Path() + "/",
			News: &newsItem{
				Publication:     newsPublication{Name: "Invoicewire", Language: "en"},
				PublicationDate: rec.PublishedAt.UTC().Format(isoLayout),
				Title:           rec.Title,
			},
		})
	}
	resp, err := xmlResponse(set, store.TagNewsSitemap)
	if err == nil && len(set.URLs) > 0 {
		// The oldest entry ages out at this instant, with no content
		// change to purge the cached sitemap.
		resp.Expires = p.Articles[len(set.URLs)-1].PublishedAt.Add(NewsWindow)
	}
	return resp, err
}
