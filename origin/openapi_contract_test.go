package origin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// exchange sends one request to the origin, checks its status and validates
// the whole exchange against openapi.json. It returns the response and body.
func exchange(t *testing.T, c *contract.Checker, inst *origintest.Instance, method, path string, header http.Header, body string, wantStatus int) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	target := path
	if !strings.HasPrefix(path, "http") {
		target = inst.SiteRoot + path
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := inst.Server.Client()
	if wantStatus >= 300 && wantStatus < 400 {
		// A redirect is the answer judged, not where it leads.
		c := *client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		client = &c
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	if resp.StatusCode != wantStatus {
		t.Errorf("%s %s answered %d, want %d: %s", method, path, resp.StatusCode, wantStatus, got)
	}
	c.Check(t, req, resp, got)
	return resp, got
}

// TestContract validates every response of every built endpoint of the
// origin, success and error cases, against openapi.json through the full
// origin stack (real Redis, real HTTP). Whoever adds or changes an endpoint
// adds its cases here in the same change (docs/architecture.md).
func TestContract(t *testing.T) {
	inst := origintest.Start(t)
	c := contract.New(t)
	first := contenttest.Article(0)
	firstPath := first.Path()
	retracted := contenttest.Article(3)
	jsonBody := http.Header{"Content-Type": {"application/json"}}

	testCases := []struct {
		desc   string
		method string
		path   string
		header http.Header
		body   string
		want   int
	}{
		{desc: "service index", method: "GET", path: "/api/v1/", want: 200},
		{desc: "service index without the trailing slash", method: "GET", path: "/api/v1", want: 200},
		{desc: "articles, default page", method: "GET", path: "/api/v1/articles", want: 200},
		{desc: "articles, small page", method: "GET", path: "/api/v1/articles?limit=2", want: 200},
		{desc: "articles, every filter", method: "GET", path: "/api/v1/articles?section=mandates&audience=biz&country=be&limit=100&offset=0", want: 200},
		{desc: "articles, offset past the end", method: "GET", path: "/api/v1/articles?offset=10000", want: 200},
		{desc: "articles, filter without matches", method: "GET", path: "/api/v1/articles?country=zz", want: 200},
		{desc: "articles, unknown parameter ignored", method: "GET", path: "/api/v1/articles?colour=blue", want: 200},
		{desc: "articles, limit 0", method: "GET", path: "/api/v1/articles?limit=0", want: 400},
		{desc: "articles, limit 101", method: "GET", path: "/api/v1/articles?limit=101", want: 400},
		{desc: "articles, limit not a number", method: "GET", path: "/api/v1/articles?limit=ten", want: 400},
		{desc: "articles, negative offset", method: "GET", path: "/api/v1/articles?offset=-1", want: 400},
		{desc: "articles, offset over 10000", method: "GET", path: "/api/v1/articles?offset=10001", want: 400},
		{desc: "articles, unknown section", method: "GET", path: "/api/v1/articles?section=sport", want: 400},
		{desc: "articles, unknown audience", method: "GET", path: "/api/v1/articles?audience=cfo", want: 400},
		{desc: "articles, uppercase country", method: "GET", path: "/api/v1/articles?country=DE", want: 400},
		{desc: "articles, three-letter country", method: "GET", path: "/api/v1/articles?country=deu", want: 400},
		{desc: "articles, forged cursor", method: "GET", path: "/api/v1/articles?cursor=not-a-cursor", want: 400},
		{desc: "articles, parameter given twice", method: "GET", path: "/api/v1/articles?limit=2&limit=3", want: 400},
		{desc: "article", method: "GET", path: "/api/v1/articles/" + first.Slug, want: 200},
		{desc: "article, unknown slug", method: "GET", path: "/api/v1/articles/no-such-article", want: 404},
		{desc: "article, malformed slug", method: "GET", path: "/api/v1/articles/Not_A_Slug", want: 404},
		{desc: "article, retracted", method: "GET", path: "/api/v1/articles/" + retracted.Slug, want: 410},
		{desc: "feed catalog", method: "GET", path: "/api/v1/feeds", want: 200},
		{desc: "countries", method: "GET", path: "/api/v1/countries", want: 200},
		{desc: "country", method: "GET", path: "/api/v1/countries/de", want: 200},
		{desc: "country, uppercase code (docs/decisions.md, identifiers and links)", method: "GET", path: "/api/v1/countries/DE", want: 200},
		{desc: "country, unknown code", method: "GET", path: "/api/v1/countries/zz", want: 404},
		{desc: "country, three letters", method: "GET", path: "/api/v1/countries/deu", want: 400},
		{desc: "country, one letter", method: "GET", path: "/api/v1/countries/d", want: 400},
		{desc: "country, digits", method: "GET", path: "/api/v1/countries/12", want: 400},
		{desc: "specs", method: "GET", path: "/api/v1/specs", want: 200},
		{desc: "spec with every field", method: "GET", path: "/api/v1/specs/peppol-bis-billing-3", want: 200},
		{desc: "spec with null version and date", method: "GET", path: "/api/v1/specs/en-16931", want: 200},
		{desc: "spec, unknown slug", method: "GET", path: "/api/v1/specs/no-such-spec", want: 404},
		{desc: "sources", method: "GET", path: "/api/v1/sources", want: 200},
		{desc: "webhook catalog", method: "GET", path: "/api/v1/webhooks", want: 200},
		{desc: "subscribe without a token", method: "POST", path: "/api/v1/webhooks",
			header: http.Header{"Content-Type": {"application/json"}}, body: `{"url":"https://hooks.example.com/h","events":["article.published"]}`, want: 401},
		{desc: "subscribe with an unknown token", method: "POST", path: "/api/v1/webhooks",
			header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer not-a-token"}}, body: `{"url":"https://hooks.example.com/h","events":["article.published"]}`, want: 401},
		{desc: "write method on a read path without a token (docs/decisions.md, bearer tokens)", method: "PUT", path: "/api/v1/articles", want: 401},
		{desc: "DELETE on an article without a token (docs/decisions.md, bearer tokens)", method: "DELETE", path: "/api/v1/articles/" + first.Slug, want: 401},
		{desc: "unknown API path", method: "GET", path: "/api/v1/nothing-here", want: 404},
		{desc: "unknown site path", method: "GET", path: "/nothing/here", want: 404},
		{desc: "write method on a site path", method: "POST", path: "/openapi.json", want: 405},
		{desc: "OpenAPI document", method: "GET", path: "/openapi.json", want: 200},
		{desc: "markdown twin", method: "GET", path: firstPath + ".md", want: 200},
		{desc: "markdown twin, another month: a 301 to its own", method: "GET", path: "/2020/01/" + first.Slug + ".md", want: 301},
		{desc: "markdown twin, unknown slug", method: "GET", path: "/2026/11/no-such-article.md", want: 404},
		{desc: "markdown twin, retracted", method: "GET", path: retracted.Path() + ".md", want: 410},
		{desc: "preflight", method: "OPTIONS", path: "/api/v1/articles",
			header: http.Header{"Origin": {"https://reader.example"}, "Access-Control-Request-Method": {"GET"}}, want: 204},
		{desc: "HEAD of a read", method: "HEAD", path: "/api/v1/countries", want: 200},
		{desc: "article, slug with an encoded letter (docs/decisions.md, One address per resource)", method: "GET", path: "/api/v1/articles/%61rticle-00000", want: 301},
		{desc: "article, slug with an encoded letter, HEAD", method: "HEAD", path: "/api/v1/articles/%61rticle-00000", want: 301},
		{desc: "article, encoded slash after the slug", method: "GET", path: "/api/v1/articles/" + first.Slug + "%2F", want: 404},
		{desc: "article, encoded spelling of an unknown slug", method: "GET", path: "/api/v1/articles/%6Eo-such-article", want: 404},
		{desc: "articles, collection with an encoded letter", method: "GET", path: "/api/v1/%61rticles?limit=2", want: 301},
		{desc: "sources, encoded slash after the collection", method: "GET", path: "/api/v1/sources%2F", want: 404},
		{desc: "API, encoded slash in the prefix", method: "GET", path: "/api%2Fv1/sources", want: 404},
		{desc: "country, encoded letter", method: "GET", path: "/api/v1/countries/%64e", want: 301},
		{desc: "country, encoded slash after the code", method: "GET", path: "/api/v1/countries/de%2F", want: 404},
		{desc: "spec, dot-dot segment", method: "GET", path: "/api/v1/specs/x/../en-16931", want: 301},
		{desc: "spec, encoded slash after the slug", method: "GET", path: "/api/v1/specs/en-16931%2F", want: 404},
		{desc: "write to an encoded spelling without a token", method: "POST", path: "/api/v1/%77ebhooks",
			header: jsonBody, body: `{"url":"https://hooks.example.com/h","events":["article.published"]}`, want: 401},
		{desc: "ask, JSON", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol BIS Billing in Germany"}`, want: 200},
		{desc: "ask, NLWeb query object and max_results", method: "POST", path: "/ask", header: jsonBody, body: `{"query":{"text":"e-invoicing in Belgium"},"locale":"en-GB","prefer":{"max_results":2}}`, want: 200},
		{desc: "ask, stream by Accept", method: "POST", path: "/ask",
			header: http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}, body: `{"query":"Peppol BIS Billing in Germany"}`, want: 200},
		{desc: "ask, stream by prefer.streaming", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"synthetic article in Poland","prefer":{"streaming":true}}`, want: 200},
		{desc: "ask, follow-up in context.prev, summarize mode", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"and for smaller companies?","context":{"prev":["When must Polish businesses issue e-invoices?"]},"prefer":{"mode":"summarize"}}`, want: 200},
		{desc: "ask, flat prev and generate_mode", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"and what about Peppol?","prev":"e-invoicing in Belgium","generate_mode":"generate"}`, want: 200},
		{desc: "ask, unknown mode", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol","prefer":{"mode":"poetry"}}`, want: 400},
		{desc: "ask, prev not a list", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol","context":{"prev":7}}`, want: 400},
		{desc: "ask, zero results", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"quantum chromodynamics"}`, want: 200},
		{desc: "ask, zero results streamed", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"quantum chromodynamics","prefer":{"streaming":true}}`, want: 200},
		{desc: "ask, locale without content", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol","locale":"de"}`, want: 200},
		{desc: "ask, missing query", method: "POST", path: "/ask", header: jsonBody, body: `{}`, want: 400},
		{desc: "ask, whitespace-only query", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"   "}`, want: 400},
		{desc: "ask, non-string query", method: "POST", path: "/ask", header: jsonBody, body: `{"query":42}`, want: 400},
		{desc: "ask, overlong query", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"` + strings.Repeat("x", 501) + `"}`, want: 400},
		{desc: "ask, invalid JSON", method: "POST", path: "/ask", header: jsonBody, body: `{"query":`, want: 400},
		{desc: "ask, max_results out of range", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol","prefer":{"max_results":51}}`, want: 400},
		{desc: "ask, max_results 0 is out of range, not the default", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol","prefer":{"max_results":0}}`, want: 400},
		{desc: "ask, prefer.streaming false wins over Accept: text/event-stream", method: "POST", path: "/ask",
			header: http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}, body: `{"query":"Peppol BIS Billing in Germany","prefer":{"streaming":false}}`, want: 200},
		{desc: "ask, bad input with Accept: text/event-stream is still JSON", method: "POST", path: "/ask",
			header: http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}, body: `{"query":""}`, want: 400},
		{desc: "ask, not JSON", method: "POST", path: "/ask", header: http.Header{"Content-Type": {"text/plain"}}, body: `query`, want: 415},
		{desc: "ask, body over 16 KiB", method: "POST", path: "/ask", header: jsonBody, body: `{"query":"Peppol","pad":"` + strings.Repeat("x", 16<<10) + `"}`, want: 413},
		{desc: "ask, GET", method: "GET", path: "/ask", want: 405},
		{desc: "ask, preflight", method: "OPTIONS", path: "/ask",
			header: http.Header{"Origin": {"https://reader.example"}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type"}}, want: 204},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			exchange(t, c, inst, tc.method, tc.path, tc.header, tc.body, tc.want)
		})
	}
}

