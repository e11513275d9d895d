// Package respond is the small vocabulary the origin's handlers answer in: a
// handler returns a *Response or an error, and the origin's one writer turns
// either into bytes, caches it, and adds the shared headers (docs/decisions.md (JSON errors), docs/decisions.md (cache headers),
// docs/decisions.md (CORS)). Handlers never touch the http.ResponseWriter.
package respond

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// Handler answers one request.
type Handler func(r *http.Request) (*Response, error)

// Cache-Control values of docs/decisions.md (cache headers).
const (
	CacheRead  = "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"
	CacheError = "public, max-age=60"
	NoStore    = "no-store"
)

// ContentSignal is the site's AI-use preference (contentsignals.org,
// draft-romm-aipref-contentsignals): search and answers that cite the
// articles yes, model training no. The origin's writer sends it as the
// Content-Signal field of every answer that carries the site's content
// (CarriesContent); robots.txt states it as its Content-Signal line.
const ContentSignal = "search=yes, ai-input=yes, ai-train=no"

// contentTypes are the media types in which the origin answers with the
// site's content: pages, markdown twins, llms.txt, feeds and the
// calendar. The JSON of the API, the errors, sitemaps and assets are not
// content a reader or a model reads.
var contentTypes = []string{"text/html", "text/markdown", "text/plain", "application/rss+xml", "application/feed+json", "text/calendar"}

// CarriesContent reports whether a success of the media type contentType
// (parameters allowed) carries the site's content, and so the
// Content-Signal field.
func CarriesContent(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	for _, c := range contentTypes {
		if strings.EqualFold(mt, c) {
			return true
		}
	}
	return false
}

// Response is a complete answer. Its body is final: the writer stores it in
// the cache as it is and serves the same bytes to every later request.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
	// CacheControl defaults to CacheRead for 200 responses.
	CacheControl string
	// SurrogateKeys names the content the response depends on (docs/decisions.md, cache headers).
	SurrogateKeys []string
	// Vary is set when the representation depends on a request header.
	Vary string
	// Expires, when set, is the instant the response changes by itself,
	// with no content change to purge it (the news sitemap's two-day window
	// moves on): the origin's cache drops it then.
	Expires time.Time
	// LastModified, when set on a 200, is sent as Last-Modified and
	// answers If-Modified-Since (RFC 9110 §8.8.2, §13.1.3), but only once
	// it is no later than the answer's Date: until then the answer has
	// none. What shows one article gives the article's own time; a feed
	// the last change under its keys (store.ChangedAt; docs/decisions.md,
	// "Last-Modified").
	LastModified time.Time
	// Header holds any other headers.
	Header http.Header
	// Uncached keeps the response out of the origin's response cache: it
	// is made afresh for every request (the signatures directory signs
	// each answer), though downstream caches may keep it as CacheControl
	// says.
	Uncached bool
}

// JSON marshals v as a 200 response tagged with keys. HTML escaping is off:
// bodies are JSON, never embedded in HTML, and URLs keep their "&".
func JSON(v any, keys ...string) (*Response, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("respond: encoding JSON: %w", err)
	}
	return &Response{Status: http.StatusOK, ContentType: "application/json", Body: b.Bytes(), SurrogateKeys: keys}, nil
}

// Redirect is a 301 from r to path (escaped) under siteRoot, with r's
// query: where a page is published, for a request that left off or added
// its trailing slash. Its body names the same location in JSON, for
// clients that show a body rather than follow the redirect.
func Redirect(r *http.Request, siteRoot, path string, keys ...string) *Response {
	location := siteRoot + path
	if r.URL.RawQuery != "" {
		location += "?" + queryForLocation(r.URL.RawQuery)
	}
	body, _ := json.Marshal(struct {
		Location string `json:"location"`
	}{location})
	return &Response{
		Status: http.StatusMovedPermanently, ContentType: "application/json", Body: append(body, '\n'),
		Header: http.Header{"Location": {location}}, SurrogateKeys: keys,
	}
}

// queryForLocation is a request's raw query as a Location field may carry
// it: a byte RFC 3986 §3.4 allows in a query is kept, any other (a space,
// a control, a quote, a byte of UTF-8, which a client may send, and "#",
// "[" and "]", which a client following the field would read as the start
// of a fragment or a host's delimiters) is percent-encoded, so the field holds visible ASCII and reads back as the
// same query. A "%" that starts no escape ("%ZZ", a "%" at the end) is
// such a byte too: kept, it would make the field no URI reference (RFC
// 9110 §10.2.2, RFC 3986 §2.1).
func queryForLocation(q string) string {
	var b strings.Builder
	for i := range len(q) {
		c := q[i]
		switch {
		case c == '%' && i+2 < len(q) && httpheader.IsHex(q[i+1]) && httpheader.IsHex(q[i+2]), httpheader.QueryByte(c):
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Bytes is a 200 response of the given media type.
func Bytes(contentType string, body []byte, keys ...string) *Response {
	return &Response{Status: http.StatusOK, ContentType: contentType, Body: body, SurrogateKeys: keys}
}
