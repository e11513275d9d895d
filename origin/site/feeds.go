package site

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/api"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// FeedItems is the number of items in every feed (docs/decisions.md, feeds).
const FeedItems = 50

// Media types of the feeds (docs/decisions.md, feeds).
const (
	RSSType      = "application/rss+xml; charset=utf-8"
	JSONFeedType = "application/feed+json; charset=utf-8"
)

// Feed answers every feed address of docs/decisions.md (feeds). The set of feeds is exactly the
// catalog that GET /api/v1/feeds lists: both come from api.FeedCatalog, so
// an address the catalog does not name (an unknown section, a country
// without articles) is a 404 here.
func (s *Site) Feed(r *http.Request) (*respond.Response, error) {
	ctx := r.Context()
	name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/feeds/"), ".xml"), ".json")
	keys := []string{store.TagFeeds, store.TagCountries}
	if name == "newsletter" {
		keys = append(keys, store.TagNewsletter)
	}
	// Last-Modified is when the feed last changed: the last change under
	// its keys. The newest item's date would stay put when an older item
	// is retracted or silently edited, or go back when the newest is
	// retracted, and a reader revalidating by date would be told its copy
	// is current (docs/decisions.md, "A feed's Last-Modified"). Read
	// before anything the feed shows (the catalog's titles too): read
	// after, it could date a change they miss.
	changed, err := s.Store.ChangedAt(ctx, keys...)
	if err != nil {
		return nil, err
	}
	countries, err := s.Store.Countries(ctx)
	if err != nil {
		return nil, err
	}
	codes := make([]string, len(countries))
	for i, c := range countries {
		codes[i] = c.Code
	}
	counts, err := s.Store.CountryArticleCounts(ctx, codes)
	if err != nil {
		return nil, err
	}
	catalog := api.FeedCatalog(s.SiteRoot, countries, counts)
	find := func(path string) *api.Feed {
		for i := range catalog {
			if catalog[i].URL == s.SiteRoot+path {
				return &catalog[i]
			}
		}
		return nil
	}
	self := s.SiteRoot + r.URL.Path
	entry := find(r.URL.Path)
	if lower := strings.ToLower(r.URL.Path); entry == nil && lower != r.URL.Path && len(lower) == len(r.URL.Path) && strings.HasPrefix(lower, "/feeds/country/") && find(lower) != nil {
		// A country's code is lowercase, though the API's /countries/DE
		// answers as /countries/de (docs/decisions.md, "Identifiers and
		// links"); a feed has one address, which readers keep as its
		// identity, so the code in capitals is sent there. Only ASCII
		// capitals: the Kelvin sign (U+212A) lowers to "k" as well.
		return respond.Redirect(r, s.SiteRoot, lower, keys...), nil
	}
	if entry == nil {
		e := apierror.NotFound("No feed at this address.", "The feeds are listed at "+s.SiteRoot+"/api/v1/feeds.")
		e.SurrogateKeys = keys
		return nil, e
	}
	title := strings.TrimSuffix(strings.TrimSuffix(entry.Title, " (RSS)"), " (JSON Feed)")

	var ch channel
	if name == "newsletter" {
		ch, err = s.newsletterChannel(r, title)
	} else {
		ch, err = s.articleChannel(r, name, title)
	}
	if err != nil {
		return nil, err
	}
	// The channel's date is the Last-Modified's instant, not its newest
	// item's: RSS 2.0's lastBuildDate is "the last time the content of the
	// channel changed", which a retraction moves without moving any item
	// (docs/decisions.md, "A feed's Last-Modified").
	ch.Updated = changed
	ch.Self = self
	ch.Alternate = self[:len(self)-len(extOf(self))] + otherExt(extOf(self))
	var resp *respond.Response
	if entry.Type == "rss" {
		body, err := ch.rss()
		if err != nil {
			return nil, err
		}
		resp = respond.Bytes(RSSType, body, keys...)
	} else {
		body, err := ch.jsonFeed()
		if err != nil {
			return nil, err
		}
		resp = respond.Bytes(JSONFeedType, body, keys...)
	}
	resp.LastModified = changed
	return resp, nil
}

func extOf(u string) string {
	if strings.HasSuffix(u, ".xml") {
		return ".xml"
	}
	return ".json"
}

func otherExt(ext string) string {
	if ext == ".xml" {
		return ".json"
	}
	return ".xml"
}

// channel is a feed before it is written as RSS or JSON Feed.
type channel struct {
	Title, Description, Home, Self, Alternate string
	Updated                                   time.Time
	Items                                     []item
}