// TestContractConditionalReads checks that every cacheable read answers 304
// to its own ETag, 412 to an If-Match naming another, and that both conform
// (docs/decisions.md, cache headers).
func TestContractConditionalReads(t *testing.T) {
	inst := origintest.Start(t)
	c := contract.New(t)
	for _, path := range []string{
		"/api/v1/", "/api/v1/articles?limit=2", "/api/v1/articles/" + contenttest.Article(0).Slug,
		"/api/v1/feeds", "/api/v1/countries", "/api/v1/countries/de", "/api/v1/specs",
		"/api/v1/specs/peppol-bis-billing-3", "/api/v1/sources", "/api/v1/webhooks",
		"/openapi.json", contenttest.Article(0).Path() + ".md",
	} {
		t.Run(path, func(t *testing.T) {
			resp, _ := exchange(t, c, inst, "GET", path, nil, "", 200)
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			exchange(t, c, inst, "GET", path, http.Header{"If-None-Match": {etag}}, "", 304)
			exchange(t, c, inst, "GET", path, http.Header{"If-None-Match": {`"other", ` + etag}}, "", 304)
			exchange(t, c, inst, "GET", path, http.Header{"If-None-Match": {`"stale"`}}, "", 200)
			// RFC 9110 §13.1.1: a false If-Match is the documented 412.
			exchange(t, c, inst, "GET", path, http.Header{"If-Match": {`"nomatch"`}}, "", 412)
			exchange(t, c, inst, "GET", path, http.Header{"If-Match": {etag}}, "", 200)
		})
	}
}

