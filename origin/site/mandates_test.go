package site_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ics "github.com/arran4/golang-ical"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/ask"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/origin/site"
)

// readerToday is the clock of these tests: between the fixture's past and
// upcoming milestones.
var readerToday = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func startAt(t *testing.T, now time.Time) *origintest.Instance {
	return origintest.Start(t, func(c *origin.Config) { c.Now = func() time.Time { return now } })
}

func milestoneIDs(countries []*content.Country, keep func(code string, m *content.Milestone) bool) []string {
	var ids []string
	for _, c := range countries {
		for i := range c.Milestones {
			if keep(c.Code, &c.Milestones[i]) {
				ids = append(ids, c.Milestones[i].ID(c.Code))
			}
		}
	}
	return ids
}

func parseCalendar(t *testing.T, body []byte) []string {
	t.Helper()
	cal, err := ics.ParseCalendar(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the calendar does not parse: %v\n%s", err, body)
	}
	var uids []string
	for _, ev := range cal.Events() {
		uids = append(uids, ev.Id())
	}
	slices.Sort(uids)
	return uids
}

// TestMandateCalendar reads the calendar through the origin with a real
// iCalendar parser: an event per milestone with the milestone's UID, the
// feeds' cache headers, one country's subset, and a milestone edit
// published through the store reaching the calendar.
func TestMandateCalendar(t *testing.T) {
	inst := origintest.Start(t)
	host := strings.TrimPrefix(inst.SiteRoot, "http://")
	host = host[:strings.LastIndex(host, ":")]
	uidsOf := func(ids []string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = id + "@" + host
		}
		slices.Sort(out)
		return out
	}
	all := uidsOf(milestoneIDs(contenttest.Countries, func(string, *content.Milestone) bool { return true }))

	resp, body := get(t, inst, "/calendar/mandates.ics")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := parseCalendar(t, body); !slices.Equal(got, all) {
		t.Errorf("UIDs %v, want one per milestone %v", got, all)
	}
	h := resp.Header
	if ct := h.Get("Content-Type"); ct != "text/calendar; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := h.Get("Cache-Control"); cc != "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400" {
		t.Errorf("Cache-Control %q, want the feeds'", cc)
	}
	keys := strings.Fields(h.Get("Surrogate-Key"))
	if !slices.Contains(keys, store.TagCountries) || !slices.Contains(keys, store.TagFeeds) {
		t.Errorf("Surrogate-Key %q lacks countries and feeds", h.Get("Surrogate-Key"))
	}
	if again, _ := get(t, inst, "/calendar/mandates.ics", "If-None-Match", h.Get("ETag")); again.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation answered %d, want 304", again.StatusCode)
	}

	t.Run("one country", func(t *testing.T) {
		resp, body := get(t, inst, "/calendar/mandates.ics?country=de")
		want := uidsOf(milestoneIDs(contenttest.Countries, func(code string, _ *content.Milestone) bool { return code == "de" }))
		if got := parseCalendar(t, body); !slices.Equal(got, want) {
			t.Errorf("UIDs %v, want Germany's %v", got, want)
		}
		if !slices.Contains(strings.Fields(resp.Header.Get("Surrogate-Key")), store.TagCountry("de")) {
			t.Errorf("Surrogate-Key %q lacks country:de", resp.Header.Get("Surrogate-Key"))
		}
	})

	t.Run("bad country codes are the JSON 400", func(t *testing.T) {
		for _, q := range []string{"zz", "DE", "deu", "d", "", "de&country=be"} {
			resp, body := get(t, inst, "/calendar/mandates.ics?country="+q)
			if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !bytes.Contains(body, []byte(`"code":"bad_request"`)) {
				t.Errorf("country=%s: %d %s %s", q, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
	})

	t.Run("a milestone edit through the store reaches the calendar", func(t *testing.T) {
		be := *inst.Corpus.Countries[0]
		be.Milestones = slices.Clone(be.Milestones)
		be.Milestones[0].Title = "Renamed by the editors"
		o, err := inst.Publisher.SyncCountry(context.Background(), &be)
		if err != nil || !o.Changed {
			t.Fatalf("SyncCountry: %+v %v", o, err)
		}
		eventually(t, "the calendar shows the new title", func() error {
			_, body := get(t, inst, "/calendar/mandates.ics?country=be")
			if !bytes.Contains(bytes.ReplaceAll(body, []byte("\r\n "), nil), []byte("SUMMARY:Belgium: Renamed by the editors")) {
				return errStr("still the old title")
			}
			return nil
		})
	})
}

type errStr string

func (e errStr) Error() string { return string(e) }

// TestMandatesPage renders the timeline at a fixed date: past and upcoming
// in their own lists, the SVG with a link to every source and article,
// filters as links, and editorial text escaped.
func TestMandatesPage(t *testing.T) {
	inst := startAt(t, readerToday)
	resp, body := get(t, inst, "/mandates")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	page := string(body)
	upcomingAt, pastAt := strings.Index(page, `id="upcoming"`), strings.Index(page, `id="past"`)
	if upcomingAt < 0 || pastAt < upcomingAt {
		t.Fatalf("no upcoming list before the past one")
	}
	today := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, c := range contenttest.Countries {
		for _, m := range c.Milestones {
			id := m.ID(c.Code)
			at := strings.Index(page, `<li id="`+id+`"`)
			if at < 0 {
				t.Errorf("%s is not listed", id)
				continue
			}
			if past := m.Day().Before(today); past != (at > pastAt) {
				t.Errorf("%s listed under the wrong heading (past: %v)", id, past)
			}
			for _, href := range []string{m.Source, m.Reports[0].Path + "/"} {
				if strings.Count(page, `href="`+href+`"`) < 2 {
					t.Errorf("%s: %s is not linked from both the drawing and the list", id, href)
				}
			}
		}
	}
	for _, want := range []string{
		`<svg xmlns="http://www.w3.org/2000/svg" class="timeline"`, "Today, 23 November 2026",
		`href="/mandates?region=eu"`, `href="/mandates?obligation=report"`, `href="/calendar/mandates.ics"`,
		`<link rel="alternate" type="text/markdown" href="` + inst.SiteRoot + `/mandates.md"`,
		"a commitment &lt;without&gt; a bill &amp; no date",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<without>") {
		t.Error("editorial text is not escaped")
	}

	t.Run("filters", func(t *testing.T) {
		_, body := get(t, inst, "/mandates?obligation=report")
		want := milestoneIDs(contenttest.Countries, func(_ string, m *content.Milestone) bool { return slices.Contains(m.Obligation, "report") })
		if got := strings.Count(string(body), `<li id="`); got != len(want) {
			t.Errorf("%d milestones listed, want %d (%v)", got, len(want), want)
		}
		for _, id := range want {
			if !strings.Contains(string(body), `<li id="`+id+`"`) {
				t.Errorf("%s missing", id)
			}
		}
		for _, q := range []string{"region=mars", "obligation=pay", "region=", "region=eu&region=eu"} {
			resp, body := get(t, inst, "/mandates?"+q)
			if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("%s: %d %s", q, resp.StatusCode, body)
			}
		}
	})

	t.Run("markdown twin", func(t *testing.T) {
		resp, body := get(t, inst, "/mandates.md")
		md := string(body)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") || !strings.HasPrefix(md, "# Mandate timeline") {
			t.Fatalf("%s\n%s", resp.Header.Get("Content-Type"), md)
		}
		if up, past := strings.Index(md, "## Coming up"), strings.Index(md, "## Already due"); up < 0 || past < up {
			t.Errorf("no upcoming section before the past one")
		}
		if !strings.Contains(md, "(https://kpmg.com/us/en/taxnewsflash/news/2025/12/belgium.html)") || !strings.Contains(md, "&lt;without>") ||
			!strings.Contains(md, "]("+inst.SiteRoot+"/2026/11/article-00000/)") {
			t.Errorf("source link or escaping missing:\n%s", md)
		}
	})

	t.Run("a later day moves milestones to the past", func(t *testing.T) {
		later := startAt(t, time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC))
		_, body := get(t, later, "/mandates")
		page := string(body)
		if at, past := strings.Index(page, `<li id="de-2027-01-01-issue"`), strings.Index(page, `id="past"`); at < past {
			t.Errorf("de-2027-01-01-issue is still upcoming on 1 June 2027")
		}
	})
}

