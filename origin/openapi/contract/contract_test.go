package contract

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// validIndex is a hand-made ServiceIndex that follows the document.
const validIndex = `{"name":"Invoicewire","version":"1.0.0","description":"News about e-invoicing.",
"base_url":"http://localhost:8080/api/v1","resources":[{"name":"articles","href":"http://localhost:8080/api/v1/articles","description":"Published articles."}]}`

const readCache = "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"

// fake is a tiny stand-in service: each route answers a fixed exchange so the
// checker can be shown to accept what conforms and reject what drifts.
func fake() http.Handler {
	mux := http.NewServeMux()
	json := func(w http.ResponseWriter, status int, cc, body string) {
		w.Header().Set("Content-Type", "application/json")
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		if status == http.StatusOK {
			w.Header().Set("ETag", `"abc"`)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	mux.HandleFunc("GET /good/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		json(w, 200, readCache, validIndex)
	})
	mux.HandleFunc("GET /bad-field/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		// resources items lack href and description; an extra field appears.
		json(w, 200, readCache, `{"name":"Invoicewire","version":"1.0.0","description":"x","base_url":"http://localhost:8080/api/v1","resources":[{"name":"articles"}],"extra":1}`)
	})
	mux.HandleFunc("GET /bad-type/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		json(w, 200, readCache, `{"name":"Invoicewire","version":1,"description":"x","base_url":"not a uri","resources":[]}`)
	})
	mux.HandleFunc("GET /no-etag/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", readCache)
		io.WriteString(w, validIndex)
	})
	mux.HandleFunc("GET /html-error/api/v1/articles/{slug}", func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r) // text/plain: docs/decisions.md (JSON errors) says never
	})
	mux.HandleFunc("GET /good/api/v1/articles/{slug}", func(w http.ResponseWriter, r *http.Request) {
		json(w, 404, "public, max-age=60", `{"error":{"code":"not_found","message":"No article with slug \"nope\".","hint":"List articles at /api/v1/articles."}}`)
	})
	mux.HandleFunc("GET /wrong-code/api/v1/articles/{slug}", func(w http.ResponseWriter, r *http.Request) {
		json(w, 404, "public, max-age=60", `{"error":{"code":"gone","message":"No article."}}`)
	})
	mux.HandleFunc("GET /good/api/v1/articles", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("limit") == "0" {
			json(w, 400, "public, max-age=60", `{"error":{"code":"bad_request","message":"limit 0 is out of range.","hint":"limit must be an integer from 1 to 100."}}`)
			return
		}
		json(w, 200, readCache, `{"count":0,"next":null,"items":[]}`)
	})
	mux.HandleFunc("GET /lenient/api/v1/articles", func(w http.ResponseWriter, r *http.Request) {
		json(w, 200, readCache, `{"count":0,"next":null,"items":[]}`) // accepts limit=0
	})
	mux.HandleFunc("PUT /good/api/v1/articles", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		json(w, 405, "no-store", `{"error":{"code":"method_not_allowed","message":"Method PUT is not allowed here."}}`)
	})
	mux.HandleFunc("PUT /no-allow/api/v1/articles", func(w http.ResponseWriter, r *http.Request) {
		json(w, 405, "no-store", `{"error":{"code":"method_not_allowed","message":"Method PUT is not allowed here."}}`)
	})
	mux.HandleFunc("POST /good/api/v1/webhooks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="invoicewire", resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource"`)
		json(w, 401, "no-store", `{"error":{"code":"unauthorized","message":"A bearer token is required."}}`)
	})
	challenge401 := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="invoicewire", resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource"`)
		json(w, 401, "no-store", `{"error":{"code":"unauthorized","message":"A bearer token is required."}}`)
	}
	// The owner route with the trailing slash the router accepts, and a
	// path below it that no route has: the service asks for credentials on
	// the first and answers 404 for the second; "auth-first" asks for
	// credentials on both.
	mux.HandleFunc("GET /good/api/v1/webhooks/subscriptions/{id}/{$}", challenge401)
	mux.HandleFunc("GET /good/api/v1/webhooks/subscriptions/{id}/{more}", func(w http.ResponseWriter, r *http.Request) {
		json(w, 404, "public, max-age=60", `{"error":{"code":"not_found","message":"Nothing is published at this address."}}`)
	})
	mux.HandleFunc("GET /auth-first/api/v1/webhooks/subscriptions/{id}/{more}", challenge401)
	// An article page's shape under /api/v1, answered as the page.
	mux.HandleFunc("GET /good/api/v1/2025/12/a/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", readCache)
		io.WriteString(w, "<!doctype html><title>a</title>")
	})
	// Creating a subscription from a body whose Content-Type is no media
	// type: refused (the good variant answers 401 to every POST), or
	// accepted by a lenient service.
	mux.HandleFunc("POST /lenient/api/v1/webhooks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://localhost:8080/api/v1/webhooks/subscriptions/sub_1")
		json(w, 201, "no-store", `{"id":"sub_1"}`)
	})
	mux.HandleFunc("POST /bad-challenge/api/v1/webhooks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		json(w, 401, "no-store", `{"error":{"code":"unauthorized","message":"A bearer token is required."}}`)
	})
	mux.HandleFunc("GET /good/feeds/all.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/feed+json")
		w.Header().Set("Cache-Control", readCache)
		io.WriteString(w, `{"version":"https://jsonfeed.org/version/1.1","title":"Invoicewire","items":[{"id":"a","content_html":"<p>x</p>"}]}`)
	})
	mux.HandleFunc("GET /good/api/v1/feeds/all.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/feed+json")
		w.Header().Set("Cache-Control", readCache)
		io.WriteString(w, `{"version":"https://jsonfeed.org/version/1.1","title":"Invoicewire","items":[]}`)
	})
	mux.HandleFunc("POST /good/ask", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		meta := `{"response_type":"answer","version":"0.55","request_id":"r1","locale":"en","took_ms":1,"summary_method":"extractive"}`
		io.WriteString(w, "event: start\ndata: {\"_meta\":"+meta+"}\n\n"+
			"event: result\ndata: {\"index\":0,\"item\":{\"@type\":\"SearchSummary\",\"text\":\"Quoted. Again.\",\"citations\":[\"http://localhost:8080/2025/12/a/\"],\"sentences\":[{\"text\":\"Quoted.\",\"url\":\"http://localhost:8080/2025/12/a/\"},{\"text\":\"Again.\",\"url\":\"http://localhost:8080/2025/12/a/\"}]}}\n\n"+
			"event: complete\ndata: {\"_meta\":"+meta+",\"total_items\":1}\n\n")
	})
	mux.HandleFunc("POST /bad-stream/ask", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "event: result\ndata: {\"index\":-1}\n\n")
	})
	// Serve each variant at its prefix with the prefix stripped, so the
	// checker sees the service's real paths.
	root := http.NewServeMux()
	for _, v := range []string{"good", "bad-field", "bad-type", "no-etag", "html-error", "wrong-code", "lenient", "no-allow", "bad-challenge", "bad-stream", "auth-first"} {
		root.Handle("/"+v+"/", http.StripPrefix("/"+v, prefixed(v, mux)))
	}
	return root
}

