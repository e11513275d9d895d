package site

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/ask"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// AskFunc answers a question with the /ask engine (origin/ask). The search
// page renders its answer; it never builds an index of its own.
type AskFunc func(ctx context.Context, req ask.Request) (*ask.Answer, error)

// SearchPageSize is how many articles a page of /search lists: the ask
// engine's default answer, so the first page lists what POST /ask answers.
// The engine ranks at most ask.MaxResults articles for a question, so a
// search has at most ask.MaxResults/SearchPageSize pages.
const SearchPageSize = ask.DefaultResults

// searchView is the data of /search.
type searchView struct {
	Head
	Query     string
	Summary   []citedSentence
	Citations []Link
	Results   []searchResult
	// Page is the page number; First and Last the positions, from 1, of
	// its first and last result in the ranking.
	Page, First, Last int
	// Capped says the ranking stops at the engine's bound (ask.MaxResults)
	// on this page, though more articles may match.
	Capped bool
	// MaxResults is the engine's bound, for the page to state.
	MaxResults int
}

type citedSentence struct {
	Text string
	// N is the 1-based number of the sentence's citation in Citations.
	N int
}

type searchResult struct {
	URL, Title, Description, Published, PublishedISO string
}

// Search answers GET /search?q=: the /ask answer to q as a page, its quoted
// summary with numbered citations first, then the articles, SearchPageSize
// a page (?page=, as the listings: rel=prev/next, a page past the last a
// 404). Without q (or with only spaces) the page is the search form. q
// follows the limits of /ask: at most ask.MaxQueryChars characters, else
// the JSON 400. The page depends on every article, so any publication
// purges it.
func (s *Site) Search(r *http.Request) (*respond.Response, error) {
	keys := []string{store.TagList, store.TagSite}
	query, err := respond.Query(r)
	if err != nil {
		return nil, err
	}
	q, _, err := respond.Single(query, "q")
	if err != nil {
		return nil, err
	}
	q = strings.TrimSpace(q)
	if !utf8.ValidString(q) {
		return nil, apierror.BadRequest("q is not valid UTF-8.",
			"Percent-encode the question's UTF-8 bytes: é is %C3%A9 (a form on a UTF-8 page sends it so), not the Latin-1 %E9.")
	}
	if n := utf8.RuneCountInString(q); n > ask.MaxQueryChars {
		return nil, apierror.BadRequest(fmt.Sprintf("q has %d characters; at most %d are allowed.", n, ask.MaxQueryChars),
			"Shorten the question to "+strconv.Itoa(ask.MaxQueryChars)+" characters or fewer.")
	}
	n, err := pageNumber(r)
	if err != nil {
		return nil, err
	}
	noPage := func() error {
		e := apierror.NotFound("There is no page "+strconv.Itoa(n)+" of this search.", "The first page is "+s.SiteRoot+searchURL(q, 1)+".")
		e.SurrogateKeys = keys
		return e
	}
	if q == "" && n > 1 {
		return nil, noPage()
	}
	title := "Search · Invoicewire"
	if q != "" {
		title = q + " · Search · Invoicewire"
	}
	h := s.NewHead(title, "Search Invoicewire's e-invoicing news.", "/search")
	h.Query = q
	v := searchView{Head: h, Query: q, Page: n, MaxResults: ask.MaxResults}
	if q != "" {
		if s.Ask == nil {
			return nil, fmt.Errorf("site: search needs the ask engine")
		}
		// The engine has no offset: page n is the tail of the best n
		// pages, asked with one more to tell whether a next page exists.
		a, err := s.Ask(r.Context(), ask.Request{Query: q, MaxResults: min(n*SearchPageSize+1, ask.MaxResults)})
		if err != nil {
			return nil, err
		}
		start, end := (n-1)*SearchPageSize, min(n*SearchPageSize, len(a.Results))
		if n > 1 && start >= len(a.Results) {
			return nil, noPage()
		}
		page := *a
		page.Results = a.Results[start:end]
		if n > 1 {
			// The summary answers the question once, on the first page.
			page.Summary = nil
			v.Title += " (page " + strconv.Itoa(n) + ")"
			v.Prev = searchURL(q, n-1)
		}
		if len(a.Results) > end {
			v.Next = searchURL(q, n+1)
		}
		v.First, v.Last = start+1, end
		v.Capped = end == ask.MaxResults
		fillAnswer(&v, &page, s.SiteRoot)
	}
	resp, err := render("search", v, keys...)
	if err != nil {
		return nil, err
	}
	// A results page is for people; the form page is the one to index.
	if q != "" {
		resp.Header = withRobots(resp.Header, "noindex")
	}
	return resp, nil
}

