package origin_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// sendRaw sends one request whose target is written on the request line
// exactly as given: no client parses, cleans or re-encodes it (Go's client
// would send "//host/x" as an absolute URL, and re-encode some paths).
func sendRaw(t testing.TB, inst *origintest.Instance, method, target string, header http.Header) result {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(inst.SiteRoot, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(inst.SiteRoot, "http://") + "\r\nConnection: close\r\n")
	for k, vs := range header {
		for _, v := range vs {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, target, err)
	}
	return result{resp.StatusCode, resp.Header, body}
}

// TestCanonicalPaths: every resource answers at one address only
// (docs/decisions.md, "One address per resource"). A path spelled otherwise
// than that address but equivalent to it under RFC 3986 §6.2.2 (an encoded
// unreserved character, lowercase hex, a dot segment) is a 301 to it, for
// GET and HEAD, when that address answers anything but a 404; a path that
// differs in meaning (an encoded slash, RFC 3986 §2.2; an empty segment) names
// nothing and is the JSON 404. Neither ever answers the resource itself
// under a second cache key, and no redirect leaves the site.
func TestCanonicalPaths(t *testing.T) {
	inst := origintest.Start(t)
	site := inst.SiteRoot
	live := contenttest.Article(2)         // published 2026-11
	gone := contenttest.Article(3)         // retracted by origintest.Start
	page := live.Path() + "/"              // /2026/11/article-00002/
	api := "/api/v1/articles/" + live.Slug // /api/v1/articles/article-00002
	const ym = "/2026/11/"

	testCases := []struct {
		desc     string
		method   string // GET when empty
		target   string // the request target, sent as written
		header   http.Header
		status   int
		code     string // the error code, for errors
		location string // the Location of a 301, after site root
		keys     string // a Surrogate-Key the answer must carry
		hint     string // what the error's hint must say
		cc       string // the Cache-Control the answer must carry
	}{
		// The canonical addresses still answer.
		{desc: "article page", target: page, status: 200},
		{desc: "article in the API", target: api, status: 200},
		{desc: "API trailing slash is still read as none (docs/decisions.md, trailing slash on API paths)", target: api + "/", status: 200},
		{desc: "query with an encoded slash is not a path", target: "/api/v1/articles?section=%2Fmandates", status: 400, code: "bad_request"},

		// Article pages.
		{desc: "page, trailing slash encoded", target: live.Path() + "%2F", status: 404, code: "not_found", hint: "encoded slash (%2F)"},
		{desc: "page, trailing slash encoded in lowercase hex", target: live.Path() + "%2f", status: 404, code: "not_found"},
		{desc: "page, encoded slash before the real one", target: live.Path() + "%2F/", status: 404, code: "not_found"},
		{desc: "page, encoded slash between year and month", target: "/2026%2F11/" + live.Slug + "/", status: 404, code: "not_found"},
		{desc: "page, encoded slash between month and slug", target: "/2026/11%2F" + live.Slug + "/", status: 404, code: "not_found"},
		{desc: "page, encoded slash inside the slug", target: ym + "article%2F00002/", status: 404, code: "not_found"},
		{desc: "page, encoded letter in the slug", target: ym + "%61rticle-00002/", status: 301, location: page, keys: "article:" + live.Slug},
		{desc: "page, encoded capital hex digit of a digit", target: "/%32026/11/" + live.Slug + "/", status: 301, location: page},
		{desc: "page, encoded hyphen", target: ym + "article%2D00002/", status: 301, location: page},
		{desc: "page, encoded hyphen in lowercase hex", target: ym + "article%2d00002/", status: 301, location: page},
		{desc: "page, encoded letter and no slash: one hop to the page", target: ym + "%61rticle-00002", status: 301, location: page},
		{desc: "page, encoded letter keeps the query", target: ym + "%61rticle-00002/?utm_source=x", status: 301, location: page + "?utm_source=x"},
		{desc: "page, dot-dot segment", target: ym + "x/../" + live.Slug + "/", status: 301, location: page},
		{desc: "page, encoded dot-dot segment", target: "/2026/%2e%2e/2026/11/" + live.Slug + "/", status: 301, location: page},
		{desc: "page, half-encoded dot-dot segment", target: "/2026/.%2E/2026/11/" + live.Slug + "/", status: 301, location: page},
		{desc: "page, dot segment", target: "/2026/./11/" + live.Slug + "/", status: 301, location: page},
		{desc: "page, trailing dot segment", target: page + ".", status: 301, location: page},
		{desc: "page, dot segments above the root", target: "/../../.." + page, status: 301, location: page},
		{desc: "page, encoded spelling of an unknown article", target: ym + "%6Eo-such-article/", status: 404, code: "not_found", keys: "article:no-such-article"},
		{desc: "page, encoded spelling of a retracted article", target: ym + "%61rticle-00003/", status: 301, location: gone.Path() + "/"},
		{desc: "page, doubled slash inside", target: "/2026//11/" + live.Slug + "/", status: 404, code: "not_found", hint: "empty path segment (//)"},
		{desc: "page, doubled trailing slash", target: page + "/", status: 404, code: "not_found"},
		{desc: "page, doubled slash after a dot-dot", target: ym + "x/..//" + live.Slug + "/", status: 404, code: "not_found"},

		// Markdown twins.
		{desc: "twin, encoded dot of .md", target: live.Path() + "%2Emd", status: 301, location: live.Path() + ".md"},
		{desc: "twin, encoded slash between year and month", target: "/2026%2F11/" + live.Slug + ".md", status: 404, code: "not_found"},
		{desc: "twin, encoded slash after .md", target: live.Path() + ".md%2F", status: 404, code: "not_found"},

		// The API.
		{desc: "API article, trailing slash encoded", target: api + "%2F", status: 404, code: "not_found", hint: "/api/v1/"},
		{desc: "API article, trailing slash encoded in lowercase hex", target: api + "%2f", status: 404, code: "not_found"},
		{desc: "API article, encoded slash before the slug", target: "/api/v1/articles%2F" + live.Slug, status: 404, code: "not_found"},
		{desc: "API, encoded slash in the prefix", target: "/api%2Fv1/articles", status: 404, code: "not_found"},
		{desc: "API, encoded slash ending the index", target: "/api/v1%2F", status: 404, code: "not_found"},
		{desc: "API article, encoded letter in the slug", target: "/api/v1/articles/%61rticle-00002", status: 301, location: api, keys: "article:" + live.Slug},
		{desc: "API list, encoded letter in the collection, query kept", target: "/api/v1/%61rticles?limit=2", status: 301, location: "/api/v1/articles?limit=2"},
		{desc: "API list, encoded spelling answering 400 there", target: "/api/v1/%61rticles?limit=0", status: 301, location: "/api/v1/articles?limit=0"},
		{desc: "API article, encoded spelling of a retracted one", target: "/api/v1/articles/%61rticle-00003", status: 301, location: "/api/v1/articles/" + gone.Slug},
		{desc: "API article, encoded spelling of an unknown one", target: "/api/v1/articles/%6Eo-such-article", status: 404, code: "not_found", keys: "article:no-such-article", hint: "List articles at"},
		{desc: "API, dot-dot segment", target: "/api/v1/articles/x/../" + live.Slug, status: 301, location: api},
		{desc: "API, encoded dot-dot to another collection", target: "/api/v1/articles/%2e%2e/countries", status: 301, location: "/api/v1/countries"},
		{desc: "API, doubled slash", target: "/api/v1//articles", status: 404, code: "not_found"},
		{desc: "API article, encoded dot-dot and slash", target: "/api/v1/articles/%2e%2e%2fetc", status: 404, code: "not_found"},

		// Countries.
		{desc: "API country, trailing slash encoded", target: "/api/v1/countries/de%2F", status: 404, code: "not_found"},
		{desc: "API country, encoded letter", target: "/api/v1/countries/%64e", status: 301, location: "/api/v1/countries/de"},
		{desc: "country page, trailing slash encoded", target: "/countries/de%2F", status: 404, code: "not_found"},
		{desc: "country page, encoded letter", target: "/countries/%64e/", status: 301, location: "/countries/de/"},
		{desc: "country page, encoded letter and no slash: one hop", target: "/countries/%64e", status: 301, location: "/countries/de/"},
		{desc: "country page, doubled trailing slash", target: "/countries/de//", status: 404, code: "not_found"},

		// Specifications.
		{desc: "API spec, trailing slash encoded", target: "/api/v1/specs/en-16931%2F", status: 404, code: "not_found"},
		{desc: "API spec, encoded hyphen", target: "/api/v1/specs/en%2D16931", status: 301, location: "/api/v1/specs/en-16931"},

		// Feeds.
		{desc: "feed, encoded dot", target: "/feeds/all%2Exml", status: 301, location: "/feeds/all.xml"},
		{desc: "feed, encoded slash", target: "/feeds%2Fall.xml", status: 404, code: "not_found"},
		{desc: "section feed, encoded slash after it", target: "/feeds/section/mandates.xml%2F", status: 404, code: "not_found"},
		{desc: "country feed, encoded slash inside the file", target: "/feeds/country%2Fde.xml", status: 404, code: "not_found"},

		// Other site pages and documents.
		{desc: "section page, trailing slash encoded", target: "/section/mandates%2F", status: 404, code: "not_found"},
		{desc: "developers, encoded letter", target: "/%64evelopers", status: 301, location: "/developers"},
		{desc: "robots.txt, encoded dot", target: "/robots%2Etxt", status: 301, location: "/robots.txt"},
		{desc: "well-known, encoded slash", target: "/.well-known%2Fagent-card.json", status: 404, code: "not_found"},
		{desc: "home, dot-dot", target: "/../", status: 301, location: "/"},
		{desc: "home, encoded dot-dot", target: "/%2e%2e/", status: 301, location: "/"},
		{desc: "home, encoded slash", target: "/%2F", status: 404, code: "not_found"},

		// No redirect leaves the site.
		{desc: "protocol-relative path", target: "//evil.example", status: 404, code: "not_found"},
		{desc: "protocol-relative path with a slash", target: "//evil.example/", status: 404, code: "not_found"},
		{desc: "protocol-relative path after a dot-dot", target: "/..//evil.example/", status: 404, code: "not_found"},
		{desc: "protocol-relative path after a dot", target: "/.//evil.example", status: 404, code: "not_found"},
		{desc: "encoded protocol-relative path", target: "/%2F%2Fevil.example", status: 404, code: "not_found"},
		{desc: "encoded backslash", target: "/%5Cevil.example/", status: 404, code: "not_found"},
		{desc: "protocol-relative page address", target: "//countries/de", status: 404, code: "not_found"},

		// Other methods are never redirected.
		{desc: "redirect of a request with a token is not stored (docs/decisions.md, cache headers)", target: "/api/v1/webhooks/%73ubscriptions", header: http.Header{"Authorization": {"Bearer not-a-token"}}, status: 301, location: "/api/v1/webhooks/subscriptions", cc: "no-store"},
		{desc: "redirect without a token is cached like a page", target: "/api/v1/%73ources", status: 301, location: "/api/v1/sources", cc: "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"},
		{desc: "404 of a request with a token is not stored", target: "/api/v1/webhooks/subscriptions%2F", header: http.Header{"Authorization": {"Bearer not-a-token"}}, status: 404, cc: "no-store"},
		{desc: "HEAD, trailing slash encoded", method: "HEAD", target: api + "%2F", status: 404},
		{desc: "HEAD, encoded letter", method: "HEAD", target: "/api/v1/%61rticles", status: 301, location: "/api/v1/articles"},
		{desc: "write to an encoded spelling without a token (docs/decisions.md, bearer tokens)", method: "POST", target: "/api/v1/%77ebhooks", status: 401, code: "unauthorized"},
		{desc: "write with an encoded slash without a token", method: "DELETE", target: api + "%2F", status: 401, code: "unauthorized"},
		{desc: "ask at an encoded spelling", method: "POST", target: "/%61sk", header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"0"}}, status: 404, code: "not_found", hint: site + "/ask (RFC 3986 §6.2.2), to which only GET and HEAD"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			// Twice: the second answer may come from the response cache
			// and must be the same.
			for round := range 2 {
				r := sendRaw(t, inst, method, tc.target, tc.header)
				if r.status != tc.status {
					t.Fatalf("round %d: %s %s: status %d, want %d; body %s", round, method, tc.target, r.status, tc.status, r.body)
				}
				if r.status >= 400 && method != http.MethodHead {
					if got := errorCode(t, r); tc.code != "" && got != tc.code {
						t.Fatalf("code %q, want %q", got, tc.code)
					}
				}
				if r.status >= 300 && r.status < 400 {
					if !strings.HasPrefix(r.header.Get("Location"), site+"/") || strings.HasPrefix(r.header.Get("Location"), site+"//") {
						t.Fatalf("Location %q leaves %s", r.header.Get("Location"), site)
					}
					if method == http.MethodHead {
						if got := r.header.Get("Location"); got != site+tc.location {
							t.Fatalf("Location = %q, want %q", got, site+tc.location)
						}
					} else {
						redirectsTo(site+tc.location)(t, r)
					}
				}
				if tc.cc != "" && r.header.Get("Cache-Control") != tc.cc {
					t.Fatalf("Cache-Control %q, want %q", r.header.Get("Cache-Control"), tc.cc)
				}
				if tc.hint != "" {
					hintHas(tc.hint)(t, r)
				}
				if tc.keys != "" && !strings.Contains(" "+r.header.Get("Surrogate-Key")+" ", " "+tc.keys+" ") {
					t.Fatalf("Surrogate-Key %q lacks %q", r.header.Get("Surrogate-Key"), tc.keys)
				}
				if r.status != 204 && r.header.Get("Access-Control-Allow-Origin") != "*" {
					t.Fatal("response lacks CORS Access-Control-Allow-Origin")
				}
			}
		})
	}
}

