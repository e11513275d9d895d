package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
)

// bypassCache is sent with every timed request: the origin neither reads
// nor fills its response cache for a request that carries Authorization
// (docs/decisions.md, "Requests carrying `Authorization` bypass the origin's
// response cache"), so every request is a
// cache miss however often a URL repeats. Public routes ignore the value.
const bypassCache = "Bearer scale-bench-cache-miss"

// latency is the distribution of one kind of request.
type latency struct {
	name     string
	n, fails int
	p50, p95 time.Duration
	p99, max time.Duration
	// bytes is the mean response size.
	bytes int
	// note says what a failure was, once.
	note string
}

// target is one request to time.
type target struct {
	method, path, body string
}

// timeTargets requests every target once, one at a time, and summarises.
func timeTargets(ctx context.Context, client *http.Client, base, name string, targets []target) latency {
	l := latency{name: name}
	var ds []time.Duration
	var total int
	for _, t := range targets {
		var body *strings.Reader
		if t.body != "" {
			body = strings.NewReader(t.body)
		}
		var req *http.Request
		if body != nil {
			req, _ = http.NewRequestWithContext(ctx, t.method, base+t.path, body)
			req.Header.Set("Content-Type", "application/json")
		} else {
			req, _ = http.NewRequestWithContext(ctx, t.method, base+t.path, nil)
		}
		req.Header.Set("Authorization", bypassCache)
		t0 := time.Now()
		code, b, err := status(client, req)
		d := time.Since(t0)
		l.n++
		if err != nil || code != http.StatusOK {
			l.fails++
			if l.note == "" {
				l.note = fmt.Sprintf("%s %s: %d %v %s", t.method, t.path, code, err, tail(string(b), 200))
			}
			continue
		}
		ds = append(ds, d)
		total += len(b)
	}
	if len(ds) == 0 {
		return l
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))] }
	l.p50, l.p95, l.p99, l.max = at(0.50), at(0.95), at(0.99), ds[len(ds)-1]
	l.bytes = total / len(ds)
	return l
}

// readMix builds the timed requests of a run from a sample of the archive.
type readMix struct {
	r       *rand.Rand
	sample  []*content.Article
	total   int
	perKind int
}

func (m *readMix) pick() *content.Article { return m.sample[m.r.IntN(len(m.sample))] }

func listPath(q url.Values) string { return "/api/v1/articles?" + q.Encode() }

func cursorOf(a *content.Article) string {
	return store.Cursor{PublishedAt: a.PublishedAt, Slug: a.Slug}.Encode()
}

// filters returns one, two or three filters of a, in that order.
func filters(a *content.Article, k int) url.Values {
	q := url.Values{"section": {a.Section}}
	if k >= 2 {
		q.Set("audience", a.Audience[0])
	}
	if k >= 3 && len(a.Countries) > 0 {
		q.Set("country", a.Countries[0])
	}
	return q
}

// listTargets are the list kinds: offsets anywhere in the allowed range,
// cursor pages at any depth, and one to three filters, each by offset and
// by cursor.
func (m *readMix) listTargets() map[string][]target {
	out := map[string][]target{}
	add := func(kind string, q url.Values) {
		out[kind] = append(out[kind], target{method: http.MethodGet, path: listPath(q)})
	}
	for range m.perKind {
		add("list, random offset ≤ 10,000", url.Values{"offset": {strconv.Itoa(m.r.IntN(min(m.total, 10_000) + 1))}, "limit": {"20"}})
		add("list, cursor at any depth", url.Values{"cursor": {cursorOf(m.pick())}, "limit": {"20"}})
		for k := 1; k <= 3; k++ {
			a := m.pick()
			q := filters(a, k)
			q.Set("offset", strconv.Itoa(m.r.IntN(200)))
			add(fmt.Sprintf("list, %d filter(s), offset < 200", k), q)
			q = filters(a, k)
			q.Set("cursor", cursorOf(a))
			add(fmt.Sprintf("list, %d filter(s), cursor at any depth", k), q)
		}
	}
	return out
}

// articleTargets are the article in JSON, its page and its markdown twin.
func (m *readMix) articleTargets() map[string][]target {
	out := map[string][]target{}
	for range m.perKind {
		a := m.pick()
		out["article (JSON)"] = append(out["article (JSON)"], target{method: http.MethodGet, path: "/api/v1/articles/" + a.Slug})
		a = m.pick()
		out["article page"] = append(out["article page"], target{method: http.MethodGet, path: a.Path() + "/"})
		a = m.pick()
		out["markdown twin"] = append(out["markdown twin"], target{method: http.MethodGet, path: a.Path() + ".md"})
	}
	return out
}

// askTargets are questions made of a sampled article's headline words,
// beside fixed ones, as readers ask.
func (m *readMix) askTargets() []target {
	fixed := []string{
		"When does Belgium require B2B e-invoicing?", "Peppol access point certificate migration",
		"What is the e-reporting obligation in France?", "eRačun Croatia fiscalisation", "invoice",
		"Germany turnover threshold penalties", "KSeF Poland postponed", "quantum chromodynamics",
	}
	var out []target
	for i := range m.perKind {
		q := fixed[i%len(fixed)]
		if i%2 == 1 {
			q = m.pick().Title
		}
		b, _ := json.Marshal(map[string]string{"query": q})
		out = append(out, target{method: http.MethodPost, path: "/ask", body: string(b)})
	}
	return out
}

