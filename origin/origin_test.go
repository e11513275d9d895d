package origin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/origin/respond"
)

type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// noRedirects shows a redirect as it is, rather than where it leads.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t testing.TB, base, method, path string, header http.Header) result {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, b}
}

// errorCode checks the JSON errors rule's (docs/decisions.md) error shape and returns the code.
func errorCode(t *testing.T, r result) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type = %q, want application/json", ct)
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Hint    string `json:"hint"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("error body %q is not {error:{code,message}}", r.body)
	}
	return e.Error.Code
}

func TestEndpoints(t *testing.T) {
	st := origintest.Start(t)
	ctx := context.Background()
	siteRoot := st.SiteRoot
	retracted := contenttest.Article(3)
	live := contenttest.Article(2)

	cases := []struct {
		desc   string
		method string
		path   string
		header http.Header
		status int
		code   string // error code, for errors
		check  func(t *testing.T, r result)
	}{
		{desc: "OpenAPI document on this instance's root", path: "/openapi.json", status: 200, check: func(t *testing.T, r result) {
			servers, _ := r.json(t)["servers"].([]any)
			if len(servers) == 0 || servers[0].(map[string]any)["url"] != siteRoot+"/api/v1" {
				t.Fatalf("servers %v, want %s/api/v1 first", servers, siteRoot)
			}
			if bytes.Contains(r.body, []byte("localhost:8080")) {
				t.Fatalf("the document still names localhost:8080")
			}
		}},
		{desc: "service index", path: "/api/v1/", status: 200, check: func(t *testing.T, r result) {
			m := r.json(t)
			if m["name"] != "Invoicewire" || m["base_url"] != siteRoot+"/api/v1" || len(m["resources"].([]any)) < 5 {
				t.Fatalf("index = %v", m)
			}
		}},
		{desc: "service index without trailing slash", path: "/api/v1", status: 200},
		{desc: "articles default page", path: "/api/v1/articles", status: 200, check: func(t *testing.T, r result) {
			m := r.json(t)
			items := m["items"].([]any)
			if m["count"].(float64) != 29 || len(items) != 25 || m["next"] == nil {
				t.Fatalf("count %v, %d items, next %v", m["count"], len(items), m["next"])
			}
			first := items[0].(map[string]any)
			for _, f := range []string{"slug", "title", "section", "audience", "countries", "published_at", "sources", "url", "markdown_url"} {
				if _, ok := first[f]; !ok {
					t.Errorf("article lacks %s", f)
				}
			}
			if first["url"] != siteRoot+contenttest.Article(0).Path()+"/" {
				t.Errorf("url = %v", first["url"])
			}
			if !strings.HasPrefix(m["next"].(string), siteRoot+"/api/v1/articles?") {
				t.Errorf("next = %v, want an absolute URL", m["next"])
			}
		}},
		{desc: "filters combine", path: "/api/v1/articles?section=mandates&country=be&limit=100", status: 200, check: func(t *testing.T, r result) {
			for _, it := range r.json(t)["items"].([]any) {
				a := it.(map[string]any)
				if a["section"] != "mandates" || !strings.Contains(strings.Join(toStrings(a["countries"]), ","), "be") {
					t.Fatalf("item %v does not match the filters", a["slug"])
				}
			}
		}},
		{desc: "last page has next null", path: "/api/v1/articles?limit=100", status: 200, check: func(t *testing.T, r result) {
			if m := r.json(t); m["next"] != nil || len(m["items"].([]any)) != 29 {
				t.Fatalf("next = %v, items %d", m["next"], len(m["items"].([]any)))
			}
		}},
		{desc: "unknown parameters are ignored", path: "/api/v1/articles?utm_source=x", status: 200},
		{desc: "limit 0", path: "/api/v1/articles?limit=0", status: 400, code: "bad_request"},
		{desc: "limit 101", path: "/api/v1/articles?limit=101", status: 400, code: "bad_request"},
		{desc: "limit not an integer", path: "/api/v1/articles?limit=ten", status: 400, code: "bad_request"},
		{desc: "limit with sign", path: "/api/v1/articles?limit=+5", status: 400, code: "bad_request"},
		{desc: "negative offset", path: "/api/v1/articles?offset=-1", status: 400, code: "bad_request"},
		{desc: "offset above 10000", path: "/api/v1/articles?offset=10001", status: 400, code: "bad_request"},
		{desc: "unknown section", path: "/api/v1/articles?section=sports", status: 400, code: "bad_request", check: hintHas("mandates, network")},
		{desc: "unknown audience", path: "/api/v1/articles?audience=cfo", status: 400, code: "bad_request", check: hintHas("biz, ap")},
		{desc: "uppercase country filter", path: "/api/v1/articles?country=DE", status: 400, code: "bad_request"},
		{desc: "three-letter country filter", path: "/api/v1/articles?country=deu", status: 400, code: "bad_request"},
		{desc: "repeated parameter", path: "/api/v1/articles?limit=5&limit=6", status: 400, code: "bad_request"},
		{desc: "malformed percent-encoding is not dropped", path: "/api/v1/articles?section=%zz", status: 400, code: "bad_request", check: hintHas("%25")},
		{desc: "semicolon between parameters", path: "/api/v1/articles?limit=5;offset=2", status: 400, code: "bad_request"},
		{desc: "malformed pair beside a good one", path: "/api/v1/articles?limit=2&x=%zz", status: 400, code: "bad_request"},
		{desc: "malformed query on a page", path: "/?page=%zz", status: 400, code: "bad_request"},
		{desc: "forged cursor", path: "/api/v1/articles?cursor=bm9wZQ", status: 400, code: "bad_request"},
		{desc: "one article", path: "/api/v1/articles/" + live.Slug, status: 200, check: func(t *testing.T, r result) {
			if m := r.json(t); m["slug"] != live.Slug || m["markdown_url"] != siteRoot+live.Path()+".md" {
				t.Fatalf("article = %v", m)
			}
		}},
		{desc: "unknown article", path: "/api/v1/articles/no-such-story", status: 404, code: "not_found", check: hintHas("/api/v1/articles")},
		{desc: "article slug with odd characters", path: "/api/v1/articles/%2e%2e%2fetc", status: 404, code: "not_found"},
		{desc: "overlong slug", path: "/api/v1/articles/" + strings.Repeat("a", 5000), status: 404, code: "not_found"},
		{desc: "retracted article is gone", path: "/api/v1/articles/" + retracted.Slug, status: 410, code: "gone", check: func(t *testing.T, r result) {
			hintHas("did not support the headline")(t, r)
			taggedWith("article:"+retracted.Slug)(t, r)
		}},
		{desc: "countries", path: "/api/v1/countries", status: 200, check: func(t *testing.T, r result) {
			m := r.json(t)
			if m["count"].(float64) != float64(len(contenttest.Countries)) {
				t.Fatalf("count = %v", m["count"])
			}
		}},
		{desc: "country", path: "/api/v1/countries/de", status: 200, check: func(t *testing.T, r result) {
			if m := r.json(t); m["code"] != "de" || m["url"] != siteRoot+"/countries/de/" || m["mandate_status"] != "phased-rollout" {
				t.Fatalf("country = %v", m)
			}
		}},
		{desc: "country code in capitals", path: "/api/v1/countries/DE", status: 200, check: func(t *testing.T, r result) {
			if r.json(t)["code"] != "de" {
				t.Fatal("uppercase code did not answer the lowercase country")
			}
		}},
		{desc: "country code of three letters", path: "/api/v1/countries/deu", status: 400, code: "bad_request"},
		{desc: "untracked country", path: "/api/v1/countries/zz", status: 404, code: "not_found", check: hintHas("/api/v1/countries")},
		{desc: "specs", path: "/api/v1/specs", status: 200},
		{desc: "spec", path: "/api/v1/specs/peppol-bis-billing-3", status: 200, check: func(t *testing.T, r result) {
			if m := r.json(t); m["version"] != "3.0.20" || m["last_changed"] == nil {
				t.Fatalf("spec = %v", m)
			}
		}},
		{desc: "spec without version has null version", path: "/api/v1/specs/en-16931", status: 200, check: func(t *testing.T, r result) {
			if m := r.json(t); m["version"] != nil {
				t.Fatalf("version = %v, want null", m["version"])
			}
		}},
		{desc: "unknown spec", path: "/api/v1/specs/nope", status: 404, code: "not_found"},
		{desc: "sources", path: "/api/v1/sources", status: 200},
		{desc: "webhook catalog", path: "/api/v1/webhooks", status: 200, check: func(t *testing.T, r result) {
			m := r.json(t)
			if len(m["events"].([]any)) != 5 || m["registration_url"] != siteRoot+"/api/v1/webhooks" || !strings.Contains(m["signing"].(string), "HMAC-SHA256") {
				t.Fatalf("catalog = %v", m)
			}
		}},
		{desc: "feed catalog", path: "/api/v1/feeds", status: 200, check: func(t *testing.T, r result) {
			m := r.json(t)
			// all + 6 sections + 4 audiences + 5 countries + newsletter, × 2
			// formats: nothing of another type than rss and json
			if n := len(m["items"].([]any)); n != 2*(1+6+4+5+1) || m["count"].(float64) != float64(n) {
				t.Fatalf("%d feeds, count %v", n, m["count"])
			}
		}},
		{desc: "openapi document", path: "/openapi.json", status: 200, check: func(t *testing.T, r result) {
			if r.json(t)["openapi"] != "3.1.0" {
				t.Fatal("not an OpenAPI 3.1 document")
			}
		}},
		{desc: "markdown twin", path: live.Path() + ".md", status: 200, check: func(t *testing.T, r result) {
			if ct := r.header.Get("Content-Type"); ct != "text/markdown; charset=utf-8" {
				t.Fatalf("Content-Type = %q", ct)
			}
			if !strings.HasPrefix(string(r.body), "---\ntitle: ") || !strings.Contains(string(r.body), "## Sources") {
				t.Fatalf("markdown = %s", r.body)
			}
			if r.header.Get("Vary") != "Accept" {
				t.Fatal("markdown twin lacks Vary: Accept")
			}
		}},
		{desc: "markdown twin under another month: its own address", path: "/2001/01/" + live.Slug + ".md", status: 301, check: redirectsTo(siteRoot + live.Path() + ".md")},
		{desc: "markdown twin of a retracted article under another month", path: "/2001/01/" + retracted.Slug + ".md", status: 404, code: "not_found"},
		{desc: "markdown twin with month 13", path: "/2026/13/" + live.Slug + ".md", status: 404, code: "not_found"},
		{desc: "markdown twin of a retracted article", path: retracted.Path() + ".md", status: 410, code: "gone", check: taggedWith("article:" + retracted.Slug)},
		{desc: "path traversal", path: "/../../etc/passwd", status: 404, code: "not_found"},
		{desc: "unknown path", path: "/wp-login.php", status: 404, code: "not_found", check: hintHas("/api/v1/")},
		{desc: "unknown API resource", path: "/api/v1/nope", status: 404, code: "not_found", check: nothingPublished},
		{desc: "unknown API version", path: "/api/v2/articles", status: 404, code: "not_found", check: nothingPublished},
		{desc: "API resource with a suffix", path: "/api/v1/articles.json", status: 404, code: "not_found", check: nothingPublished},
		{desc: "article page without its slash", path: live.Path(), status: 301, check: redirectsTo(siteRoot + live.Path() + "/")},
		{desc: "retracted article's page without its slash", path: retracted.Path() + "?utm_source=x", status: 301, check: redirectsTo(siteRoot + retracted.Path() + "/?utm_source=x")},
		{desc: "article page without its slash, under another month: one hop to its page", path: "/2001/01/" + live.Slug, status: 301, check: redirectsTo(siteRoot + live.Path() + "/")},
		{desc: "no article, without a slash", path: "/2026/01/no-such-story", status: 404, code: "not_found"},
		{desc: "country page without its slash", path: "/countries/be", status: 301, check: redirectsTo(siteRoot + "/countries/be/")},
		{desc: "redirect of a query with a % that starts no escape", path: "/api/v1/countries/%64e?x=%ZZ&y=%4&z=%41%", status: 301, check: redirectsTo(siteRoot + "/api/v1/countries/de?x=%25ZZ&y=%254&z=%41%25")},
		{desc: "country code with the Kelvin sign is no code (API)", path: "/api/v1/countries/%E2%84%AAE", status: 400, code: "bad_request"},
		{desc: "country code with the Kelvin sign is no code (page)", path: "/countries/%E2%84%AAE/", status: 400, code: "bad_request"},
		{desc: "country feed with the Kelvin sign is no feed", path: "/feeds/country/%E2%84%AAE.xml", status: 404, code: "not_found"},
		{desc: "redirect of a query with raw UTF-8", path: "/countries/be?q=ä\"", status: 301, check: redirectsTo(siteRoot + "/countries/be/?q=%C3%A4%22")},
		{desc: "country page with its code in capitals", path: "/countries/DE/", status: 301, check: redirectsTo(siteRoot + "/countries/de/")},
		{desc: "country page with its code in capitals, query kept", path: "/countries/De/?page=1&utm_source=x", status: 301, check: redirectsTo(siteRoot + "/countries/de/?page=1&utm_source=x")},
		{desc: "country page in capitals without its slash: one hop", path: "/countries/DE", status: 301, check: redirectsTo(siteRoot + "/countries/de/")},
		{desc: "country page in capitals, encoded letter: one hop", path: "/countries/%44E/", status: 301, check: redirectsTo(siteRoot + "/countries/de/")},
		{desc: "unknown country in capitals", path: "/countries/XX/", status: 404, code: "not_found"},
		{desc: "unknown country in capitals without its slash", path: "/countries/XX", status: 404, code: "not_found", check: nothingPublished},
		{desc: "country page in capitals, page past the end", path: "/countries/DE/?page=50", status: 404, code: "not_found"},
		{desc: "page with a slash it does not have", path: "/developers/", status: 301, check: redirectsTo(siteRoot + "/developers")},
		{desc: "unknown path with a slash", path: "/wp-login.php/", status: 404, code: "not_found"},
		{desc: "unknown country without its slash", path: "/countries/xx", status: 404, code: "not_found", check: nothingPublished},
		{desc: "country code of three letters without a slash", path: "/countries/abc", status: 404, code: "not_found", check: nothingPublished},
		{desc: "country page with .md, no slash", path: "/countries/be.md", status: 404, code: "not_found", check: nothingPublished},
		{desc: "section page with .md, no slash", path: "/section/specs.md", status: 404, code: "not_found", check: nothingPublished},
		{desc: "API path with a slash too many", path: "/api/v1/countries/be//", status: 404, code: "not_found", check: nothingPublished},
		{desc: "page address with month 13", path: "/2026/13/" + live.Slug + "/", status: 404, code: "not_found", check: nothingPublished},
		{desc: "write without token", method: "POST", path: "/api/v1/articles", status: 401, code: "unauthorized", check: func(t *testing.T, r result) {
			want := `Bearer realm="invoicewire", resource_metadata="` + siteRoot + `/.well-known/oauth-protected-resource"`
			if got := r.header.Get("WWW-Authenticate"); got != want {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
			}
		}},
		{desc: "write with an unknown token", method: "DELETE", path: "/api/v1/countries/de", header: http.Header{"Authorization": {"Bearer nope"}}, status: 401, code: "unauthorized", check: func(t *testing.T, r result) {
			if !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Fatalf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
		}},
		{desc: "write with a valid token is 405", method: "PUT", path: "/api/v1/articles", header: http.Header{"Authorization": {"Bearer good-token"}}, status: 405, code: "method_not_allowed", check: func(t *testing.T, r result) {
			if r.header.Get("Allow") != "GET, HEAD, OPTIONS" {
				t.Fatalf("Allow = %q", r.header.Get("Allow"))
			}
		}},
		{desc: "write with a valid token to an unknown article is its 404, not a 405", method: "DELETE", path: "/api/v1/articles/no-such-story", header: http.Header{"Authorization": {"Bearer good-token"}}, status: 404, code: "not_found", check: func(t *testing.T, r result) {
			if r.header.Get("Allow") != "" || r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("a 404 with Allow %q, Cache-Control %q", r.header.Get("Allow"), r.header.Get("Cache-Control"))
			}
		}},
		{desc: "unknown method on a three-segment path no page has", method: "FOO", path: "/a/b/c", status: 404, code: "not_found", check: func(t *testing.T, r result) {
			if r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("an error to a FOO is shared: Cache-Control %q", r.header.Get("Cache-Control"))
			}
		}},
		{desc: "unknown method on an article page's address with no article", method: "FOO", path: "/2026/01/no-such-story/", status: 404, code: "not_found"},
		{desc: "unknown method on a retracted article's page is its 410", method: "FOO", path: retracted.Path() + "/", status: 410, code: "gone", check: taggedWith("article:" + retracted.Slug)},
		{desc: "unknown method on a live article's page is a 405", method: "FOO", path: live.Path() + "/", status: 405, code: "method_not_allowed"},
		{desc: "GET of a POST-only API route is a 405, not a 401", path: "/api/v1/agent-auth/claim", status: 405, code: "method_not_allowed", check: func(t *testing.T, r result) {
			if r.header.Get("Allow") != "POST, OPTIONS" || r.header.Get("WWW-Authenticate") != "" {
				t.Fatalf("Allow %q, WWW-Authenticate %q", r.header.Get("Allow"), r.header.Get("WWW-Authenticate"))
			}
		}},
		{desc: "reads ignore a bad token", path: "/api/v1/countries", header: http.Header{"Authorization": {"Bearer nope"}}, status: 200},
		{desc: "write to a site path", method: "POST", path: "/openapi.json", status: 405, code: "method_not_allowed"},
		{desc: "HEAD has headers and no body", method: "HEAD", path: "/api/v1/sources", status: 200, check: func(t *testing.T, r result) {
			if len(r.body) != 0 || r.header.Get("ETag") == "" {
				t.Fatalf("HEAD: %d body bytes, ETag %q", len(r.body), r.header.Get("ETag"))
			}
		}},
		{desc: "preflight", method: "OPTIONS", path: "/api/v1/articles", header: http.Header{"Origin": {"https://x.example"}, "Access-Control-Request-Method": {"GET"}}, status: 204, check: func(t *testing.T, r result) {
			if r.header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Idempotency-Key") {
				t.Fatalf("preflight headers %v", r.header)
			}
		}},
	}
	// A valid token for the 405 case, written as agent auth will write it.
	rec, _ := json.Marshal(token.Record{ClientID: "agent_1", Scope: "webhooks:read webhooks:write", ExpiresAt: time.Now().Add(time.Hour)})
	if err := st.Redis.Client().Set(ctx, token.Key("good-token"), rec, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "GET"
			}
			// Twice: the second answer comes from the cache and must be the same.
			for round := range 2 {
				r := do(t, st.Server.URL, method, tc.path, tc.header)
				if r.status != tc.status {
					t.Fatalf("round %d: status = %d, want %d; body %s", round, r.status, tc.status, r.body)
				}
				if tc.code != "" {
					if got := errorCode(t, r); got != tc.code {
						t.Fatalf("code = %q, want %q", got, tc.code)
					}
				}
				if r.status != 204 && r.header.Get("Access-Control-Allow-Origin") != "*" {
					t.Fatal("response lacks CORS Access-Control-Allow-Origin")
				}
				if tc.check != nil {
					tc.check(t, r)
				}
			}
		})
	}
}

// nothingPublished checks a 404 is the answer of a path that names no
// resource (not, say, an article page's "no article at this address").
func nothingPublished(t *testing.T, r result) {
	t.Helper()
	var e struct {
		Error struct{ Message, Hint string } `json:"error"`
	}
	json.Unmarshal(r.body, &e)
	if e.Error.Message != "Nothing is published at this address." || !strings.Contains(e.Error.Hint, "/api/v1/") {
		t.Fatalf("error %+v, want the answer of an address nothing is published at", e.Error)
	}
}

// redirectsTo checks a 301 leads to location and says so in its JSON body.
func redirectsTo(location string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if got := r.header.Get("Location"); got != location {
			t.Fatalf("Location = %q, want %q", got, location)
		}
		if m := r.json(t); m["location"] != location {
			t.Fatalf("body %s does not name %s", r.body, location)
		}
	}
}

// taggedWith checks the answer's Surrogate-Key names key. A cached error
// must name the content it is about, or the purge that content's change
// sends (a retracted article restored, say) would leave it stored
// (docs/decisions.md, cache headers).
func taggedWith(key string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if !slices.Contains(strings.Fields(r.header.Get("Surrogate-Key")), key) {
			t.Fatalf("Surrogate-Key %q lacks %q", r.header.Get("Surrogate-Key"), key)
		}
	}
}

func hintHas(s string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		var e struct {
			Error struct{ Hint string } `json:"error"`
		}
		json.Unmarshal(r.body, &e)
		if !strings.Contains(e.Error.Hint, s) {
			t.Fatalf("hint %q does not mention %q", e.Error.Hint, s)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestCacheHeadersAndConditionalRequests(t *testing.T) {
	st := origintest.New(t, 3)
	cases := []struct {
		desc, path, cacheControl string
		surrogate                string
	}{
		{"success", "/api/v1/articles/" + contenttest.Article(1).Slug, "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400", "article:" + contenttest.Article(1).Slug},
		{"list", "/api/v1/articles?section=network", "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400", "section:network"},
		{"404 for a slug is tagged with it", "/api/v1/articles/not-yet", "public, max-age=60", "article:not-yet"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, st.Server.URL, "GET", tc.path, nil)
			if got := r.header.Get("Cache-Control"); got != tc.cacheControl {
				t.Fatalf("Cache-Control = %q, want %q", got, tc.cacheControl)
			}
			if got := r.header.Get("Surrogate-Key"); got != tc.surrogate {
				t.Fatalf("Surrogate-Key = %q, want %q", got, tc.surrogate)
			}
			if r.status != 200 {
				return
			}
			etag := r.header.Get("ETag")
			if !strings.HasPrefix(etag, `"`) {
				t.Fatalf("ETag %q is not a strong validator", etag)
			}
			for _, inm := range []string{etag, `"x", ` + etag, "W/" + etag, "*"} {
				if r := do(t, st.Server.URL, "GET", tc.path, http.Header{"If-None-Match": {inm}}); r.status != 304 || len(r.body) != 0 || r.header.Get("ETag") != etag {
					t.Fatalf("If-None-Match %s: status %d, ETag %q", inm, r.status, r.header.Get("ETag"))
				}
			}
			if r := do(t, st.Server.URL, "GET", tc.path, http.Header{"If-None-Match": {`"other"`}}); r.status != 200 {
				t.Fatalf("non-matching If-None-Match: %d", r.status)
			}
		})
	}
}