type item struct {
	ID, URL, Title, Summary string
	ContentHTML             string
	Published               time.Time
	Updated                 *time.Time
	Categories              []string
	Image                   string
}

// articleChannel builds the feed named like "all", "section/mandates",
// "audience/ap" or "country/be" (the catalog has already vouched for it).
func (s *Site) articleChannel(r *http.Request, name, title string) (channel, error) {
	var f store.ArticleFilter
	home := "/"
	kind, value, _ := strings.Cut(name, "/")
	switch kind {
	case "section":
		f.Section, home = value, "/section/"+value+"/"
	case "audience":
		f.Audience, home = value, "/audience/"+value+"/"
	case "country":
		f.Country, home = value, "/countries/"+value+"/"
	}
	p, err := s.Store.Articles(r.Context(), f, 0, FeedItems, nil)
	if err != nil {
		return channel{}, err
	}
	ch := channel{Title: title, Home: s.SiteRoot + home, Description: "The newest articles of " + title + ", with their full text."}
	if kind == "all" {
		ch.Description = "The newest Invoicewire articles about e-invoicing, with their full text."
	}
	for _, rec := range p.Articles {
		html, err := s.articleHTML(rec)
		if err != nil {
			return channel{}, err
		}
		pub := rec.Public(s.SiteRoot)
		it := item{ID: pub.URL, URL: pub.URL, Title: rec.Title, Summary: rec.Dek, ContentHTML: html,
			Published: rec.PublishedAt, Updated: rec.UpdatedAt, Categories: append([]string{rec.Section}, rec.Tags...), Image: pub.OGImage}
		ch.Items = append(ch.Items, it)
	}
	return ch, nil
}