// searchURL is the site path of page n of the search for q.
func searchURL(q string, n int) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if len(v) == 0 {
		return "/search"
	}
	return "/search?" + v.Encode()
}

// fillAnswer turns the engine's answer into the page's summary and results.
// Article URLs become site paths, so the page works on any host the site is
// reached by.
func fillAnswer(v *searchView, a *ask.Answer, siteRoot string) {
	local := func(u string) string {
		if p, ok := strings.CutPrefix(u, siteRoot); ok && strings.HasPrefix(p, "/") {
			return p
		}
		return u
	}
	titles := map[string]string{}
	for _, res := range a.Results {
		titles[res.URL] = res.Name
		v.Results = append(v.Results, searchResult{
			URL: local(res.URL), Title: res.Name, Description: res.Description,
			Published: longDate(res.DatePublished), PublishedISO: res.DatePublished.UTC().Format(isoLayout),
		})
	}
	if a.Summary == nil {
		return
	}
	for _, c := range a.Summary.Citations {
		t := titles[c]
		if t == "" {
			t = local(c)
		}
		v.Citations = append(v.Citations, Link{Href: local(c), Title: t})
	}
	for _, sen := range a.Summary.Sentences {
		n := slices.Index(a.Summary.Citations, sen.URL) + 1
		v.Summary = append(v.Summary, citedSentence{Text: sen.Text, N: n})
	}
}

// withRobots returns the page headers plus an X-Robots-Tag, without
// touching the shared map.
func withRobots(h http.Header, value string) http.Header {
	out := h.Clone()
	out.Set("X-Robots-Tag", value)
	return out
}

// OpenSearchType is the media type of the OpenSearch description.
const OpenSearchType = "application/opensearchdescription+xml"

// openSearch is an OpenSearch 1.1 description document.
type openSearch struct {
	XMLName       xml.Name        `xml:"http://a9.com/-/spec/opensearch/1.1/ OpenSearchDescription"`
	ShortName     string          `xml:"ShortName"`
	Description   string          `xml:"Description"`
	InputEncoding string          `xml:"InputEncoding"`
	Image         openSearchImage `xml:"Image"`
	URLs          []openSearchURL `xml:"Url"`
}

type openSearchImage struct {
	Width  int    `xml:"width,attr"`
	Height int    `xml:"height,attr"`
	Type   string `xml:"type,attr"`
	URL    string `xml:",chardata"`
}

type openSearchURL struct {
	Type     string `xml:"type,attr"`
	Method   string `xml:"method,attr,omitempty"`
	Rel      string `xml:"rel,attr,omitempty"`
	Template string `xml:"template,attr"`
}

// OpenSearch answers GET /opensearch.xml, which every page links with
// <link rel="search"> so that browsers offer the site's search.
func (s *Site) OpenSearch(*http.Request) (*respond.Response, error) {
	doc := openSearch{
		ShortName:     "Invoicewire",
		Description:   "Search Invoicewire's news about e-invoicing, Peppol and national mandates.",
		InputEncoding: "UTF-8",
		Image:         openSearchImage{Width: 64, Height: 64, Type: "image/svg+xml", URL: s.SiteRoot + "/assets/icon.svg?v=" + AssetsVersion},
		URLs: []openSearchURL{
			{Type: "text/html", Method: "get", Template: s.SiteRoot + "/search?q={searchTerms}"},
			{Type: OpenSearchType, Rel: "self", Template: s.SiteRoot + "/opensearch.xml"},
		},
	}
	body, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("site: encoding the OpenSearch description: %w", err)
	}
	return respond.Bytes(OpenSearchType, append([]byte(xml.Header), append(body, '\n')...), store.TagSite), nil
}