// TestPreconditions checks If-Match and If-Unmodified-Since on reads (RFC
// 9110 §13.1.1, §13.1.4, §13.2.2): false is the JSON 412 with no-store and
// none of the representation's fields, on the first read (filling the
// origin's cache) and from the cache alike; true goes on to If-None-Match
// and If-Modified-Since; an answer that is not a 200 ignores them (RFC
// 9110 §13.2.1).
func TestPreconditions(t *testing.T) {
	st := origintest.New(t, 3)
	a := contenttest.Article(0)
	lastMod := a.LastModified().UTC().Truncate(time.Second)
	before := lastMod.Add(-time.Second).Format(http.TimeFormat)
	paths := []struct {
		desc, path string
		lastMod    bool
	}{
		{desc: "a list", path: "/api/v1/specs"},
		{desc: "an article", path: "/api/v1/articles/" + a.Slug, lastMod: true},
		{desc: "an article page", path: a.Path() + "/", lastMod: true},
	}
	for _, p := range paths {
		t.Run(p.desc, func(t *testing.T) {
			if r := do(t, st.Server.URL, "GET", p.path, http.Header{"If-Match": {`"nomatch"`}}); r.status != 412 {
				t.Fatalf("first read with a false If-Match: %d, want 412", r.status)
			}
			full := do(t, st.Server.URL, "GET", p.path, nil)
			etag := full.header.Get("ETag")
			if full.status != 200 || etag == "" {
				t.Fatalf("GET: %d, ETag %q", full.status, etag)
			}
			testCases := []struct {
				desc    string
				method  string
				header  http.Header
				status  int
				needsLM bool // the case is about Last-Modified
			}{
				{desc: "If-Match, another tag", header: http.Header{"If-Match": {`"nomatch"`}}, status: 412},
				{desc: "If-Match, another tag, HEAD", method: "HEAD", header: http.Header{"If-Match": {`"nomatch"`}}, status: 412},
				{desc: "If-Match, the weak form of the tag", header: http.Header{"If-Match": {"W/" + etag}}, status: 412},
				{desc: "If-Match, the current tag", header: http.Header{"If-Match": {etag}}, status: 200},
				{desc: "If-Match, the tag in a list", header: http.Header{"If-Match": {`"other", ` + etag}}, status: 200},
				{desc: "If-Match, star", header: http.Header{"If-Match": {"*"}}, status: 200},
				{desc: "a true If-Match, then a matching If-None-Match", header: http.Header{"If-Match": {etag}, "If-None-Match": {etag}}, status: 304},
				{desc: "a false If-Match wins over a matching If-None-Match", header: http.Header{"If-Match": {`"nomatch"`}, "If-None-Match": {etag}}, status: 412},
				{desc: "If-Unmodified-Since, long before", header: http.Header{"If-Unmodified-Since": {"Thu, 01 Jan 2015 00:00:00 GMT"}}, status: 412, needsLM: true},
				{desc: "If-Unmodified-Since, a second before", header: http.Header{"If-Unmodified-Since": {before}}, status: 412, needsLM: true},
				{desc: "If-Unmodified-Since, Last-Modified itself", header: http.Header{"If-Unmodified-Since": {lastMod.Format(http.TimeFormat)}}, status: 200},
				{desc: "If-Unmodified-Since, an invalid date", header: http.Header{"If-Unmodified-Since": {"yesterday"}}, status: 200},
				{desc: "a true If-Match: If-Unmodified-Since is not evaluated", header: http.Header{"If-Match": {etag}, "If-Unmodified-Since": {before}}, status: 200},
				{desc: "If-Unmodified-Since before a matching If-None-Match", header: http.Header{"If-Unmodified-Since": {before}, "If-None-Match": {etag}}, status: 412, needsLM: true},
			}
			for _, tc := range testCases {
				t.Run(tc.desc, func(t *testing.T) {
					want := tc.status
					if tc.needsLM && !p.lastMod {
						// No Last-Modified: If-Unmodified-Since is ignored.
						want = 200
						if tc.header["If-None-Match"] != nil {
							want = 304
						}
					}
					method := tc.method
					if method == "" {
						method = "GET"
					}
					r := do(t, st.Server.URL, method, p.path, tc.header)
					if r.status != want {
						t.Fatalf("%d, want %d", r.status, want)
					}
					switch want {
					case 412:
						if cc := r.header.Get("Cache-Control"); cc != "no-store" {
							t.Errorf("412 Cache-Control %q, want no-store", cc)
						}
						if r.header.Get("ETag") != "" || r.header.Get("Last-Modified") != "" || r.header.Get("Surrogate-Key") != "" {
							t.Errorf("412 carries the representation's fields: %v", r.header)
						}
						if method == "GET" {
							if code := errorCode(t, r); code != "precondition_failed" {
								t.Errorf("code %q", code)
							}
						} else if len(r.body) != 0 {
							t.Errorf("HEAD 412 with a body")
						}
					case 200:
						if string(r.body) != string(full.body) {
							t.Errorf("the 200 differs from the plain read")
						}
					}
				})
			}
		})
	}
	t.Run("a 404 ignores the preconditions", func(t *testing.T) {
		for _, h := range []http.Header{{"If-Match": {`"nomatch"`}}, {"If-Unmodified-Since": {"Thu, 01 Jan 2015 00:00:00 GMT"}}} {
			if r := do(t, st.Server.URL, "GET", "/api/v1/articles/not-yet", h); r.status != 404 {
				t.Errorf("%v: %d, want 404", h, r.status)
			}
		}
	})
}

