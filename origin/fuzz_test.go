package origin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// FuzzGetPath sends GET requests for untrusted request targets, sent as
// written (no client-side cleaning): the router and every handler behind a
// wildcard parse them. Whatever the path, the answer is never a 5xx, and
// anything but a success (a redirect or an error) is JSON with a body:
// an error in the JSON errors shape, a redirect naming its Location, a
// path on this site. A success only ever answers a path in its one
// spelling (docs/decisions.md, "One address per resource").
func FuzzGetPath(f *testing.F) {
	inst := origintest.Start(f)
	live := contenttest.Article(2)
	for _, p := range []string{
		"/", "/api/v1", "/api/v1/", "/api/v1/articles?limit=5", "/api/v1/articles/" + live.Slug,
		"/api/v1/nope", "/api/v2/articles", "/api/v1//articles", "/api/v1/countries/DE",
		live.Path(), live.Path() + "/", live.Path() + ".md", live.Path() + "/?x=1",
		"/countries/be", "/countries/be/", "/developers/", "/section/mandates", "/2026/13/x",
		"/feeds/all.xml", "/feeds/section/x.json", "/sitemaps/articles-1.xml", "/.well-known/",
		"/%2e%2e/", "/2026/11/%ff", "/a/b/c/d/", "/?page=0", "/assets/%00",
		live.Path() + "%2F", live.Path() + "%2f/", "/2026%2F11/" + live.Slug + "/", "/api/v1/articles/" + live.Slug + "%2F",
		"/api%2Fv1/articles", "/api/v1/%61rticles", "/2026/11/%61rticle-00002", "/countries/%64e", "/feeds/all%2Exml",
		"/..//evil.example", "/.//evil.example", "/%2F%2Fevil.example", "/a/../b/./c/", "/countries/de//",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if _, err := url.ParseRequestURI(target); err != nil || !strings.HasPrefix(target, "/") ||
			strings.HasPrefix(target, "//") || strings.ContainsAny(target, " \r\n\t#") {
			// Not a request target a client can send, one Go's server
			// refuses before any handler runs (the one plain-text 400,
			// docs/decisions.md, JSON errors), or one Go's client sends as
			// an absolute URL ("//host/path").
			return
		}
		req, err := http.NewRequest(http.MethodGet, inst.SiteRoot+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		path, query, _ := strings.Cut(target, "?")
		req.URL.Opaque, req.URL.RawQuery = path, query
		resp, err := noRedirects.Do(req)
		if err != nil {
			return // Go's client refused to send it: no finding
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %q: reading the answer: %v", target, err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("GET %q: %d for an untrusted path: %s", target, resp.StatusCode, body)
		}
		if resp.StatusCode < 300 {
			if spelledOtherwise(path) {
				t.Fatalf("GET %q: %d, a second address for a resource", target, resp.StatusCode)
			}
			return
		}
		if resp.StatusCode == http.StatusNotModified {
			return
		}
		if loc := resp.Header.Get("Location"); loc != "" && (!strings.HasPrefix(loc, inst.SiteRoot+"/") || strings.HasPrefix(loc, inst.SiteRoot+"//")) {
			t.Fatalf("GET %q: Location %q leaves the site", target, loc)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("GET %q: %d with Content-Type %q, want application/json", target, resp.StatusCode, ct)
		}
		var answer struct {
			Location string `json:"location"`
			Error    struct {
				Code, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			t.Fatalf("GET %q: %d with a body that is not JSON: %q", target, resp.StatusCode, body)
		}
		switch {
		case resp.StatusCode < 400 && (answer.Location == "" || answer.Location != resp.Header.Get("Location")):
			t.Fatalf("GET %q: %d to %q with body %s", target, resp.StatusCode, resp.Header.Get("Location"), body)
		case resp.StatusCode >= 400 && (answer.Error.Code == "" || answer.Error.Message == ""):
			t.Fatalf("GET %q: %d with body %s, not the JSON error", target, resp.StatusCode, body)
		}
	})
}

// spelledOtherwise reports whether the escaped path p differs from every
// address the site publishes for a reason of its spelling alone: an
// escape of an unreserved character or of "/", lowercase hex, a dot
// segment or an empty one (RFC 3986 §2.2, §2.3, §6.2.2). Written apart
// from the router's own normaliser, so the two check each other.
func spelledOtherwise(p string) bool {
	segs := strings.Split(p, "/")[1:]
	for i, seg := range segs {
		if seg == "" && i < len(segs)-1 {
			return true
		}
		decoded, err := url.PathUnescape(seg)
		if err != nil || decoded == "." || decoded == ".." {
			return true
		}
		for j := 0; j+2 < len(seg); j++ {
			if seg[j] != '%' {
				continue
			}
			esc := seg[j+1 : j+3]
			c, err := url.PathUnescape("%" + esc)
			if err != nil || esc != strings.ToUpper(esc) {
				return true
			}
			if b := c[0]; b == '/' || b == '-' || b == '.' || b == '_' || b == '~' ||
				'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' {
				return true
			}
		}
	}
	return false
}