// articleHTML is an article's full content for feeds: its body, its
// correction notes and its sources, with absolute links.
func (s *Site) articleHTML(rec *store.ArticleRecord) (string, error) {
	body, err := RenderMarkdown(rec.Body)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(string(body))
	if len(rec.Corrections) > 0 {
		b.WriteString("<h2>Corrections</h2>\n<ul>\n")
		for _, c := range rec.Corrections {
			fmt.Fprintf(&b, "<li>%s: %s</li>\n", longDate(c.Date), template.HTMLEscapeString(c.Text))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("<h2>Sources</h2>\n<ul>\n")
	for _, src := range rec.Sources {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", template.HTMLEscapeString(src.URL), template.HTMLEscapeString(src.Name))
	}
	b.WriteString("</ul>\n")
	return b.String(), nil
}

// newsletterChannel lists the newest issues, each with its intro and the
// articles it still holds.
func (s *Site) newsletterChannel(r *http.Request, title string) (channel, error) {
	issues, err := s.Store.Newsletters(r.Context(), FeedItems)
	if err != nil {
		return channel{}, err
	}
	ch := channel{Title: title, Home: s.SiteRoot + "/", Description: "The Invoicewire weekly digest: each week's articles with an editor's introduction."}
	for _, n := range issues {
		intro, err := RenderMarkdown(n.Intro)
		if err != nil {
			return channel{}, err
		}
		recs, err := s.publishedArticles(r, n.Articles)
		if err != nil {
			return channel{}, err
		}
		var b strings.Builder
		b.WriteString(string(intro))
		b.WriteString("<ul>\n")
		for _, rec := range recs {
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a>", template.HTMLEscapeString(s.SiteRoot+rec.Path()+"/"), template.HTMLEscapeString(rec.Title))
			if rec.Dek != "" {
				fmt.Fprintf(&b, ": %s", template.HTMLEscapeString(rec.Dek))
			}
			b.WriteString("</li>\n")
		}
		b.WriteString("</ul>\n")
		u := content.NewsletterURL(s.SiteRoot, n.Week)
		ch.Items = append(ch.Items, item{ID: u, URL: u, Title: n.Title, ContentHTML: b.String(), Published: n.SentAt, Categories: []string{"newsletter"}})
	}
	return ch, nil
}

// RSS 2.0 (rssboard.org) with the content module for full text and an
// atom:link rel="self" as the RSS Profile recommends. gorilla/feeds' RSS
// writer has neither the self link nor several categories per item, so the
// document is written here with encoding/xml (and gofeed, a real parser,
// reads it back in the tests).
type rssDoc struct {
	XMLName xml.Name   `xml:"rss"`
	Version string     `xml:"version,attr"`
	Atom    string     `xml:"xmlns:atom,attr"`
	Content string     `xml:"xmlns:content,attr"`
	Channel rssChannel `xml:"channel"`
}

type rssChannel struct {
	Title         string    `xml:"title"`
	Link          string    `xml:"link"`
	Description   string    `xml:"description"`
	Language      string    `xml:"language"`
	LastBuildDate string    `xml:"lastBuildDate,omitempty"`
	Docs          string    `xml:"docs"`
	Generator     string    `xml:"generator"`
	AtomLinks     []rssAtom `xml:"atom:link"`
	Items         []rssItem `xml:"item"`
}

type rssAtom struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
}

type rssItem struct {
	Title       string     `xml:"title"`
	Link        string     `xml:"link"`
	GUID        rssGUID    `xml:"guid"`
	PubDate     string     `xml:"pubDate"`
	Description string     `xml:"description,omitempty"`
	Categories  []string   `xml:"category"`
	Encoded     rssEncoded `xml:"content:encoded"`
}

type rssGUID struct {
	Value       string `xml:",chardata"`
	IsPermaLink string `xml:"isPermaLink,attr"`
}

type rssEncoded struct {
	HTML string `xml:",cdata"`
}

func (ch channel) rss() ([]byte, error) {
	doc := rssDoc{
		Version: "2.0",
		Atom:    "http://www.w3.org/2005/Atom",
		Content: "http://purl.org/rss/1.0/modules/content/",
		Channel: rssChannel{
			Title: ch.Title, Link: ch.Home, Description: ch.Description, Language: "en",
			Docs: "https://www.rssboard.org/rss-specification", Generator: "Invoicewire",
			AtomLinks: []rssAtom{
				{Href: ch.Self, Rel: "self", Type: "application/rss+xml"},
				{Href: ch.Alternate, Rel: "alternate", Type: "application/feed+json"},
			},
		},
	}
	if !ch.Updated.IsZero() {
		doc.Channel.LastBuildDate = ch.Updated.UTC().Format(time.RFC1123Z)
	}
	for _, it := range ch.Items {
		doc.Channel.Items = append(doc.Channel.Items, rssItem{
			Title: it.Title, Link: it.URL, GUID: rssGUID{Value: it.ID, IsPermaLink: "true"},
			// RSS 2.0 dates are RFC 822 (with four-digit years).
			PubDate:     it.Published.UTC().Format(time.RFC1123Z),
			Description: it.Summary, Categories: it.Categories, Encoded: rssEncoded{HTML: it.ContentHTML},
		})
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("site: writing RSS: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// JSON Feed 1.1 (jsonfeed.org/version/1.1). gorilla/feeds' types would drop
// "items" from an empty feed (omitempty), which JSON Feed requires, so the
// document is written here.
type jsonFeedDoc struct {
	Version     string         `json:"version"`
	Title       string         `json:"title"`
	HomePageURL string         `json:"home_page_url"`
	FeedURL     string         `json:"feed_url"`
	Description string         `json:"description"`
	Language    string         `json:"language"`
	Authors     []jsonAuthor   `json:"authors"`
	Items       []jsonFeedItem `json:"items"`
}

type jsonAuthor struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

type jsonFeedItem struct {
	ID            string     `json:"id"`
	URL           string     `json:"url"`
	Title         string     `json:"title"`
	Summary       string     `json:"summary,omitempty"`
	ContentHTML   string     `json:"content_html"`
	Image         string     `json:"image,omitempty"`
	DatePublished time.Time  `json:"date_published"`
	DateModified  *time.Time `json:"date_modified,omitempty"`
	Tags          []string   `json:"tags,omitempty"`
}

func (ch channel) jsonFeed() ([]byte, error) {
	f := jsonFeedDoc{
		Version: "https://jsonfeed.org/version/1.1", Title: ch.Title, HomePageURL: ch.Home, FeedURL: ch.Self,
		Description: ch.Description, Language: "en",
		Authors: []jsonAuthor{{Name: "Invoicewire", URL: ch.Home}},
		Items:   []jsonFeedItem{},
	}
	for _, it := range ch.Items {
		ji := jsonFeedItem{ID: it.ID, URL: it.URL, Title: it.Title, Summary: it.Summary, ContentHTML: it.ContentHTML,
			DatePublished: it.Published.UTC(), Tags: it.Categories, Image: it.Image}
		if it.Updated != nil {
			u := it.Updated.UTC()
			ji.DateModified = &u
		}
		f.Items = append(f.Items, ji)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&f); err != nil {
		return nil, fmt.Errorf("site: writing JSON Feed: %w", err)
	}
	return b.Bytes(), nil
}