// TestContractIfModifiedSince checks Last-Modified and If-Modified-Since on
// the answers that show one article (RFC 9110 §8.8.2, §13.1.3): the date is
// the article's updated_at, else published_at; a date no earlier is a
// conforming 304 without a body, an earlier or invalid one the full 200,
// If-None-Match wins when both are sent, and answers about several articles
// carry no Last-Modified, so If-Modified-Since never makes them 304.
func TestContractIfModifiedSince(t *testing.T) {
	inst := origintest.Start(t)
	c := contract.New(t)
	a := contenttest.Article(0)
	lastMod := a.LastModified().UTC().Truncate(time.Second)
	for _, path := range []string{"/api/v1/articles/" + a.Slug, a.Path() + "/", a.Path() + ".md"} {
		t.Run(path, func(t *testing.T) {
			resp, body := exchange(t, c, inst, "GET", path, nil, "", 200)
			if got := resp.Header.Get("Last-Modified"); got != lastMod.Format(http.TimeFormat) {
				t.Fatalf("Last-Modified %q; want %q", got, lastMod.Format(http.TimeFormat))
			}
			etag := resp.Header.Get("ETag")
			testCases := []struct {
				desc   string
				header http.Header
				status int
			}{
				{desc: "the same date", header: http.Header{"If-Modified-Since": {lastMod.Format(http.TimeFormat)}}, status: 304},
				{desc: "a later date", header: http.Header{"If-Modified-Since": {lastMod.Add(time.Hour).Format(http.TimeFormat)}}, status: 304},
				{desc: "an obsolete date format", header: http.Header{"If-Modified-Since": {lastMod.Format(time.RFC850)}}, status: 304},
				{desc: "an earlier date", header: http.Header{"If-Modified-Since": {lastMod.Add(-time.Second).Format(http.TimeFormat)}}, status: 200},
				{desc: "an invalid date", header: http.Header{"If-Modified-Since": {"yesterday"}}, status: 200},
				{desc: "a stale If-None-Match wins over a matching date", header: http.Header{"If-None-Match": {`"stale"`}, "If-Modified-Since": {lastMod.Format(http.TimeFormat)}}, status: 200},
				{desc: "a matching If-None-Match wins over an earlier date", header: http.Header{"If-None-Match": {etag}, "If-Modified-Since": {lastMod.Add(-time.Hour).Format(http.TimeFormat)}}, status: 304},
			}
			for _, tc := range testCases {
				t.Run(tc.desc, func(t *testing.T) {
					resp, got := exchange(t, c, inst, "GET", path, tc.header, "", tc.status)
					if tc.status == 304 && resp.Header.Get("Last-Modified") != lastMod.Format(http.TimeFormat) {
						t.Errorf("304 Last-Modified %q", resp.Header.Get("Last-Modified"))
					}
					if tc.status == 200 && string(got) != string(body) {
						t.Errorf("the 200 differs from the first answer")
					}
				})
			}
		})
	}
	// A feed's date is the last change under its keys (docs/decisions.md,
	// "A feed's Last-Modified"), sent once the clock has passed it: the
	// burst of changes of a sync dates them ahead of the clock.
	feedKeys := []string{store.TagFeeds, store.TagCountries, store.TagNewsletter}
	changed, err := inst.Store.ChangedAt(context.Background(), feedKeys...)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(changed.Add(time.Second)))
	for _, path := range []string{"/feeds/all.xml", "/feeds/section/network.json", "/feeds/country/de.xml", "/feeds/newsletter.xml"} {
		t.Run(path, func(t *testing.T) {
			resp, body := exchange(t, c, inst, "GET", path, nil, "", 200)
			lm, err := http.ParseTime(resp.Header.Get("Last-Modified"))
			if err != nil || lm.After(changed) {
				t.Fatalf("Last-Modified %q (%v); the last change under %v is %v", resp.Header.Get("Last-Modified"), err, feedKeys, changed)
			}
			testCases := []struct {
				desc   string
				header http.Header
				status int
			}{
				{desc: "the same date", header: http.Header{"If-Modified-Since": {lm.Format(http.TimeFormat)}}, status: 304},
				{desc: "a later date", header: http.Header{"If-Modified-Since": {lm.Add(time.Minute).Format(http.TimeFormat)}}, status: 304},
				{desc: "an earlier date", header: http.Header{"If-Modified-Since": {lm.Add(-time.Second).Format(http.TimeFormat)}}, status: 200},
				{desc: "an unmodified-since earlier date fails", header: http.Header{"If-Unmodified-Since": {lm.Add(-time.Second).Format(http.TimeFormat)}}, status: 412},
			}
			for _, tc := range testCases {
				t.Run(tc.desc, func(t *testing.T) {
					resp, got := exchange(t, c, inst, "GET", path, tc.header, "", tc.status)
					if tc.status == 304 && resp.Header.Get("Last-Modified") != lm.Format(http.TimeFormat) {
						t.Errorf("304 Last-Modified %q", resp.Header.Get("Last-Modified"))
					}
					if tc.status == 200 && string(got) != string(body) {
						t.Errorf("the 200 differs from the first answer")
					}
				})
			}
		})
	}
	for _, path := range []string{"/api/v1/articles?limit=2", "/api/v1/countries", "/api/v1/"} {
		resp, _ := exchange(t, c, inst, "GET", path, http.Header{"If-Modified-Since": {"Mon, 01 Jan 2035 00:00:00 GMT"}}, "", 200)
		if lm := resp.Header.Get("Last-Modified"); lm != "" {
			t.Errorf("%s carries Last-Modified %q", path, lm)
		}
	}
}