// TestInvalidationAcrossOrigins runs two origins with their own caches on one
// Redis: a publish or retraction is visible on both within a second.
func TestInvalidationAcrossOrigins(t *testing.T) {
	st := origintest.New(t, 5)
	second := st.Another(t)
	ctx := context.Background()
	slug := contenttest.Article(2).Slug
	newArticle := contenttest.Article(50)
	newArticle.PublishedAt = contenttest.Base.Add(time.Hour)
	bases := []string{st.Server.URL, second.URL}
	for _, b := range bases {
		// Warm both caches, including a 404 for the article to come.
		for _, p := range []string{"/api/v1/articles/" + slug, "/api/v1/articles", "/api/v1/articles/" + newArticle.Slug} {
			do(t, b, "GET", p, nil)
		}
	}
	if _, err := st.Publisher.Retract(ctx, slug, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publisher.SyncArticle(ctx, newArticle); err != nil {
		t.Fatal(err)
	}
	for _, b := range bases {
		eventually(t, func() bool { return do(t, b, "GET", "/api/v1/articles/"+slug, nil).status == 410 }, "the retraction on "+b)
		eventually(t, func() bool { return do(t, b, "GET", "/api/v1/articles/"+newArticle.Slug, nil).status == 200 }, "the new article on "+b)
		eventually(t, func() bool {
			var m struct {
				Items []struct{ Slug string } `json:"items"`
			}
			json.Unmarshal(do(t, b, "GET", "/api/v1/articles", nil).body, &m)
			return len(m.Items) > 0 && m.Items[0].Slug == newArticle.Slug
		}, "the new article at the top of the list on "+b)
	}
}

// eventually polls cond for up to a second, the visibility promise of the
// issue ("a change is visible within a second on every origin").
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not visible within a second: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRedisDownIsA503NotA500(t *testing.T) {
	st := origintest.New(t, 3)
	st.Redis.Stop()
	r := do(t, st.Server.URL, "GET", "/api/v1/articles?section=policy", nil)
	if r.status != 503 || errorCode(t, r) != "unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a 503 must not be cached; Cache-Control = %q", r.header.Get("Cache-Control"))
	}
}

