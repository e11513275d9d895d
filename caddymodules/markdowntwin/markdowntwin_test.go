package markdowntwin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

func TestMarkdownTwin(t *testing.T) {
	// The origin answers with the path it saw, and sets Vary: Accept and
	// Content-Signal on the .md route as the real one does.
	const signal = "search=yes, ai-input=yes, ai-train=no"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".md") {
			w.Header().Set("Vary", "Accept")
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			w.Header().Set("Content-Signal", signal)
		}
		fmt.Fprint(w, r.URL.RequestURI())
	}))
	defer up.Close()
	edge := edgetest.Start(t, fmt.Sprintf(`
	markdown_twin
	reverse_proxy %s`, strings.TrimPrefix(up.URL, "http://")))

	const page = "/2026/03/belgium-b2b-mandate/"
	testCases := []struct {
		desc   string
		method string
		path   string
		accept []string
		want   string // path the origin saw
		vary   bool   // Vary: Accept expected (exactly once)
	}{
		{desc: "markdown only", method: "GET", path: page, accept: []string{"text/markdown"}, want: "/2026/03/belgium-b2b-mandate.md", vary: true},
		{desc: "markdown preferred", method: "GET", path: page, accept: []string{"text/html;q=0.5, text/markdown"}, want: "/2026/03/belgium-b2b-mandate.md", vary: true},
		{desc: "query kept", method: "GET", path: page + "?utm=x", accept: []string{"text/markdown"}, want: "/2026/03/belgium-b2b-mandate.md?utm=x", vary: true},
		{desc: "HEAD too", method: "HEAD", path: page, accept: []string{"text/markdown"}, want: "", vary: true},
		{desc: "html preferred", method: "GET", path: page, accept: []string{"text/markdown;q=0.4, text/html"}, want: page, vary: true},
		{desc: "browser default", method: "GET", path: page, accept: []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, want: page, vary: true},
		{desc: "wildcard is html", method: "GET", path: page, accept: []string{"*/*"}, want: page, vary: true},
		{desc: "no Accept is html", method: "GET", path: page, want: page, vary: true},
		{desc: "markdown refused", method: "GET", path: page, accept: []string{"text/markdown;q=0"}, want: page, vary: true},
		{desc: "malformed Accept ignored", method: "GET", path: page, accept: []string{"text/markdown;q=abc;;,,/"}, want: page, vary: true},
		{desc: "POST is not rewritten", method: "POST", path: page, accept: []string{"text/markdown"}, want: page, vary: true},
		{desc: "direct .md keeps one Vary", method: "GET", path: "/2026/03/belgium-b2b-mandate.md", accept: []string{"text/markdown"}, want: "/2026/03/belgium-b2b-mandate.md"},
		{desc: "not an article page", method: "GET", path: "/api/v1/articles/", accept: []string{"text/markdown"}, want: "/api/v1/articles/"},
		{desc: "no trailing slash", method: "GET", path: "/2026/03/belgium-b2b-mandate", accept: []string{"text/markdown"}, want: "/2026/03/belgium-b2b-mandate"},
		{desc: "traversal is not a slug", method: "GET", path: "/2026/03/../../etc/passwd/", accept: []string{"text/markdown"}, want: "/2026/03/../../etc/passwd/"},
		{desc: "encoded dots are not a slug", method: "GET", path: "/2026/03/%2e%2e/", accept: []string{"text/markdown"}, want: "/2026/03/%2e%2e/"},
		{desc: "encoded slash is not a slug", method: "GET", path: "/2026/03/a%2Fb/", accept: []string{"text/markdown"}, want: "/2026/03/a%2Fb/"},
		{desc: "encoded trailing slash is not the page", method: "GET", path: "/2026/03/belgium-b2b-mandate%2F", accept: []string{"text/markdown"}, want: "/2026/03/belgium-b2b-mandate%2F"},
		{desc: "encoded slash after the year is not the page", method: "GET", path: "/2026%2F03/belgium-b2b-mandate/", accept: []string{"text/markdown"}, want: "/2026%2F03/belgium-b2b-mandate/"},
		{desc: "encoded letter is another spelling, which the origin redirects", method: "GET", path: "/2026/03/%62elgium-b2b-mandate/", accept: []string{"text/markdown"}, want: "/2026/03/%62elgium-b2b-mandate/"},
		{desc: "upper case is not a slug", method: "GET", path: "/2026/03/Belgium/", accept: []string{"text/markdown"}, want: "/2026/03/Belgium/"},
		{desc: "year must be digits", method: "GET", path: "/20x6/03/belgium/", accept: []string{"text/markdown"}, want: "/20x6/03/belgium/"},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			var hdr []string
			for _, a := range test.accept {
				hdr = append(hdr, "Accept: "+a)
			}
			resp, body := edge.Do(t, test.method, test.path, "", hdr...)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if test.method != "HEAD" && body != test.want {
				t.Errorf("origin saw %q; want %q", body, test.want)
			}
			vary := resp.Header.Values("Vary")
			n := 0
			for _, v := range vary {
				n += strings.Count(strings.ToLower(v), "accept")
			}
			if test.vary && n != 1 {
				t.Errorf("Vary %q; want Accept exactly once", vary)
			}
			// The twin is served as the origin made it: its Content-Signal
			// (the AI-use preference) reaches the client unchanged.
			if twin := strings.Contains(test.want, ".md") || (test.method == "HEAD" && test.path == page); twin {
				if got := resp.Header.Values("Content-Signal"); len(got) != 1 || got[0] != signal {
					t.Errorf("Content-Signal %q; want the origin's %q", got, signal)
				}
			}
		})
	}
}