// TestContractPagination follows next links to the end: every page
// conforms, and the last one has next null (docs/decisions.md, pagination).
func TestContractPagination(t *testing.T) {
	inst := origintest.Start(t)
	c := contract.New(t)
	next := inst.BaseURL + "/articles?limit=7"
	seen := map[string]bool{}
	for pages := 0; next != ""; pages++ {
		if pages > origintest.Articles {
			t.Fatal("pagination does not end")
		}
		_, body := exchange(t, c, inst, "GET", next, nil, "", 200)
		var page struct {
			Count int     `json:"count"`
			Next  *string `json:"next"`
			Items []struct {
				Slug string `json:"slug"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if seen[it.Slug] {
				t.Errorf("%s appears on two pages", it.Slug)
			}
			seen[it.Slug] = true
		}
		next = ""
		if page.Next != nil {
			next = *page.Next
		}
	}
	// One article is retracted and must not be listed.
	if want := origintest.Articles - 1; len(seen) != want {
		t.Errorf("paging saw %d articles, want %d", len(seen), want)
	}
	if seen[origintest.RetractedSlug] {
		t.Error("the retracted article is listed")
	}
}

// TestContractWrites validates every answer of the write surfaces — agent
// auth (docs/decisions.md, agent auth), idempotency (docs/decisions.md, Idempotency-Key), subscriptions and their owner routes (docs/decisions.md, subscriptions)
// — success and error cases, against openapi.json.
func TestContractWrites(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	c := contract.New(t)
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	formCT := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	with := func(h http.Header, kv ...string) http.Header {
		out := h.Clone()
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}

	_, body := exchange(t, c, inst, "POST", "/api/v1/agent-auth/register", jsonCT, `{"client_name":"contract agent","contact":"ops@example.com"}`, 201)
	var reg registered
	json.Unmarshal(body, &reg)
	_, body = exchange(t, c, inst, "POST", "/api/v1/agent-auth/claim", jsonCT, `{"client_id":"`+reg.ClientID+`"}`, 200)
	var tok accessToken
	json.Unmarshal(body, &tok)
	auth := with(jsonCT, "Authorization", "Bearer "+tok.AccessToken)
	readAuth := http.Header{"Authorization": {"Bearer " + tok.AccessToken}}
	_, body = exchange(t, c, inst, "POST", "/api/v1/webhooks?test=true", with(auth, "Idempotency-Key", "contract-1"),
		`{"url":"http://127.0.0.1:9/hook","events":["article.published","newsletter.sent"]}`, 201)
	var sub struct{ ID string }
	json.Unmarshal(body, &sub)
	other := register(t, inst, "anonymous")
	client := "/api/v1/agent-auth/register/" + other.ClientID
	ratHeader := http.Header{"Authorization": {"Bearer " + other.RegistrationAccessToken}}
	revokable := claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`"}`).AccessToken
	sub2 := `{"url":"https://127.0.0.1:8443/hook","events":["spec.updated"],"secret":"0123456789abcdef-secret"}`
	// A subscription the operators disabled (iwctl subscriptions disable):
	// its owner reads it, and lists it, with status "disabled".
	_, body = exchange(t, c, inst, "POST", "/api/v1/webhooks", auth, `{"url":"http://127.0.0.1:9/disabled","events":["spec.updated"]}`, 201)
	var disabled struct{ ID string }
	json.Unmarshal(body, &disabled)
	if res, _, err := webhook.NewStore(inst.Redis.Client()).Disable(context.Background(), disabled.ID, webhook.ReasonOperator, time.Now()); err != nil || res != webhook.SwitchDone {
		t.Fatalf("disabling %s: %q, %v", disabled.ID, res, err)
	}

	testCases := []struct {
		desc   string
		method string
		path   string
		header http.Header
		body   string
		want   int
		// wantBody is in the answer's body, when set.
		wantBody string
	}{
		{desc: "registration metadata", method: "GET", path: "/api/v1/agent-auth/register", want: 200},
		{desc: "register an identity_assertion client", method: "POST", path: "/api/v1/agent-auth/register", header: jsonCT, body: `{"client_name":"idp agent","identity_type":"identity_assertion","assertion_types_supported":["urn:ietf:params:oauth:token-type:id-jag"]}`, want: 201},
		{desc: "register, replayed", method: "POST", path: "/api/v1/agent-auth/register", header: with(jsonCT, "Idempotency-Key", "reg-1"), body: `{"client_name":"a"}`, want: 201},
		{desc: "register, replay", method: "POST", path: "/api/v1/agent-auth/register", header: with(jsonCT, "Idempotency-Key", "reg-1"), body: `{"client_name":"a"}`, want: 201},
		{desc: "register, key reused with another body", method: "POST", path: "/api/v1/agent-auth/register", header: with(jsonCT, "Idempotency-Key", "reg-1"), body: `{"client_name":"b"}`, want: 422},
		{desc: "register, contact over 254 characters", method: "POST", path: "/api/v1/agent-auth/register", header: jsonCT, body: `{"client_name":"a","contact":"ops@` + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + `.com"}`, want: 400, wantBody: "254"},
		{desc: "register, contact local part over 64 octets", method: "POST", path: "/api/v1/agent-auth/register", header: jsonCT, body: `{"client_name":"a","contact":"` + strings.Repeat("o", 65) + `@example.com"}`, want: 400, wantBody: "64"},
		{desc: "register, client_name missing", method: "POST", path: "/api/v1/agent-auth/register", header: jsonCT, body: `{}`, want: 400},
		{desc: "register, malformed JSON", method: "POST", path: "/api/v1/agent-auth/register", header: jsonCT, body: `{`, want: 400},
		{desc: "register, text/plain", method: "POST", path: "/api/v1/agent-auth/register", header: http.Header{"Content-Type": {"text/plain"}}, body: `x`, want: 415},
		{desc: "register, oversized", method: "POST", path: "/api/v1/agent-auth/register", header: jsonCT, body: `{"client_name":"` + strings.Repeat("x", 70<<10) + `"}`, want: 413},
		{desc: "read client", method: "GET", path: client, header: ratHeader, want: 200},
		{desc: "read client without a token", method: "GET", path: client, want: 401},
		{desc: "read client with a wrong token", method: "GET", path: client, header: http.Header{"Authorization": {"Bearer nope"}}, want: 401},
		{desc: "read an unknown client", method: "GET", path: "/api/v1/agent-auth/register/cli_nobody", header: ratHeader, want: 401},
		{desc: "claim, form body", method: "POST", path: "/api/v1/agent-auth/claim", header: formCT, body: "client_id=" + reg.ClientID, want: 200},
		{desc: "claim, unknown client", method: "POST", path: "/api/v1/agent-auth/claim", header: jsonCT, body: `{"client_id":"cli_nobody"}`, want: 400},
		{desc: "claim, unsupported grant", method: "POST", path: "/api/v1/agent-auth/claim", header: formCT, body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&client_id=" + reg.ClientID, want: 400},
		{desc: "claim, text/plain", method: "POST", path: "/api/v1/agent-auth/claim", header: http.Header{"Content-Type": {"text/plain"}}, body: "x", want: 415},
		{desc: "revoke, JSON", method: "POST", path: "/api/v1/agent-auth/revoke", header: jsonCT, body: `{"token":"` + revokable + `","token_type_hint":"access_token"}`, want: 200},
		{desc: "revoke, form, unknown token", method: "POST", path: "/api/v1/agent-auth/revoke", header: formCT, body: "token=not-a-token", want: 200},
		{desc: "revoke, an iwr_ token that does not exist", method: "POST", path: "/api/v1/agent-auth/revoke", header: jsonCT, body: `{"token":"iwr_doesnotexist"}`, want: 200},
		{desc: "revoke, token missing", method: "POST", path: "/api/v1/agent-auth/revoke", header: jsonCT, body: `{}`, want: 400},
		{desc: "subscribe, replay", method: "POST", path: "/api/v1/webhooks?test=true", header: with(auth, "Idempotency-Key", "contract-1"), body: `{"url":"http://127.0.0.1:9/hook","events":["article.published","newsletter.sent"]}`, want: 201},
		{desc: "subscribe, key reused with only the query changed", method: "POST", path: "/api/v1/webhooks", header: with(auth, "Idempotency-Key", "contract-1"), body: `{"url":"http://127.0.0.1:9/hook","events":["article.published","newsletter.sent"]}`, want: 422, wantBody: "query string"},
		{desc: "subscribe with a secret", method: "POST", path: "/api/v1/webhooks", header: auth, body: sub2, want: 201},
		{desc: "subscribe, key reused with another body", method: "POST", path: "/api/v1/webhooks", header: with(auth, "Idempotency-Key", "contract-1"), body: sub2, want: 422},
		{desc: "subscribe, 256-character key", method: "POST", path: "/api/v1/webhooks", header: with(auth, "Idempotency-Key", strings.Repeat("k", 256)), body: sub2, want: 400},
		{desc: "subscribe, a member given twice", method: "POST", path: "/api/v1/webhooks", header: auth, body: `{"url":"https://127.0.0.1/a","url":"https://127.0.0.1/b","events":["spec.updated"]}`, want: 400, wantBody: `\"url\" more than once`},
		{desc: "subscribe, unknown kind", method: "POST", path: "/api/v1/webhooks", header: auth, body: `{"url":"https://127.0.0.1/x","events":["article.liked"]}`, want: 400},
		{desc: "subscribe, private address", method: "POST", path: "/api/v1/webhooks", header: auth, body: `{"url":"https://10.0.0.1/x","events":["spec.updated"]}`, want: 400},
		{desc: "subscribe, a space, quotes and non-ASCII in the url's query: stored percent-encoded, a uri", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/raw?q=a b&x=\"y\"&c=€","events":["spec.updated"]}`, want: 201, wantBody: `?q=a%20b`},
		{desc: "subscribe, a % that is no escape in the url's query", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/raw?discount=5%","events":["spec.updated"]}`, want: 400, wantBody: "not a percent-encoded byte"},
		{desc: "subscribe, a secret of 16 three-byte characters", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/euro","events":["spec.updated"],"secret":"` + strings.Repeat("€", 16) + `"}`, want: 201},
		{desc: "subscribe, a secret of 6 three-byte characters (18 bytes)", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/euro","events":["spec.updated"],"secret":"€€€€€€"}`, want: 400, wantBody: "at least 16 characters"},
		{desc: "subscribe, a secret of 342 three-byte characters (1026 bytes)", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/euro","events":["spec.updated"],"secret":"` + strings.Repeat("€", 342) + `"}`, want: 201},
		{desc: "subscribe, a secret of 1025 characters", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/euro","events":["spec.updated"],"secret":"` + strings.Repeat("s", 1025) + `"}`, want: 400, wantBody: "at most 1024 characters"},
		{desc: "subscribe, a url of 2048 characters, most of them three bytes", method: "POST", path: "/api/v1/webhooks", header: auth,
			body: `{"url":"http://127.0.0.1:9/` + strings.Repeat("€", 2048-len("http://127.0.0.1:9/")) + `","events":["spec.updated"]}`, want: 201},
		{desc: "subscribe, body not UTF-8", method: "POST", path: "/api/v1/webhooks", header: auth, body: "{\"url\":\"http://127.0.0.1:9301/\xff\",\"events\":[\"spec.updated\"]}", want: 400},
		{desc: "subscribe, form body", method: "POST", path: "/api/v1/webhooks", header: with(formCT, "Authorization", "Bearer "+tok.AccessToken), body: "url=x", want: 415},
		{desc: "subscribe, oversized", method: "POST", path: "/api/v1/webhooks", header: auth, body: `{"url":"` + strings.Repeat("a", 70<<10) + `"}`, want: 413},
		{desc: "subscribe, revoked token", method: "POST", path: "/api/v1/webhooks", header: with(jsonCT, "Authorization", "Bearer "+revokable), body: sub2, want: 401},
		{desc: "list subscriptions", method: "GET", path: "/api/v1/webhooks/subscriptions", header: readAuth, want: 200},
		{desc: "list subscriptions without a token", method: "GET", path: "/api/v1/webhooks/subscriptions", want: 401},
		{desc: "read a subscription", method: "GET", path: "/api/v1/webhooks/subscriptions/" + sub.ID, header: readAuth, want: 200},
		{desc: "read a subscription the operators disabled", method: "GET", path: "/api/v1/webhooks/subscriptions/" + disabled.ID, header: readAuth, want: 200, wantBody: `"status":"disabled"`},
		{desc: "list subscriptions, one disabled", method: "GET", path: "/api/v1/webhooks/subscriptions", header: readAuth, want: 200, wantBody: `"status":"disabled"`},
		{desc: "read an unknown subscription", method: "GET", path: "/api/v1/webhooks/subscriptions/sub_nothing", header: readAuth, want: 404},
		{desc: "read a subscription without a token", method: "GET", path: "/api/v1/webhooks/subscriptions/" + sub.ID, want: 401},
		{desc: "PUT on a subscription with a token", method: "PUT", path: "/api/v1/webhooks/subscriptions/" + sub.ID, header: readAuth, want: 405},
		{desc: "delete a subscription", method: "DELETE", path: "/api/v1/webhooks/subscriptions/" + sub.ID, header: readAuth, want: 204},
		{desc: "delete it again", method: "DELETE", path: "/api/v1/webhooks/subscriptions/" + sub.ID, header: readAuth, want: 404},
		{desc: "delete client without a token", method: "DELETE", path: client, want: 401},
		{desc: "delete client", method: "DELETE", path: client, header: ratHeader, want: 204},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			_, body := exchange(t, c, inst, tc.method, tc.path, tc.header, tc.body, tc.want)
			if !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("the body %s lacks %s", body, tc.wantBody)
			}
		})
	}
}

// TestContractSite validates the site surfaces of issue 6 — pages, feeds,
// sitemaps, the developer portal and its documents, the discovery documents
// and the MCP endpoint — success and error cases. The home page at {site_root}/
// is not in the document: its path "/" is the service index's under
// {base_url}, and OpenAPI allows each path once (origin/site tests cover it).
func TestContractSite(t *testing.T) {
	inst := origintest.Start(t)
	c := contract.New(t)
	week := content.ISOWeek(contenttest.Base)
	if _, err := inst.Publisher.SendNewsletter(context.Background(), week, nil); err != nil {
		t.Fatal(err)
	}
	first := contenttest.Article(0)
	retracted := contenttest.Article(3)
	mcpHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"contract","version":"1"}}}`

	testCases := []struct {
		desc   string
		method string
		path   string
		header http.Header
		body   string
		want   int
	}{
		{desc: "article page", method: "GET", path: first.Path() + "/", want: 200},
		{desc: "article page, another month: a 301 to its own", method: "GET", path: "/2020/01/" + first.Slug + "/", want: 301},
		{desc: "article page, month 13", method: "GET", path: "/2026/13/" + first.Slug + "/", want: 404},
		{desc: "article page, unknown slug", method: "GET", path: "/2026/11/no-such-article/", want: 404},
		{desc: "article page, retracted", method: "GET", path: retracted.Path() + "/", want: 410},
		{desc: "article page, overlong slug", method: "GET", path: "/2026/11/" + strings.Repeat("a", 200) + "/", want: 404},
		{desc: "section page", method: "GET", path: "/section/mandates/", want: 200},
		{desc: "section page 2", method: "GET", path: "/section/mandates/?page=1", want: 200},
		{desc: "section page, unknown section", method: "GET", path: "/section/sport/", want: 404},
		{desc: "section page, page 0", method: "GET", path: "/section/mandates/?page=0", want: 400},
		{desc: "section page, page past the end", method: "GET", path: "/section/mandates/?page=50", want: 404},
		{desc: "audience page", method: "GET", path: "/audience/ap/", want: 200},
		{desc: "audience page, page not a number", method: "GET", path: "/audience/ap/?page=two", want: 400},
		{desc: "audience page, unknown audience", method: "GET", path: "/audience/cfo/", want: 404},
		{desc: "country page", method: "GET", path: "/countries/de/", want: 200},
		{desc: "article page, slug with an encoded letter (docs/decisions.md, One address per resource)", method: "GET", path: "/2026/11/%61rticle-00000/", want: 301},
		{desc: "article page, trailing slash encoded", method: "GET", path: first.Path() + "%2F", want: 404},
		{desc: "article page, encoded slash after the year", method: "GET", path: "/2026%2F11/" + first.Slug + "/", want: 404},
		{desc: "article page, dot-dot segment", method: "GET", path: "/2026/11/x/../" + first.Slug + "/", want: 301},
		{desc: "markdown twin, encoded dot", method: "GET", path: first.Path() + "%2Emd", want: 301},
		{desc: "country page, encoded letter", method: "GET", path: "/countries/%64e/", want: 301},
		{desc: "country page, trailing slash encoded", method: "GET", path: "/countries/de%2F", want: 404},
		{desc: "feed, encoded dot", method: "GET", path: "/feeds/all%2Exml", want: 301},
		{desc: "feed, encoded slash", method: "GET", path: "/feeds%2Fall.xml", want: 404},
		{desc: "home, encoded dot-dot", method: "GET", path: "/%2e%2e/", want: 301},
		{desc: "country page, uppercase (docs/decisions.md, identifiers and links)", method: "GET", path: "/countries/DE/", want: 301},
		{desc: "country page, unknown country", method: "GET", path: "/countries/zz/", want: 404},
		{desc: "country page, three letters", method: "GET", path: "/countries/deu/", want: 400},
		{desc: "newsletter page", method: "GET", path: "/newsletter/" + week + "/", want: 200},
		{desc: "newsletter page, unsent week", method: "GET", path: "/newsletter/2020-w01/", want: 404},
		{desc: "newsletter page, week 99", method: "GET", path: "/newsletter/2026-w99/", want: 404},
		{desc: "mandate timeline", method: "GET", path: "/mandates", want: 200},
		{desc: "mandate timeline, filtered", method: "GET", path: "/mandates?region=eu&obligation=issue", want: 200},
		{desc: "mandate timeline, filter without milestones", method: "GET", path: "/mandates?region=americas", want: 200},
		{desc: "mandate timeline, unknown region", method: "GET", path: "/mandates?region=mars", want: 400},
		{desc: "mandate timeline, unknown obligation", method: "GET", path: "/mandates?obligation=pay", want: 400},
		{desc: "mandate timeline, region twice", method: "GET", path: "/mandates?region=eu&region=americas", want: 400},
		{desc: "mandate timeline as markdown", method: "GET", path: "/mandates.md?obligation=report", want: 200},
		{desc: "mandate timeline as markdown, bad filter", method: "GET", path: "/mandates.md?obligation=", want: 400},
		{desc: "deadline calendar", method: "GET", path: "/calendar/mandates.ics", want: 200},
		{desc: "deadline calendar, one country", method: "GET", path: "/calendar/mandates.ics?country=de", want: 200},
		{desc: "deadline calendar, tracked country without milestones", method: "GET", path: "/calendar/mandates.ics?country=jp", want: 404},
		{desc: "deadline calendar, untracked country", method: "GET", path: "/calendar/mandates.ics?country=zz", want: 400},
		{desc: "deadline calendar, uppercase country", method: "GET", path: "/calendar/mandates.ics?country=DE", want: 400},
		{desc: "deadline calendar, three letters", method: "GET", path: "/calendar/mandates.ics?country=deu", want: 400},
		{desc: "deadline calendar, country twice", method: "GET", path: "/calendar/mandates.ics?country=de&country=be", want: 400},
		{desc: "search form", method: "GET", path: "/search", want: 200},
		{desc: "search form, blank q", method: "GET", path: "/search?q=%20%20", want: 200},
		{desc: "search", method: "GET", path: "/search?q=peppol+invoice", want: 200},
		{desc: "search, markup in q", method: "GET", path: "/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E", want: 200},
		{desc: "search, q of 500 characters", method: "GET", path: "/search?q=" + strings.Repeat("e", 500), want: 200},
		{desc: "search, q over 500 characters", method: "GET", path: "/search?q=" + strings.Repeat("e", 501), want: 400},
		{desc: "search, q twice", method: "GET", path: "/search?q=a&q=b", want: 400},
		{desc: "search, page past the end", method: "GET", path: "/search?q=peppol&page=6", want: 404},
		{desc: "search form, page 2", method: "GET", path: "/search?page=2", want: 404},
		{desc: "search, page 0", method: "GET", path: "/search?q=peppol&page=0", want: 400},
		{desc: "OpenSearch description", method: "GET", path: "/opensearch.xml", want: 200},
		{desc: "stylesheet", method: "GET", path: "/assets/site.css?v=1", want: 200},
		{desc: "icon", method: "GET", path: "/assets/icon.svg", want: 200},
		{desc: "favicon", method: "GET", path: "/favicon.ico", want: 200},
		{desc: "unknown asset", method: "GET", path: "/assets/site.js", want: 404},
		{desc: "master feed RSS", method: "GET", path: "/feeds/all.xml", want: 200},
		{desc: "master feed JSON", method: "GET", path: "/feeds/all.json", want: 200},
		{desc: "section feed RSS", method: "GET", path: "/feeds/section/specs.xml", want: 200},
		{desc: "section feed JSON", method: "GET", path: "/feeds/section/specs.json", want: 200},
		{desc: "section feed, unknown section", method: "GET", path: "/feeds/section/sport.json", want: 404},
		{desc: "audience feed RSS", method: "GET", path: "/feeds/audience/vendor.xml", want: 200},
		{desc: "audience feed JSON", method: "GET", path: "/feeds/audience/vendor.json", want: 200},
		{desc: "country feed RSS", method: "GET", path: "/feeds/country/pl.xml", want: 200},
		{desc: "country feed JSON", method: "GET", path: "/feeds/country/pl.json", want: 200},
		{desc: "country feed, untracked country", method: "GET", path: "/feeds/country/zz.xml", want: 404},
		{desc: "newsletter feed RSS", method: "GET", path: "/feeds/newsletter.xml", want: 200},
		{desc: "newsletter feed JSON", method: "GET", path: "/feeds/newsletter.json", want: 200},
		{desc: "sitemap index", method: "GET", path: "/sitemap-index.xml", want: 200},
		{desc: "pages sitemap", method: "GET", path: "/sitemaps/pages.xml", want: 200},
		{desc: "article sitemap", method: "GET", path: "/sitemaps/articles-1.xml", want: 200},
		{desc: "article sitemap past the end", method: "GET", path: "/sitemaps/articles-2.xml", want: 404},
		{desc: "news sitemap", method: "GET", path: "/news-sitemap.xml", want: 200},
		{desc: "developer portal", method: "GET", path: "/developers", want: 200},
		{desc: "auth.md", method: "GET", path: "/auth.md", want: 200},
		{desc: "llms.txt", method: "GET", path: "/llms.txt", want: 200},
		{desc: "robots.txt", method: "GET", path: "/robots.txt", want: 200},
		{desc: "protected resource metadata", method: "GET", path: "/.well-known/oauth-protected-resource", want: 200},
		{desc: "authorization server metadata", method: "GET", path: "/.well-known/oauth-authorization-server", want: 200},
		{desc: "signatures directory", method: "GET", path: "/.well-known/http-message-signatures-directory", want: 200},
		{desc: "signatures directory, POST", method: "POST", path: "/.well-known/http-message-signatures-directory", want: 405},
		{desc: "MCP server card", method: "GET", path: "/.well-known/mcp/server-card.json", want: 200},
		{desc: "MCP server card, reserved location", method: "GET", path: "/mcp/server-card", want: 200},
		{desc: "AI catalog", method: "GET", path: "/.well-known/ai-catalog.json", want: 200},
		{desc: "agent card", method: "GET", path: "/.well-known/agent-card.json", want: 200},
		{desc: "discovery document, POST", method: "POST", path: "/.well-known/agent-card.json", want: 405},
		{desc: "GET of a POST-only endpoint the discovery documents name (docs/decisions.md, agent surfaces)", method: "GET", path: "/api/v1/agent-auth/claim", want: 405},
		{desc: "HEAD of a POST-only endpoint", method: "HEAD", path: "/api/v1/agent-auth/revoke", want: 405},
		{desc: "MCP initialize", method: "POST", path: "/mcp", header: mcpHeader, body: initialize, want: 200},
		{desc: "MCP tools/list", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, want: 200},
		{desc: "MCP notification", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, want: 202},
		{desc: "MCP, a protocol version not served", method: "POST", path: "/mcp", header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-03-26"}}, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, want: 400},
		{desc: "MCP, unknown method", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","id":9,"method":"bogus/method"}`, want: 200},
		{desc: "MCP response", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","id":7,"result":{}}`, want: 202},
		{desc: "MCP, neither request nor response", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","id":7}`, want: 400},
		{desc: "MCP, request and response at once", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","result":{}}`, want: 400},
		{desc: "MCP, GET", method: "GET", path: "/mcp", want: 405},
		{desc: "MCP, not JSON", method: "POST", path: "/mcp", header: http.Header{"Content-Type": {"text/plain"}, "Accept": {"application/json, text/event-stream"}}, body: "hello", want: 415},
		{desc: "MCP, malformed JSON", method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":`, want: 400},
		{desc: "MCP, Accept without event-stream", method: "POST", path: "/mcp", header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}, body: initialize, want: 400},
		{desc: "unknown page", method: "GET", path: "/no/such/page/", want: 404},
		{desc: "dot segments, another spelling of / (docs/decisions.md, One address per resource)", method: "GET", path: "/../", want: 301},
		{desc: "dot segments to no page", method: "GET", path: "/../about-us", want: 404},
		{desc: "odd encoding in a slug", method: "GET", path: "/2026/11/%ff%fe%00/", want: 404},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			exchange(t, c, inst, tc.method, tc.path, tc.header, tc.body, tc.want)
		})
	}
	t.Run("conditional reads", func(t *testing.T) {
		for _, path := range []string{
			first.Path() + "/", "/section/mandates/", "/countries/de/", "/newsletter/" + week + "/", "/assets/site.css",
			"/feeds/all.xml", "/feeds/all.json", "/sitemap-index.xml", "/sitemaps/articles-1.xml", "/news-sitemap.xml",
			"/developers", "/auth.md", "/llms.txt", "/robots.txt", "/.well-known/oauth-protected-resource",
			"/.well-known/http-message-signatures-directory", "/.well-known/agent-card.json", "/mcp/server-card",
			"/mandates", "/mandates.md", "/calendar/mandates.ics?country=be", "/search?q=peppol", "/opensearch.xml",
			"/favicon.ico",
		} {
			resp, _ := exchange(t, c, inst, "GET", path, nil, "", 200)
			exchange(t, c, inst, "GET", path, http.Header{"If-None-Match": {resp.Header.Get("ETag")}}, "", 304)
		}
	})
}