// TestCanonicalRedirectFollowsContent: the 301 of an equivalent spelling and
// the 404 of one whose address has nothing are tagged with what that address
// depends on, so a change to the content reaches them at once instead of
// leaving a cached answer that no longer holds.
func TestCanonicalRedirectFollowsContent(t *testing.T) {
	inst := origintest.Start(t)
	ctx := context.Background()
	fresh := contenttest.Article(0)
	fresh.Slug = "fresh-story"
	spelled := "/api/v1/articles/%66resh-story"
	if r := sendRaw(t, inst, "GET", spelled, nil); r.status != 404 {
		t.Fatalf("before publishing: %d %s", r.status, r.body)
	}
	if _, err := inst.Publisher.SyncArticle(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		r := sendRaw(t, inst, "GET", spelled, nil)
		return r.status == 301 && r.header.Get("Location") == inst.SiteRoot+"/api/v1/articles/fresh-story"
	}, "the encoded spelling of a new article redirects to it")
}

// TestRedirectDuringOutage: whether a path redirects is decided by running
// the other address's handler; when the store is down that is the 503 of
// docs/decisions.md (Redis unreachable), never a 404 kept in the caches
// after the store is back.
func TestRedirectDuringOutage(t *testing.T) {
	inst := origintest.New(t, 3)
	inst.Redis.Stop()
	for _, target := range []string{"/countries/%64e/", "/countries/de", "/api/v1/countries/%64e"} {
		r := sendRaw(t, inst, "GET", target, nil)
		if r.status != 503 || errorCode(t, r) != "unavailable" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d, Cache-Control %q, body %s", target, r.status, r.header.Get("Cache-Control"), r.body)
		}
	}
}