// feedTargets requests every feed of the catalog, grouped by kind.
func feedTargets(ctx context.Context, client *http.Client, base, siteRoot string) (map[string][]target, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/feeds", nil)
	code, b, err := status(client, req)
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("scale: reading the feed catalog: %d %v", code, err)
	}
	var cat struct {
		Items []struct {
			URL string `json:"url"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		return nil, fmt.Errorf("scale: decoding the feed catalog: %w", err)
	}
	out := map[string][]target{}
	for _, f := range cat.Items {
		p := strings.TrimPrefix(f.URL, siteRoot)
		kind := "feed " + p
		if i := strings.LastIndexByte(p, '/'); strings.Count(p, "/") > 2 {
			kind = "feeds " + p[:i] + "/*" + p[strings.LastIndexByte(p, '.'):]
		}
		for range 3 {
			out[kind] = append(out[kind], target{method: http.MethodGet, path: p})
		}
	}
	return out, nil
}

// sitemapTargets requests the sitemap index and every file it lists.
func sitemapTargets(ctx context.Context, client *http.Client, base, siteRoot string) (map[string][]target, int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sitemap-index.xml", nil)
	code, b, err := status(client, req)
	if err != nil || code != http.StatusOK {
		return nil, 0, fmt.Errorf("scale: reading the sitemap index: %d %v", code, err)
	}
	out := map[string][]target{}
	for range 20 {
		out["sitemap index"] = append(out["sitemap index"], target{method: http.MethodGet, path: "/sitemap-index.xml"})
	}
	files := 0
	for _, part := range strings.Split(string(b), "<loc>")[1:] {
		loc, _, _ := strings.Cut(part, "</loc>")
		p := strings.TrimPrefix(loc, siteRoot)
		files++
		kind := "sitemap " + p
		if strings.HasPrefix(p, "/sitemaps/articles-") {
			kind = "sitemap /sitemaps/articles-*.xml (each file)"
		}
		for range 2 {
			out[kind] = append(out[kind], target{method: http.MethodGet, path: p})
		}
	}
	return out, files, nil
}

// visibility is how long after an edit each surface showed it.
type visibility struct {
	surfaces map[string]time.Duration
	all      time.Duration
}

// getBody is the body of a 200 answer to GET u, else "".
func getBody(ctx context.Context, client *http.Client, u string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	code, b, err := status(client, req)
	if err != nil || code != http.StatusOK {
		return ""
	}
	return string(b)
}

// findSitemapFile returns the path of the article sitemap file that lists
// a, by reading the index and the files in turn; "" when none does.
func findSitemapFile(ctx context.Context, client *http.Client, base string, a *content.Article) string {
	get := func(path string) string { return getBody(ctx, client, base+path) }
	for _, part := range strings.Split(get("/sitemap-index.xml"), "<loc>")[1:] {
		loc, _, _ := strings.Cut(part, "</loc>")
		if _, path, ok := strings.Cut(loc, "/sitemaps/articles-"); ok && strings.Contains(get("/sitemaps/articles-"+path), a.Path()+"/</loc>") {
			return "/sitemaps/articles-" + path
		}
	}
	return ""
}

// watchEdit polls, through base (the edge), every surface that must show
// the edited article a until all do or timeout passes; sitemapFile is the
// path of the sitemap file that lists a.
func watchEdit(ctx context.Context, client *http.Client, base, sitemapFile string, a *content.Article, token string, t0 time.Time, timeout time.Duration) visibility {
	lastmod := a.UpdatedAt.UTC().Format(time.RFC3339)
	get := func(path string) string { return getBody(ctx, client, base+path) }
	sitemap := func() bool {
		body := get(sitemapFile)
		if i := strings.Index(body, a.Path()+"/</loc>"); i >= 0 {
			return strings.Contains(body[i:min(len(body), i+200)], lastmod)
		}
		return false
	}
	checks := map[string]func() bool{
		"API":                 func() bool { return strings.Contains(get("/api/v1/articles/"+a.Slug), token) },
		"page":                func() bool { return strings.Contains(get(a.Path()+"/"), token) },
		"twin":                func() bool { return strings.Contains(get(a.Path()+".md"), token) },
		"feed /feeds/all.xml": func() bool { return strings.Contains(get("/feeds/all.xml"), token) },
		"sitemap":             sitemap,
		"/ask": func() bool {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ask", bytes.NewReader([]byte(`{"query":"`+token+`"}`)))
			req.Header.Set("Content-Type", "application/json")
			code, b, err := status(client, req)
			return err == nil && code == http.StatusOK && strings.Contains(string(b), a.Slug)
		},
	}
	// Each surface is polled on its own, so a slow one (a large sitemap
	// file) does not delay noticing the others.
	v := visibility{surfaces: map[string]time.Duration{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, check := range checks {
		wg.Go(func() {
			for time.Since(t0) < timeout {
				if check() {
					mu.Lock()
					v.surfaces[name] = time.Since(t0)
					mu.Unlock()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for name := range checks {
		if d, ok := v.surfaces[name]; !ok {
			v.surfaces[name] = -1
			v.all = -1
		} else if v.all >= 0 && d > v.all {
			v.all = d
		}
	}
	return v
}