// TestMandatesWebcalLink checks the subscribe link's exact href: the webcal
// scheme at the configured site root's host, never "#ZgotmplZ" (what
// html/template writes for a scheme it does not trust) and never a host the
// request names.
// TestMandatesFreshUntilMidnight: /mandates and its twin tell past from
// upcoming by today's date, so no cache may serve one after the midnight
// UTC that ends its day (docs/decisions.md, "/mandates expires at the next
// midnight UTC"): not the origin's, and not the edge's or a browser's,
// which go by Cache-Control. Each answer's freshness and stale time stop
// at that midnight, the cached answer's included, asked again later.
func TestMandatesFreshUntilMidnight(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	setClock := func(t time.Time) { clock.Store(&t) }
	setClock(readerToday)
	inst := origintest.Start(t, func(c *origin.Config) { c.Now = func() time.Time { return *clock.Load() } })
	day := readerToday.Truncate(24 * time.Hour)
	for _, path := range []string{"/mandates", "/mandates.md", "/mandates?region=eu"} {
		t.Run(path, func(t *testing.T) {
			for _, tc := range []struct {
				desc string
				now  time.Time
				want string
			}{
				{desc: "in the morning", now: day.Add(10 * time.Hour), want: "public, max-age=300, s-maxage=3600, stale-while-revalidate=46800"},
				{desc: "the same answer from the origin's cache half an hour before midnight", now: day.Add(23*time.Hour + 30*time.Minute), want: "public, max-age=300, s-maxage=1800"},
				{desc: "a minute before midnight", now: day.Add(24*time.Hour - time.Minute), want: "public, max-age=60, s-maxage=60"},
				{desc: "the next day's answer", now: day.Add(24*time.Hour + time.Hour), want: "public, max-age=300, s-maxage=3600, stale-while-revalidate=79200"},
			} {
				setClock(tc.now)
				resp, body := get(t, inst, path)
				if resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", tc.desc, resp.StatusCode, body)
				}
				if got := resp.Header.Get("Cache-Control"); got != tc.want {
					t.Errorf("%s: Cache-Control %q, want %q", tc.desc, got, tc.want)
				}
			}
		})
	}
}

