package api

import (
	"net/http"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Feed is one entry of the FeedCatalog (the contract).
type Feed struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	Type  string `json:"type"`
}

// FeedCatalog lists every feed of docs/decisions.md (feeds): the master feed, one per
// section, audience and country with at least one article, and the
// newsletter, each as RSS 2.0 and JSON Feed 1.1, and the iCalendar feed of
// mandate deadlines.
func FeedCatalog(siteRoot string, countries []*content.Country, withArticles map[string]int64) []Feed {
	var feeds []Feed
	add := func(title, path string) {
		feeds = append(feeds,
			Feed{Title: title + " (RSS)", URL: siteRoot + "/feeds/" + path + ".xml", Type: "rss"},
			Feed{Title: title + " (JSON Feed)", URL: siteRoot + "/feeds/" + path + ".json", Type: "json"})
	}
	add("Invoicewire: all articles", "all")
	// Titled as their pages are headed, not by the filter values.
	for _, s := range content.Sections {
		add("Invoicewire: "+content.SectionNames[s], "section/"+s)
	}
	for _, a := range content.Audiences {
		add("Invoicewire: "+content.AudienceHeading(a), "audience/"+a)
	}
	for _, c := range countries {
		if withArticles[c.Code] > 0 {
			add("Invoicewire: "+c.Name, "country/"+c.Code)
		}
	}
	add("Invoicewire Weekly newsletter", "newsletter")
	// The deadline calendar is not listed: a Feed's type is rss or json
	// (docs/decisions.md, feeds).
	return feeds
}

// Feeds answers GET /feeds (FeedCatalog).
func (a *API) Feeds(r *http.Request) (*respond.Response, error) {
	countries, err := a.Store.Countries(r.Context())
	if err != nil {
		return nil, err
	}
	codes := make([]string, len(countries))
	for i, c := range countries {
		codes[i] = c.Code
	}
	counts, err := a.Store.CountryArticleCounts(r.Context(), codes)
	if err != nil {
		return nil, err
	}
	feeds := FeedCatalog(a.SiteRoot, countries, counts)
	return respond.JSON(struct {
		Count int    `json:"count"`
		Items []Feed `json:"items"`
	}{len(feeds), feeds}, store.TagFeeds, store.TagCountries)
}