// TestContentSignal: every answer that carries the site's content (pages,
// markdown twins, llms.txt, feeds, the calendar) states the site's AI-use
// preference in Content-Signal, in full and on a 304 alike; the API's JSON
// and the errors do not.
func TestContentSignal(t *testing.T) {
	st := origintest.Start(t)
	a := contenttest.Article(0)
	for _, path := range []string{
		"/", a.Path() + "/", a.Path() + ".md", "/countries/de/", "/mandates", "/mandates.md", "/developers", "/search?q=peppol",
		"/llms.txt", "/feeds/all.xml", "/feeds/all.json", "/feeds/section/specs.xml", "/feeds/newsletter.json",
		"/calendar/mandates.ics",
	} {
		r := do(t, st.Server.URL, "GET", path, nil)
		if r.status != 200 {
			t.Errorf("%s: %d %s", path, r.status, r.body)
			continue
		}
		if got := r.header.Values("Content-Signal"); len(got) != 1 || got[0] != respond.ContentSignal {
			t.Errorf("%s (%s): Content-Signal %q, want %q", path, r.header.Get("Content-Type"), got, respond.ContentSignal)
		}
		again := do(t, st.Server.URL, "GET", path, http.Header{"If-None-Match": {r.header.Get("ETag")}})
		if again.status != 304 || again.header.Get("Content-Signal") != respond.ContentSignal {
			t.Errorf("%s revalidated: %d, Content-Signal %q", path, again.status, again.header.Get("Content-Signal"))
		}
	}
	for _, path := range []string{"/api/v1/articles", "/api/v1/countries", "/sitemap-index.xml", "/nope/nope", a.Path() + "x.md"} {
		if r := do(t, st.Server.URL, "GET", path, nil); r.header.Get("Content-Signal") != "" {
			t.Errorf("%s (%d %s) carries Content-Signal", path, r.status, r.header.Get("Content-Type"))
		}
	}
}