func TestMandatesWebcalLink(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		siteRoot string // "" keeps the test listener's http:// address
		host     string // the request's Host and X-Forwarded-Host; "" leaves them
		want     string // "" is webcal:// at the listener's address
	}{
		{desc: "an http site root"},
		{desc: "an https site root", siteRoot: "https://invoicewire.example", want: "webcal://invoicewire.example/calendar/mandates.ics"},
		{desc: "a site root with a port", siteRoot: "https://invoicewire.example:8443", want: "webcal://invoicewire.example:8443/calendar/mandates.ics"},
		{desc: "the request's host is not used", siteRoot: "https://invoicewire.example", host: "attacker.example",
			want: "webcal://invoicewire.example/calendar/mandates.ics"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			inst := origintest.Start(t, func(c *origin.Config) {
				c.Now = func() time.Time { return readerToday }
				if tc.siteRoot != "" {
					c.SiteRoot = tc.siteRoot
				}
			})
			want := tc.want
			if want == "" {
				want = "webcal://" + strings.TrimPrefix(inst.SiteRoot, "http://") + site.CalendarPath
			}
			req, err := http.NewRequest(http.MethodGet, inst.Server.URL+"/mandates", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
				req.Header.Set("X-Forwarded-Host", tc.host)
			}
			resp, err := inst.Server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			m := regexp.MustCompile(`<a href="([^"]*)" class="calendar-subscribe">`).FindSubmatch(body)
			if m == nil {
				t.Fatalf("no subscribe link:\n%s", body)
			}
			if got := html.UnescapeString(string(m[1])); got != want {
				t.Errorf("href %q, want %q", got, want)
			}
		})
	}
}