// TestRewriteRequestURI checks the request the next handler gets, not only
// what the proxy sends upstream: the edge cache keys on r.RequestURI
// (edgecache's requestURI), which reverse_proxy never reads. A rewrite that
// kept the query in r.URL but dropped it from r.RequestURI would store every
// query of a page's twin under the one key of "/…/slug.md".
func TestRewriteRequestURI(t *testing.T) {
	const page = "/2026/03/belgium-b2b-mandate/"
	testCases := []struct {
		desc   string
		target string
		accept string
		want   string // r.RequestURI the next handler sees
	}{
		{desc: "twin without a query", target: page, accept: "text/markdown", want: "/2026/03/belgium-b2b-mandate.md"},
		{desc: "twin keeps the query", target: page + "?a=1", accept: "text/markdown", want: "/2026/03/belgium-b2b-mandate.md?a=1"},
		{desc: "twin keeps another query apart", target: page + "?b=2", accept: "text/markdown", want: "/2026/03/belgium-b2b-mandate.md?b=2"},
		{desc: "twin keeps the query's escapes", target: page + "?q=a%26b&x=%2F", accept: "text/markdown", want: "/2026/03/belgium-b2b-mandate.md?q=a%26b&x=%2F"},
		{desc: "html is left as sent", target: page + "?a=1", accept: "text/html", want: page + "?a=1"},
		{desc: "not a page is left as sent", target: "/api/v1/articles/?a=1", accept: "text/markdown", want: "/api/v1/articles/?a=1"},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, test.target, nil)
			r.Header.Set("Accept", test.accept)
			var got, gotURL string
			next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				got, gotURL = r.RequestURI, r.URL.RequestURI()
				return nil
			})
			if err := new(Handler).ServeHTTP(httptest.NewRecorder(), r, next); err != nil {
				t.Fatalf("ServeHTTP: %v", err)
			}
			if got != test.want {
				t.Errorf("r.RequestURI = %q; want %q", got, test.want)
			}
			// The URL the proxy sends and the key the cache reads name
			// one resource.
			if gotURL != got {
				t.Errorf("r.URL.RequestURI() = %q, but r.RequestURI = %q", gotURL, got)
			}
		})
	}
}

func TestArticlePage(t *testing.T) {
	for _, p := range []string{"/2026/03/a/", "/2026/03/a-b-9/"} {
		if _, _, _, ok := articlePage(p); !ok {
			t.Errorf("articlePage(%q) = false", p)
		}
	}
	for _, p := range []string{"/2026/03//", "/2026/03/-a/", "/2026/03/a-/", "/2026/03/a--b/", "/2026/3/a/", "/2026/03/a/b/", "/2026/03/" + strings.Repeat("a", 121) + "/", "", "/"} {
		if _, _, _, ok := articlePage(p); ok {
			t.Errorf("articlePage(%q) = true", p)
		}
	}
}

func FuzzArticlePage(f *testing.F) {
	for _, s := range []string{"/2026/03/a/", "/2026/03/../", "/0000/00/x-y/", "//////////"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		y, m, slug, ok := articlePage(p)
		if !ok {
			return
		}
		if strings.ContainsAny(slug, "./%\\") || len(y) != 4 || len(m) != 2 || p != "/"+y+"/"+m+"/"+slug+"/" {
			t.Fatalf("articlePage(%q) accepted %q %q %q", p, y, m, slug)
		}
	})
}