// prefixed puts the variant back in front of the path for the inner mux.
func prefixed(v string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + v + r.URL.Path
		h.ServeHTTP(w, r2)
	})
}

func TestChecker(t *testing.T) {
	srv := httptest.NewServer(fake())
	defer srv.Close()
	c := New(t)

	testCases := []struct {
		desc    string
		variant string
		method  string
		path    string
		body    string
		ctype   string
		// wantProblem is a fragment that must appear in one of the problems;
		// empty means the exchange must conform.
		wantProblem string
	}{
		{desc: "valid ServiceIndex", variant: "good", method: "GET", path: "/api/v1/"},
		{desc: "ServiceIndex with a missing and an extra field", variant: "bad-field", method: "GET", path: "/api/v1/", wantProblem: "response"},
		{desc: "ServiceIndex with wrong types", variant: "bad-type", method: "GET", path: "/api/v1/", wantProblem: "response"},
		{desc: "read without its required ETag", variant: "no-etag", method: "GET", path: "/api/v1/", wantProblem: "ETag"},
		{desc: "404 as JSON Error", variant: "good", method: "GET", path: "/api/v1/articles/nope"},
		{desc: "404 as plain text", variant: "html-error", method: "GET", path: "/api/v1/articles/nope", wantProblem: "application/json"},
		{desc: "error code that does not go with the status", variant: "wrong-code", method: "GET", path: "/api/v1/articles/nope", wantProblem: "does not go with status 404"},
		{desc: "valid list", variant: "good", method: "GET", path: "/api/v1/articles?limit=2"},
		{desc: "out-of-range limit refused with 400", variant: "good", method: "GET", path: "/api/v1/articles?limit=0"},
		{desc: "out-of-range limit accepted", variant: "lenient", method: "GET", path: "/api/v1/articles?limit=0", wantProblem: "the document rejects this request"},
		{desc: "405 with Allow for an undocumented method", variant: "good", method: "PUT", path: "/api/v1/articles"},
		{desc: "405 without Allow", variant: "no-allow", method: "PUT", path: "/api/v1/articles", wantProblem: "Allow"},
		{desc: "401 with the Bearer challenge", variant: "good", method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://example.com/h","events":["spec.updated"]}`, ctype: "application/json"},
		{desc: "401 with a Basic challenge", variant: "bad-challenge", method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://example.com/h","events":["spec.updated"]}`, ctype: "application/json", wantProblem: "WWW-Authenticate"},
		{desc: "site-root feed", variant: "good", method: "GET", path: "/feeds/all.json"},
		{desc: "site-root path served under /api/v1", variant: "good", method: "GET", path: "/api/v1/feeds/all.json", wantProblem: "unknown path"},
		{desc: "article page served under /api/v1", variant: "good", method: "GET", path: "/api/v1/2025/12/a/", wantProblem: "unknown path"},
		{desc: "API path with a trailing slash is the API path, not the article page /{year}/{month}/{slug}/", variant: "good", method: "GET", path: "/api/v1/webhooks/subscriptions/x/"},
		{desc: "unknown path below an owner route answers 404", variant: "good", method: "GET", path: "/api/v1/webhooks/subscriptions/x/y"},
		{desc: "unknown path below an owner route asks for credentials", variant: "auth-first", method: "GET", path: "/api/v1/webhooks/subscriptions/x/y", wantProblem: "unknown path"},
		{desc: "Content-Type without a subtype refused", variant: "good", method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://example.com/h","events":["spec.updated"]}`, ctype: "application"},
		{desc: "Content-Type without a subtype accepted", variant: "lenient", method: "POST", path: "/api/v1/webhooks", body: `{"url":"https://example.com/h","events":["spec.updated"]}`, ctype: "application", wantProblem: "not a media type"},
		{desc: "valid ask event stream", variant: "good", method: "POST", path: "/ask", body: `{"query":"peppol","prefer":{"streaming":true}}`, ctype: "application/json"},
		{desc: "ask event stream out of order and invalid", variant: "bad-stream", method: "POST", path: "/ask", body: `{"query":"peppol"}`, ctype: "application/json", wantProblem: "want start"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			// The checker sees the path without the variant prefix, as a
			// client of the real service would send it.
			req, err := http.NewRequest(tc.method, srv.URL+"/"+tc.variant+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Path = strings.TrimPrefix(req.URL.Path, "/"+tc.variant)
			probs := c.Problems(req, resp, got)
			if tc.wantProblem == "" {
				if len(probs) > 0 {
					t.Fatalf("want no problems, got:\n%s", strings.Join(probs, "\n"))
				}
				return
			}
			for _, p := range probs {
				if strings.Contains(p, tc.wantProblem) {
					t.Logf("found as expected:\n%s", strings.Join(probs, "\n"))
					return
				}
			}
			t.Fatalf("want a problem mentioning %q, got %d:\n%s", tc.wantProblem, len(probs), strings.Join(probs, "\n"))
		})
	}
}

func TestParseEvents(t *testing.T) {
	testCases := []struct {
		desc string
		in   string
		want []Event
	}{
		{desc: "named events", in: "event: start\ndata: {}\n\nevent: complete\ndata: {\"a\":1}\n\n", want: []Event{{"start", "{}"}, {"complete", `{"a":1}`}}},
		{desc: "default name, multi-line data, comments, CRLF", in: ": ping\r\ndata: a\r\ndata: b\r\n\r\n", want: []Event{{"message", "a\nb"}}},
		{desc: "last event without blank line", in: "event: x\ndata: 1", want: []Event{{"x", "1"}}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseEvents([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