// TestSearchPage renders /ask answers as a page: the same summary and
// articles as POST /ask gives, plus the form, the limits and the escaping.
// Two real Belgian articles join the synthetic corpus, whose short
// sentences never make a summary.
func TestSearchPage(t *testing.T) {
	inst := origintest.Start(t)
	corpus, err := content.Load("../../content")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range corpus.Articles {
		if strings.HasPrefix(a.Slug, "belgium-") {
			if _, err := inst.Publisher.SyncArticle(context.Background(), a); err != nil {
				t.Fatal(err)
			}
		}
	}
	const question = "When does Belgium require B2B e-invoices?"
	var answer struct {
		Results []struct {
			Type      string   `json:"@type"`
			URL       string   `json:"url"`
			Citations []string `json:"citations"`
			Sentences []struct {
				Text string `json:"text"`
			} `json:"sentences"`
		} `json:"results"`
	}
	ask := func() ([]byte, error) {
		req, _ := http.NewRequest(http.MethodPost, inst.SiteRoot+"/ask", strings.NewReader(`{"query":"`+question+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := inst.Server.Client().Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	resultsOf := func(raw []byte) []byte {
		var r struct{ Results json.RawMessage }
		json.Unmarshal(raw, &r)
		return r.Results
	}
	// The index takes the articles one change at a time, so the page and
	// the answer it is compared with must come from the same state: the
	// answer is asked for before and after the page, and must not differ.
	var page string
	eventually(t, "the ask index has the Belgian articles", func() error {
		before, err := ask()
		if err != nil {
			return err
		}
		if err := json.Unmarshal(before, &answer); err != nil {
			return err
		}
		if len(answer.Results) == 0 || answer.Results[0].Type != "SearchSummary" {
			return errStr("no summary yet")
		}
		resp, body := get(t, inst, "/search?q="+url.QueryEscape(question))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		after, err := ask()
		if err != nil {
			return err
		}
		if !bytes.Equal(resultsOf(before), resultsOf(after)) {
			return errStr("the index is still taking the articles")
		}
		page = string(body)
		return nil
	})
	summaryAt := strings.Index(page, `class="search-summary"`)
	resultsAt := strings.Index(page, `class="search-results"`)
	if summaryAt < 0 || resultsAt < summaryAt {
		t.Fatalf("no summary before the results")
	}
	for _, item := range answer.Results {
		path := strings.TrimPrefix(item.URL, inst.SiteRoot)
		if item.Type == "SearchSummary" {
			for _, sen := range item.Sentences {
				if !strings.Contains(page, html.EscapeString(sen.Text)) {
					t.Errorf("the summary lacks %q", sen.Text)
				}
			}
			for i, c := range item.Citations {
				n := strconv.Itoa(i + 1)
				if !strings.Contains(page, `<li id="cite-`+n+`"><a href="`+strings.TrimPrefix(c, inst.SiteRoot)+`">`) {
					t.Errorf("citation %s (%s) is not listed", n, c)
				}
			}
			continue
		}
		if !strings.Contains(page[resultsAt:], `<a href="`+path+`">`) {
			t.Errorf("result %s is not on the page", path)
		}
	}
	if !strings.Contains(page, `<sup><a href="#cite-1">[1]</a></sup>`) || !strings.Contains(page, `value="`+html.EscapeString(question)+`"`) {
		t.Errorf("no numbered citation or no query in the form")
	}
	a := contenttest.Article(0)

	t.Run("escaping", func(t *testing.T) {
		_, body := get(t, inst, "/search?q="+url.QueryEscape(`<script>alert("x")</script>`))
		if bytes.Contains(body, []byte("<script>alert")) || !bytes.Contains(body, []byte("&lt;script&gt;alert")) {
			t.Errorf("the query is not escaped")
		}
	})
	t.Run("empty q is the form", func(t *testing.T) {
		for _, q := range []string{"", "?q=", "?q=%20%20"} {
			resp, body := get(t, inst, "/search"+q)
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`id="search-page-q"`)) || bytes.Contains(body, []byte(`class="search-results"`)) {
				t.Errorf("/search%s: %d", q, resp.StatusCode)
			}
		}
	})
	t.Run("q over 500 characters", func(t *testing.T) {
		resp, body := get(t, inst, "/search?q="+strings.Repeat("é", 501))
		if resp.StatusCode != 400 || !bytes.Contains(body, []byte(`"code":"bad_request"`)) {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("every page has the form and the OpenSearch link", func(t *testing.T) {
		for _, p := range []string{"/", a.Path() + "/", "/countries/de/", "/mandates", "/search", "/developers"} {
			_, body := get(t, inst, p)
			for _, want := range []string{
				`<link rel="search" type="application/opensearchdescription+xml" href="/opensearch.xml" title="Invoicewire">`,
				`<form class="site-search" role="search" aria-label="Site search" action="/search" method="get">`,
			} {
				if !bytes.Contains(body, []byte(want)) {
					t.Errorf("%s lacks %s", p, want)
				}
			}
		}
	})
}

// TestOpenSearchDescription reads /opensearch.xml as XML: its search URL
// template leads to /search with the terms in q.
func TestOpenSearchDescription(t *testing.T) {
	inst := origintest.Start(t)
	resp, body := get(t, inst, "/opensearch.xml")
	if ct := resp.Header.Get("Content-Type"); ct != "application/opensearchdescription+xml" {
		t.Errorf("Content-Type %q", ct)
	}
	var doc struct {
		XMLName   xml.Name `xml:"http://a9.com/-/spec/opensearch/1.1/ OpenSearchDescription"`
		ShortName string   `xml:"ShortName"`
		URLs      []struct {
			Type     string `xml:"type,attr"`
			Template string `xml:"template,attr"`
		} `xml:"Url"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("not an OpenSearch description: %v\n%s", err, body)
	}
	if doc.ShortName == "" || len(doc.ShortName) > 16 {
		t.Errorf("ShortName %q (OpenSearch allows 16 characters)", doc.ShortName)
	}
	var tmpl string
	for _, u := range doc.URLs {
		if u.Type == "text/html" {
			tmpl = u.Template
		}
	}
	if !strings.Contains(tmpl, "{searchTerms}") {
		t.Fatalf("no text/html Url template with {searchTerms}: %q", tmpl)
	}
	target := strings.Replace(tmpl, "{searchTerms}", url.QueryEscape("peppol"), 1)
	resp, _ = get(t, inst, target)
	if resp.StatusCode != 200 || !strings.HasPrefix(target, inst.SiteRoot+"/search?q=") {
		t.Errorf("the template %q leads to %d", tmpl, resp.StatusCode)
	}
}

// TestRetractionLeavesTheMilestones retracts an article that milestones
// cite, after every surface showing milestones was read (and so cached by
// the origin): each drops the article, with the purge key of an article's
// change on it, and shows it again once it is restored. The MCP tools read
// the same country data.
func TestRetractionLeavesTheMilestones(t *testing.T) {
	inst := startAt(t, readerToday)
	cited := contenttest.Article(1) // reported by every German milestone
	path := cited.Path() + "/"
	surfaces := []string{
		"/api/v1/countries", "/api/v1/countries/de", "/mandates", "/mandates?region=eu", "/mandates.md",
		"/calendar/mandates.ics", "/calendar/mandates.ics?country=de",
	}
	cs := mcpConnect(t, inst)
	tools := []struct {
		name string
		args map[string]any
	}{{"list_countries", map[string]any{}}, {"get_country", map[string]any{"code": "de"}}}
	// cites reports which surfaces name the article, and checks each
	// carries the key an article's change purges.
	cites := func() (naming, silent []string) {
		for _, p := range surfaces {
			resp, body := get(t, inst, p)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", p, resp.StatusCode, body)
			}
			if keys := strings.Fields(resp.Header.Get("Surrogate-Key")); !slices.Contains(keys, store.TagMilestones) {
				t.Errorf("%s: Surrogate-Key %v lacks %s", p, keys, store.TagMilestones)
			}
			// Calendar lines are folded at 75 octets.
			if bytes.Contains(bytes.ReplaceAll(body, []byte("\r\n "), nil), []byte(path)) {
				naming = append(naming, p)
			} else {
				silent = append(silent, p)
			}
		}
		for _, tool := range tools {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool.name, Arguments: tool.args})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v", tool.name, err, res)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if bytes.Contains(raw, []byte(path)) {
				naming = append(naming, "mcp "+tool.name)
			} else {
				silent = append(silent, "mcp "+tool.name)
			}
		}
		return naming, silent
	}
	if _, silent := cites(); len(silent) > 0 {
		t.Fatalf("before the retraction %v do not cite %s", silent, path)
	}
	etag := func() string { resp, _ := get(t, inst, "/api/v1/countries"); return resp.Header.Get("ETag") }
	before := etag()

	if _, err := inst.Publisher.Retract(context.Background(), cited.Slug, "The source was misread."); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every surface drops the retracted article", func() error {
		if naming, _ := cites(); len(naming) > 0 {
			return fmt.Errorf("%v still cite %s", naming, path)
		}
		return nil
	})
	if etag() == before {
		t.Error("/api/v1/countries kept its ETag")
	}
	// The milestones stay: only the retracted report goes.
	_, body := get(t, inst, "/mandates")
	if !strings.Contains(string(body), `<li id="de-2027-01-01-issue"`) {
		t.Error("the milestone went with its report")
	}

	if _, err := inst.Publisher.Restore(context.Background(), cited.Slug); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every surface cites the restored article again", func() error {
		if _, silent := cites(); len(silent) > 0 {
			return fmt.Errorf("%v do not cite %s", silent, path)
		}
		return nil
	})
}

// mcpConnect opens an MCP session with the SDK's client, as an agent would.
func mcpConnect(t *testing.T, inst *origintest.Instance) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "invoicewire-site-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: inst.SiteRoot + "/mcp", HTTPClient: inst.Server.Client()}, nil)
	if err != nil {
		t.Fatalf("connecting to /mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestSearchPages walks a search's pages by their rel=next links: together
// they list the engine's ranking (POST /ask with the engine's bound) in
// order, SearchPageSize a page, each linking back with rel=prev; the page
// after the last is a 404. A question matching more articles than the
// engine ranks says so on its last page.
func TestSearchPages(t *testing.T) {
	for _, tc := range []struct {
		articles int
		capped   bool
	}{{origintest.Articles, false}, {ask.MaxResults + 12, true}} {
		t.Run(strconv.Itoa(tc.articles)+" articles", func(t *testing.T) {
			inst := origintest.New(t, tc.articles)
			var ranking []string
			eventually(t, "the ask index has the articles", func() error {
				req, _ := http.NewRequest(http.MethodPost, inst.SiteRoot+"/ask", strings.NewReader(`{"query":"peppol","prefer":{"max_results":`+strconv.Itoa(ask.MaxResults)+`}}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := inst.Server.Client().Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				var a struct {
					Results []struct {
						Type string `json:"@type"`
						URL  string `json:"url"`
					} `json:"results"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
					return err
				}
				ranking = ranking[:0]
				for _, r := range a.Results {
					if r.Type == "NewsArticle" {
						ranking = append(ranking, strings.TrimPrefix(r.URL, inst.SiteRoot))
					}
				}
				if want := min(tc.articles, ask.MaxResults); len(ranking) != want {
					return fmt.Errorf("%d results, want %d", len(ranking), want)
				}
				return nil
			})
			link := regexp.MustCompile(`<link rel="(prev|next)" href="([^"]+)">`)
			result := regexp.MustCompile(`<li><h3><a href="([^"]+)">`)
			var listed []string
			next, prev, n := "/search?q=peppol", "", 0
			var last string
			for next != "" {
				n++
				resp, body := get(t, inst, html.UnescapeString(next))
				if resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", next, resp.StatusCode, body)
				}
				page := string(body)
				links := map[string]string{}
				for _, m := range link.FindAllStringSubmatch(page, -1) {
					links[m[1]] = m[2]
				}
				if links["prev"] != prev {
					t.Errorf("page %d: rel=prev %q, want %q", n, links["prev"], prev)
				}
				got := result.FindAllStringSubmatch(page[strings.Index(page, `class="search-results"`):], -1)
				if len(got) == 0 || len(got) > site.SearchPageSize || (links["next"] != "" && len(got) != site.SearchPageSize) {
					t.Fatalf("page %d lists %d articles", n, len(got))
				}
				for _, m := range got {
					listed = append(listed, m[1])
				}
				if n > 1 && strings.Contains(page, `class="search-summary"`) {
					t.Errorf("page %d repeats the summary", n)
				}
				prev, last, next = next, page, links["next"]
			}
			if want := (len(ranking) + site.SearchPageSize - 1) / site.SearchPageSize; n != want {
				t.Errorf("%d pages, want %d", n, want)
			}
			if !slices.Equal(listed, ranking) {
				t.Errorf("the pages list\n%v\nthe engine ranks\n%v", listed, ranking)
			}
			if capped := strings.Contains(last, `class="search-cap"`); capped != tc.capped {
				t.Errorf("the last page states the engine's bound: %v, want %v", capped, tc.capped)
			}
			for _, p := range []string{"/search?q=peppol&page=" + strconv.Itoa(n+1), "/search?page=2"} {
				if resp, body := get(t, inst, p); resp.StatusCode != 404 || !bytes.Contains(body, []byte(`"code":"not_found"`)) {
					t.Errorf("%s: %d %s", p, resp.StatusCode, body)
				}
			}
		})
	}
}
