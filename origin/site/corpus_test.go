package site_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/mmcdole/gofeed"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/site"
)

// TestRealCorpus publishes the editorial tree in content/ and renders every
// page of it: each article, country, section and audience page, the sent
// newsletter and every feed must answer 200, so real markdown (tables,
// links, lists) and real registries never break a page.
func TestRealCorpus(t *testing.T) {
	corpus, err := content.Load("../../content")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(redistest.New(t).Client())
	ts := httptest.NewUnstartedServer(nil)
	root := "http://" + ts.Listener.Addr().String()
	ctx := context.Background()
	pub := &store.Publisher{Store: st, SiteRoot: root, Now: time.Now}
	if err := pub.SyncCorpus(ctx, corpus, nil); err != nil {
		t.Fatal(err)
	}
	for week, intro := range corpus.Newsletters {
		if _, err := pub.SendNewsletter(ctx, week, intro); err != nil && err != store.ErrEmptyWeek {
			t.Fatal(err)
		}
	}
	srv, err := origin.New(origin.Config{SiteRoot: root, CacheBytes: 16 << 20, Log: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts.Config.Handler = srv
	ts.Start()
	defer ts.Close()

	fetch := func(path string) string {
		resp, err := ts.Client().Get(root + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d: %.300s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	paths := []string{"/", "/developers", "/llms.txt", "/sitemaps/pages.xml", "/news-sitemap.xml",
		"/mandates", "/mandates.md", "/mandates?region=eu&obligation=issue", "/search?q=When+must+Belgian+businesses+e-invoice%3F", "/opensearch.xml"}
	for _, a := range corpus.Articles {
		paths = append(paths, a.Path()+"/", a.Path()+".md")
	}
	for _, c := range corpus.Countries {
		paths = append(paths, "/countries/"+c.Code+"/")
	}
	for _, s := range content.Sections {
		paths = append(paths, "/section/"+s+"/")
	}
	for _, a := range content.Audiences {
		paths = append(paths, "/audience/"+a+"/")
	}
	for week := range corpus.Newsletters {
		paths = append(paths, "/newsletter/"+week+"/")
	}
	// An article's specifications state each version once: a registry
	// version that repeats the name's ("Peppol BIS Billing 3.0", "3.0 (May
	// 2026 release)") or has parentheses of its own once read "Peppol BIS
	// Billing 3.0 (3.0 (May 2026 release))".
	specList := regexp.MustCompile(`(?s)<h2>Specifications</h2>\s*<ul class="plain">(.*?)</ul>`)
	specItem := regexp.MustCompile(`(?s)<li>(.*?)</li>`)
	tag := regexp.MustCompile(`<[^>]*>`)
	specPages := 0
	for _, p := range paths {
		body := fetch(p)
		if strings.HasSuffix(p, "/") && strings.Contains(body, "&lt;p&gt;") {
			t.Errorf("%s shows escaped HTML", p)
		}
		for _, list := range specList.FindAllStringSubmatch(body, -1) {
			specPages++
			for _, item := range specItem.FindAllStringSubmatch(list[1], -1) {
				text := html.UnescapeString(tag.ReplaceAllString(item[1], ""))
				name, version, _ := strings.Cut(text, " — ")
				if strings.Contains(text, "((") || strings.Contains(text, "))") || version != "" && strings.HasPrefix(version, name[strings.LastIndex(name, " ")+1:]+" ") {
					t.Errorf("%s lists the specification %q", p, text)
				}
			}
		}
	}
	if specPages == 0 {
		t.Error("no article page lists specifications")
	}
	// Every address the developer portal shows (its API reference's
	// examples come from openapi.json's) names something this corpus has:
	// a reader who copies one gets an answer, not a 404 or a 400 for a
	// cursor or slug that never existed. POST-only addresses answer 405.
	page := html.UnescapeString(fetch("/developers"))
	for _, u := range regexp.MustCompile(regexp.QuoteMeta(root)+`/[^"'\s<>\\]*`).FindAllString(page, -1) {
		u = strings.TrimRight(u, ".,;:)")
		if strings.ContainsAny(u, "{$") {
			continue // a placeholder the reader fills in: /articles/{slug}, $slug
		}
		resp, err := ts.Client().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The owner routes' examples name the reader's own subscription or
		// client, so without its token they answer 401.
		owner := strings.Contains(u, "/webhooks/subscriptions") || strings.Contains(u, "/agent-auth/register/")
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusMethodNotAllowed && !(owner && resp.StatusCode == http.StatusUnauthorized) {
			t.Errorf("the developer portal shows %s, which answers %d", u, resp.StatusCode)
		}
	}
	parser := gofeed.NewParser()
	var cat catalog
	if err := json.Unmarshal([]byte(fetch("/api/v1/feeds")), &cat); err != nil {
		t.Fatal(err)
	}
	for _, f := range cat.Items {
		if _, err := parser.ParseString(fetch(strings.TrimPrefix(f.URL, root))); err != nil {
			t.Errorf("%s: %v", f.URL, err)
		}
	}
	// The deadline calendar, beside the feeds: one event per milestone of
	// the corpus.
	cal, err := ics.ParseCalendar(strings.NewReader(fetch(site.CalendarPath)))
	if err != nil {
		t.Fatalf("%s: %v", site.CalendarPath, err)
	}
	want := 0
	for _, c := range corpus.Countries {
		want += len(c.Milestones)
	}
	if got := len(cal.Events()); got != want || want < 60 {
		t.Errorf("%s: %d events, want one per milestone (%d)", site.CalendarPath, got, want)
	}
}
