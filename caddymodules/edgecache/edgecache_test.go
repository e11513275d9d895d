package edgecache

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/httpheader"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

const readCC = "public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"

// fakeOrigin answers each path with a handler the test sets, counts the
// requests per path and remembers the last request's headers.
type fakeOrigin struct {
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	hits     map[string]int
	last     map[string]http.Header
}

func newFakeOrigin() *fakeOrigin {
	return &fakeOrigin{handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}, last: map[string]http.Header{}}
}

func (o *fakeOrigin) handle(path string, h http.HandlerFunc) {
	o.mu.Lock()
	o.handlers[path] = h
	o.mu.Unlock()
}

func (o *fakeOrigin) count(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hits[path]
}

func (o *fakeOrigin) lastHeader(path string) http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last[path]
}

func (o *fakeOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	h := o.handlers[r.URL.Path]
	o.hits[r.URL.Path]++
	o.last[r.URL.Path] = r.Header.Clone()
	o.mu.Unlock()
	if h == nil {
		w.Header().Set("Cache-Control", "public, max-age=60")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		w.Write([]byte(`{"error":{"code":"not_found","message":"no"}}`))
		return
	}
	h(w, r)
}

// static answers body with the contract's read headers and an ETag;
// If-None-Match gets 304.
func static(body, etag, cc string, keys string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", cc)
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/json")
		if keys != "" {
			w.Header().Set("Surrogate-Key", keys)
		}
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte(body))
	}
}

func startEdge(t *testing.T, redisURL string) (*edgetest.Edge, *fakeOrigin) {
	t.Helper()
	edge, o, _ := startEdgeWithUpstream(t, redisURL)
	return edge, o
}

// startEdgeWithUpstream is startEdge that also returns the origin's server,
// for tests that take the origin away.
func startEdgeWithUpstream(t *testing.T, redisURL string) (*edgetest.Edge, *fakeOrigin, *httptest.Server) {
	t.Helper()
	o := newFakeOrigin()
	up := httptest.NewServer(o)
	t.Cleanup(up.Close)
	redis := ""
	if redisURL != "" {
		redis = "redis " + redisURL
	}
	edge := edgetest.Start(t, fmt.Sprintf(`
	edge_cache {
		%s
		max_bytes 16MiB
		max_entry_bytes 256KiB
	}
	encode zstd gzip
	reverse_proxy %s
	handle_errors {
		json_errors
	}`, redis, strings.TrimPrefix(up.URL, "http://")))
	return edge, o, up
}

// unique makes paths distinct per test: the cache outlives configs (it is
// in a usage pool), as it must across reloads.
var seq atomic.Int64

func unique(p string) string { return fmt.Sprintf("%s-%d", p, seq.Add(1)) }

func TestMissHitAndHeaders(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/articles")
	o.handle(p, static(`{"items":[]}`, `"v1"`, readCC, "list section:mandates"))

	resp, body := edge.Do(t, "GET", p, "")
	if got := resp.Header.Get("Cache-Status"); got != "Invoicewire; fwd=uri-miss; stored" {
		t.Errorf("miss Cache-Status %q", got)
	}
	if resp.Header.Get("Surrogate-Key") != "" {
		t.Errorf("Surrogate-Key leaked on a miss: %q", resp.Header.Get("Surrogate-Key"))
	}
	resp2, body2 := edge.Do(t, "GET", p, "")
	if got := resp2.Header.Get("Cache-Status"); !strings.HasPrefix(got, "Invoicewire; hit; ttl=") {
		t.Errorf("hit Cache-Status %q", got)
	}
	if resp2.Header.Get("Age") == "" || resp2.Header.Get("Surrogate-Key") != "" {
		t.Errorf("hit Age %q Surrogate-Key %q", resp2.Header.Get("Age"), resp2.Header.Get("Surrogate-Key"))
	}
	if body != body2 || body2 != `{"items":[]}` || o.count(p) != 1 {
		t.Errorf("bodies %q %q, origin requests %d; want the same body and one request", body, body2, o.count(p))
	}
	if resp2.Header.Get("ETag") != `"v1"` || resp2.Header.Get("Content-Length") != "12" {
		t.Errorf("stored fields: ETag %q Content-Length %q", resp2.Header.Get("ETag"), resp2.Header.Get("Content-Length"))
	}
	// Conditional requests are answered from the cache.
	resp3, body3 := edge.Do(t, "GET", p, "", `If-None-Match: "other", W/"v1"`)
	if resp3.StatusCode != 304 || body3 != "" || resp3.Header.Get("ETag") != `"v1"` || o.count(p) != 1 {
		t.Errorf("conditional: %d %q ETag %q, origin %d", resp3.StatusCode, body3, resp3.Header.Get("ETag"), o.count(p))
	}
	// HEAD shares the entry.
	resp4, body4 := edge.Do(t, "HEAD", p, "")
	if resp4.StatusCode != 200 || body4 != "" || resp4.Header.Get("Content-Length") != "12" || o.count(p) != 1 {
		t.Errorf("HEAD: %d %q CL %q origin %d", resp4.StatusCode, body4, resp4.Header.Get("Content-Length"), o.count(p))
	}
	// Absurd or malformed Range and Cache-Control are ignored safely.
	resp5, body5 := edge.Do(t, "GET", p, "", "Range: bytes=99999999999999999999-0,-,a-b", "Cache-Control: max-age=abc, ,,=, no-transform=\"")
	if resp5.StatusCode != 200 || body5 != `{"items":[]}` {
		t.Errorf("bad Range/Cache-Control: %d %q", resp5.StatusCode, body5)
	}
}

func TestNeverStored(t *testing.T) {
	edge, o := startEdge(t, "")
	testCases := []struct {
		desc   string
		header []string
		h      http.HandlerFunc
	}{
		{desc: "no-store", h: static("x", `"e"`, "no-store", "")},
		{desc: "private", h: static("x", `"e"`, "private, max-age=60", "")},
		{desc: "no-cache response", h: static("x", `"e"`, "no-cache, max-age=60", "")},
		{desc: "no explicit freshness", h: static("x", `"e"`, "", "")},
		{desc: "429", h: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.WriteHeader(429)
		}},
		{desc: "Set-Cookie", h: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.Header().Set("Set-Cookie", "a=b")
			w.Write([]byte("x"))
		}},
		{desc: "Vary: *", h: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.Header().Set("Vary", "*")
			w.Write([]byte("x"))
		}},
		{desc: "request with Authorization", header: []string{"Authorization: Bearer t"}, h: static("x", `"e"`, readCC, "")},
		{desc: "request no-store", header: []string{"Cache-Control: no-store"}, h: static("x", `"e"`, readCC, "")},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			p := unique("/never")
			o.handle(p, test.h)
			for range 3 {
				resp, _ := edge.Do(t, "GET", p, "", test.header...)
				if cs := resp.Header.Get("Cache-Status"); strings.Contains(cs, "hit") || strings.Contains(cs, "stored") {
					t.Errorf("Cache-Status %q", cs)
				}
			}
			if n := o.count(p); n != 3 {
				t.Errorf("origin saw %d requests; want 3 (nothing stored)", n)
			}
		})
	}
}

func TestCompressionVariants(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/articles")
	big := `{"items":"` + strings.Repeat("peppol e-invoicing ", 900) + `"}`
	o.handle(p, static(big, `"big"`, readCC, "list"))
	testCases := []struct {
		desc, ae, want string
	}{
		{desc: "zstd preferred", ae: "gzip, deflate, br, zstd", want: "zstd"},
		{desc: "gzip only", ae: "gzip", want: "gzip"},
		{desc: "identity", ae: "", want: ""},
		{desc: "same variant, other spelling", ae: "zstd;q=1.0, gzip;q=0.5", want: "zstd"},
		{desc: "x-gzip", ae: "x-gzip", want: "gzip"},
	}
	for round := range 2 {
		for _, test := range testCases {
			t.Run(fmt.Sprintf("%s/round%d", test.desc, round), func(t *testing.T) {
				var hdr []string
				if test.ae != "" {
					hdr = append(hdr, "Accept-Encoding: "+test.ae)
				}
				resp, body := edge.Do(t, "GET", p, "", hdr...)
				if got := resp.Header.Get("Content-Encoding"); got != test.want {
					t.Fatalf("Content-Encoding %q; want %q", got, test.want)
				}
				if decodeBody(t, test.want, []byte(body)) != big {
					t.Errorf("body does not decode to the origin's")
				}
				if round == 1 && !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
					t.Errorf("second round not a hit: %q", resp.Header.Get("Cache-Status"))
				}
			})
		}
	}
	if n := o.count(p); n != 1 {
		t.Errorf("origin requests %d; want 1 (every coding made from one stored body)", n)
	}
}

func TestVaryAccept(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/2026/03/page")
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", readCC)
		w.Header().Set("Vary", "Accept")
		if strings.Contains(r.Header.Get("Accept"), "markdown") {
			w.Header().Set("Content-Type", "text/markdown")
			w.Write([]byte("# md"))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<h1>html</h1>"))
	})
	for range 2 {
		for _, c := range []struct{ accept, want string }{
			{"text/markdown", "# md"},
			{"text/html", "<h1>html</h1>"},
			{"*/*", "<h1>html</h1>"},
			{"text/markdown;q=0.9, text/html;q=0.1", "# md"},
		} {
			_, body := edge.Do(t, "GET", p, "", "Accept: "+c.accept)
			if body != c.want {
				t.Errorf("Accept %q: %q; want %q", c.accept, body, c.want)
			}
		}
	}
	if n := o.count(p); n != 2 {
		t.Errorf("origin requests %d; want 2 (one per normalised Accept)", n)
	}
}

func TestRequestNoCacheRevalidates(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/countries")
	o.handle(p, static(`{"count":1}`, `"c1"`, readCC, "countries"))
	edge.Do(t, "GET", p, "")
	resp, body := edge.Do(t, "GET", p, "", "Cache-Control: no-cache")
	if got := resp.Header.Get("Cache-Status"); got != "Invoicewire; fwd=request; fwd-status=304; stored" || body != `{"count":1}` {
		t.Errorf("no-cache: Cache-Status %q body %q", got, body)
	}
	if o.count(p) != 2 || o.lastHeader(p).Get("If-None-Match") != `"c1"` {
		t.Errorf("origin requests %d, If-None-Match %q; want a conditional second request", o.count(p), o.lastHeader(p).Get("If-None-Match"))
	}
	// Pragma: no-cache without Cache-Control means the same (RFC 9111 §5.4).
	edge.Do(t, "GET", p, "", "Pragma: no-cache")
	if o.count(p) != 3 {
		t.Errorf("Pragma: no-cache did not reach the origin")
	}
	// A changed resource replaces the entry.
	o.handle(p, static(`{"count":2}`, `"c2"`, readCC, "countries"))
	edge.Do(t, "GET", p, "", "Cache-Control: no-cache")
	if _, body := edge.Do(t, "GET", p, ""); body != `{"count":2}` {
		t.Errorf("after refresh: %q", body)
	}
}

func TestCoalescedMisses(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/specs")
	release := make(chan struct{})
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		<-release
		static(`{"specs":1}`, `"s"`, readCC, "specs")(w, r)
	})
	const n = 12
	var wg sync.WaitGroup
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, bodies[i] = edge.Do(t, "GET", p, "")
		}()
	}
	// Let the requests arrive, then answer.
	for o.count(p) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	for i, b := range bodies {
		if b != `{"specs":1}` {
			t.Errorf("request %d got %q", i, b)
		}
	}
	if c := o.count(p); c != 1 {
		t.Errorf("origin requests %d; want 1 (misses coalesced)", c)
	}
}

func TestStaleWhileRevalidate(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/sources")
	var version atomic.Int64
	version.Store(1)
	refreshStarted := make(chan struct{}, 10)
	slow := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(slow) }) }
	defer release()
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		v := version.Load()
		cc := "public, max-age=1, s-maxage=1, stale-while-revalidate=60"
		if v > 1 {
			refreshStarted <- struct{}{}
			<-slow
			// The refreshed entry's age counts from when the refresh
			// was sent (RFC 9111 §4.2.3), before the stale reads below:
			// on a loaded machine one second can pass, and an entry
			// born stale would be refreshed a second time.
			cc = "public, max-age=60, s-maxage=60"
		}
		w.Header().Set("Cache-Control", cc)
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, v))
		w.Write([]byte(fmt.Sprintf("version %d", v)))
	})
	edge.Do(t, "GET", p, "")
	version.Store(2)
	time.Sleep(1100 * time.Millisecond) // the entry goes stale (s-maxage=1)

	// Stale responses are served at once, without the client asking, while
	// exactly one background refresh runs.
	for range 5 {
		resp, body := edge.Do(t, "GET", p, "")
		if body != "version 1" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit; ttl=-") {
			t.Fatalf("stale read: %q %q", body, resp.Header.Get("Cache-Status"))
		}
	}
	<-refreshStarted
	release()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, body := edge.Do(t, "GET", p, "")
		if body == "version 2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refreshed entry never served; last %q", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c := o.count(p); c != 2 {
		t.Errorf("origin requests %d; want 2 (one fill, one background refresh)", c)
	}
}

func TestStaleIfError(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/feeds")
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=1")
		w.Write([]byte("good"))
	})
	edge.Do(t, "GET", p, "")
	time.Sleep(1100 * time.Millisecond)
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"code":"unavailable","message":"down"}}`))
	})
	resp, body := edge.Do(t, "GET", p, "")
	if resp.StatusCode != 200 || body != "good" || resp.Header.Get("Cache-Status") != "Invoicewire; fwd=stale; fwd-status=503; detail=stale-if-error" {
		t.Errorf("stale-if-error: %d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"))
	}
	// A request that forbids the stored copy (no-cache) went forward for
	// itself, not because the copy was stale (RFC 9211 §2.2), even when
	// the copy then stands in.
	fresh := unique("/api/v1/feeds")
	o.handle(fresh, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=600")
		w.Write([]byte("good"))
	})
	edge.Do(t, "GET", fresh, "")
	o.handle(fresh, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	resp, body = edge.Do(t, "GET", fresh, "", "Cache-Control: no-cache")
	if resp.StatusCode != 200 || body != "good" || resp.Header.Get("Cache-Status") != "Invoicewire; fwd=request; fwd-status=503; detail=stale-if-error" {
		t.Errorf("no-cache, stale-if-error: %d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"))
	}
	// must-revalidate forbids it.
	p2 := unique("/api/v1/feeds")
	o.handle(p2, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=1, must-revalidate")
		w.Write([]byte("good"))
	})
	edge.Do(t, "GET", p2, "")
	time.Sleep(1100 * time.Millisecond)
	o.handle(p2, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	if resp, _ := edge.Do(t, "GET", p2, ""); resp.StatusCode != 503 {
		t.Errorf("must-revalidate served stale: %d", resp.StatusCode)
	}
}

// TestOriginUnreachableCacheStatus: with the origin gone (its listener
// closed, so connections are refused), every answer of the cache still
// says what the cache did (RFC 9211), and none names a fwd-status, the
// status the origin returned (§2.3), since it returned none: a miss is
// json_errors' 503 with fwd=uri-miss and detail=no-response, a stale entry
// stands in with detail=stale-if-error, and one that must be revalidated
// is the 503 with fwd=stale.
func TestOriginUnreachableCacheStatus(t *testing.T) {
	edge, o, up := startEdgeWithUpstream(t, "")
	stale, mustRevalidate := unique("/api/v1/countries/fr"), unique("/api/v1/countries/se")
	o.handle(stale, static(`{"code":"FR"}`, `"fr"`, "public, max-age=1", "country:fr"))
	o.handle(mustRevalidate, static(`{"code":"SE"}`, `"se"`, "public, max-age=1, must-revalidate", "country:se"))
	for _, p := range []string{stale, mustRevalidate} {
		if resp, _ := edge.Do(t, "GET", p, ""); resp.Header.Get("Cache-Status") != "Invoicewire; fwd=uri-miss; stored" {
			t.Fatalf("filling %s: %d, Cache-Status %q", p, resp.StatusCode, resp.Header.Get("Cache-Status"))
		}
	}
	up.Close()
	time.Sleep(1100 * time.Millisecond) // both entries go stale

	cases := []struct {
		desc        string
		path        string
		header      []string
		status      int
		cacheStatus string
	}{
		{desc: "miss", path: unique("/api/v1/countries/de"), status: http.StatusServiceUnavailable,
			cacheStatus: "Invoicewire; fwd=uri-miss; detail=no-response"},
		{desc: "miss for a coding", path: unique("/api/v1/countries/at"), header: []string{"Accept-Encoding: gzip"}, status: http.StatusServiceUnavailable,
			cacheStatus: "Invoicewire; fwd=uri-miss; detail=no-response"},
		{desc: "stale entry stands in", path: stale, status: http.StatusOK,
			cacheStatus: "Invoicewire; fwd=stale; detail=stale-if-error"},
		{desc: "stale entry stands in for a coding", path: stale, header: []string{"Accept-Encoding: gzip"}, status: http.StatusOK,
			cacheStatus: "Invoicewire; fwd=stale; detail=stale-if-error"},
		{desc: "stale entry that must be revalidated", path: mustRevalidate, status: http.StatusServiceUnavailable,
			cacheStatus: "Invoicewire; fwd=stale; detail=no-response"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := edge.Do(t, "GET", tc.path, "", tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %q; want %d", resp.StatusCode, body, tc.status)
			}
			if got := resp.Header.Values("Cache-Status"); len(got) != 1 || got[0] != tc.cacheStatus {
				t.Errorf("Cache-Status %q; want %q", got, tc.cacheStatus)
			}
			if tc.status == http.StatusServiceUnavailable && (!strings.Contains(body, `"unavailable"`) || resp.Header.Get("Retry-After") != "5") {
				t.Errorf("%q, Retry-After %q: want the JSON 503 unavailable", body, resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestPurgeBySurrogateKey(t *testing.T) {
	srv := redistest.New(t)
	flushes := testutil.ToFloat64(purges.WithLabelValues("flush"))
	edge, o := startEdge(t, srv.URL())
	ctx := context.Background()
	pa, pb := unique("/api/v1/articles/a"), unique("/api/v1/articles/b")
	o.handle(pa, static("a", `"a"`, readCC, "article:a list"))
	o.handle(pb, static("b", `"b"`, readCC, "article:b"))
	waitSubscribed(t, srv)
	// The first subscription clears the cache (nothing was seen before);
	// entries stored before that clear lands would be lost with it.
	waitFor(t, func() bool { return testutil.ToFloat64(purges.WithLabelValues("flush")) > flushes })
	edge.Do(t, "GET", pa, "")
	edge.Do(t, "GET", pb, "")
	// The next version after the one the subscription read (none: 0), so
	// the message purges its keys and nothing else.
	srv.Client().Publish(ctx, "iw:invalidate", `{"version":1,"keys":["article:a"]}`)
	waitFor(t, func() bool {
		resp, _ := edge.Do(t, "GET", pa, "")
		return strings.Contains(resp.Header.Get("Cache-Status"), "fwd=uri-miss")
	})
	if resp, _ := edge.Do(t, "GET", pb, ""); !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Errorf("unrelated entry purged: %q", resp.Header.Get("Cache-Status"))
	}

	// Messages lost while disconnected: the version moved, so the
	// resubscription flushes everything.
	srv.Client().Set(ctx, "iw:{content}:version", 8, 0)
	// Every node: on a cluster the edge's subscription is on any one.
	redistest.ForEachNode(ctx, srv.Client(), func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err()
	})
	waitFor(t, func() bool {
		resp, _ := edge.Do(t, "GET", pb, "")
		return strings.Contains(resp.Header.Get("Cache-Status"), "fwd=uri-miss")
	})
}

func waitSubscribed(t *testing.T, srv redistest.Backend) {
	t.Helper()
	rdb := srv.Client()
	waitFor(t, func() bool {
		var subscribers int64
		redistest.ForEachNode(context.Background(), rdb, func(ctx context.Context, n *redis.Client) error {
			m, err := n.PubSubNumSub(ctx, "iw:invalidate").Result()
			subscribers += m["iw:invalidate"]
			return err
		})
		return subscribers > 0
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOriginDownWithoutEntry(t *testing.T) {
	edge, _ := startEdge(t, "")
	// No handler registered and then the origin closes: use a path the fake
	// origin 404s, then a dead upstream config.
	resp, body := edge.Do(t, "GET", unique("/nothing"), "")
	if resp.StatusCode != 404 || !strings.Contains(body, "not_found") {
		t.Errorf("404 passthrough: %d %q", resp.StatusCode, body)
	}
	dead := edgetest.Start(t, `
	edge_cache
	reverse_proxy 127.0.0.1:1
	handle_errors {
		json_errors
	}`)
	resp, body = dead.Do(t, "GET", unique("/api/v1/articles"), "")
	if resp.StatusCode != 503 || !strings.Contains(body, `"unavailable"`) || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("dead origin: %d %q", resp.StatusCode, body)
	}
	resp, body = dead.Do(t, "GET", unique("/api/v1/articles"), "", "Cache-Control: only-if-cached")
	if resp.StatusCode != 504 || !strings.Contains(body, `"error"`) {
		t.Errorf("only-if-cached miss: %d %q", resp.StatusCode, body)
	}
}

func TestEventStreamPassesThrough(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/ask")
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		for i := range 3 {
			fmt.Fprintf(w, "event: result\ndata: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	})
	resp, body := edge.Do(t, "GET", p, "", "Accept: text/event-stream")
	if resp.StatusCode != 200 || strings.Count(body, "event: result") != 3 {
		t.Errorf("stream: %d %q", resp.StatusCode, body)
	}
}

func TestUnsafeMethodInvalidates(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/webhooks/subscriptions")
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", p+"/sub_1")
			w.WriteHeader(201)
			return
		}
		static("list", `"l"`, readCC, "")(w, r)
	})
	o.handle(p+"/sub_1", static("one", `"1"`, readCC, ""))
	for _, u := range []string{p, p + "/sub_1"} {
		edge.Do(t, "GET", u, "")
		edge.Do(t, "GET", u, "", "Accept-Encoding: gzip")
	}
	edge.Do(t, "POST", p, "")
	for _, u := range []string{p, p + "/sub_1"} {
		resp, _ := edge.Do(t, "GET", u, "", "Accept-Encoding: gzip")
		if !strings.Contains(resp.Header.Get("Cache-Status"), "fwd=uri-miss") {
			t.Errorf("%s after POST: Cache-Status %q; want a miss", u, resp.Header.Get("Cache-Status"))
		}
	}
}

func TestSurrogateControl(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/sc")
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Surrogate-Control", "max-age=60")
		w.Write([]byte("edge only"))
	})
	edge.Do(t, "GET", p, "")
	resp, _ := edge.Do(t, "GET", p, "")
	if !strings.Contains(resp.Header.Get("Cache-Status"), "hit") || resp.Header.Get("Surrogate-Control") != "" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Status %q Surrogate-Control %q Cache-Control %q", resp.Header.Get("Cache-Status"), resp.Header.Get("Surrogate-Control"), resp.Header.Get("Cache-Control"))
	}
}

func TestEntriesSurviveReload(t *testing.T) {
	o := newFakeOrigin()
	up := httptest.NewServer(o)
	defer up.Close()
	p := unique("/api/v1/countries")
	o.handle(p, static("kept", `"k"`, readCC, "countries"))
	cfg := func(extra string) string {
		return fmt.Sprintf(`
	edge_cache {
		name ReloadTest
	}
	header X-Config %s
	reverse_proxy %s`, extra, strings.TrimPrefix(up.URL, "http://"))
	}
	edge := edgetest.Start(t, cfg("one"))
	edge.Do(t, "GET", p, "")
	edge = edgetest.Start(t, cfg("two")) // a reload: the old config is cleaned up
	resp, body := edge.Do(t, "GET", p, "")
	if resp.Header.Get("X-Config") != "two" || body != "kept" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") || o.count(p) != 1 {
		t.Errorf("after reload: X-Config %q body %q Cache-Status %q origin %d; want the stored entry", resp.Header.Get("X-Config"), body, resp.Header.Get("Cache-Status"), o.count(p))
	}
}

// checkRequestID checks that an error of the edge names the request's id:
// the client's X-Request-Id, when one of the request fields header is,
// else one the edge made.
func checkRequestID(t *testing.T, round string, header []string, resp *http.Response) {
	t.Helper()
	want := ""
	for _, h := range header {
		if k, v, _ := strings.Cut(h, ":"); strings.EqualFold(k, "X-Request-Id") {
			want = strings.TrimSpace(v)
		}
	}
	switch got := resp.Header.Get("X-Request-Id"); {
	case want != "" && got != want:
		t.Errorf("%s: %d with X-Request-Id %q; want the client's %q", round, resp.StatusCode, got, want)
	case got == "":
		t.Errorf("%s: %d without X-Request-Id; want one the edge made", round, resp.StatusCode)
	}
}

// TestPreconditions checks If-Match and If-Unmodified-Since at the edge
// (RFC 9110 §13.1.1, §13.1.4, §13.2.2), evaluated as the origin does: on a
// miss and a hit alike a false one is the JSON 412 with no-store, which is
// never stored, and carries the request id and, on a HEAD too, its
// Content-Length, as every edge error; If-Match compares strongly with the ETag of the coding
// that would be sent; answers that are not a 200 ignore them (RFC 9110
// §13.2.1); and a response passed through without being stored is
// evaluated too, since the edge does not forward the fields.
func TestPreconditions(t *testing.T) {
	edge, o := startEdge(t, "")
	big := `{"items":"` + strings.Repeat("peppol e-invoicing ", 900) + `"}`
	lastMod := "Mon, 23 Nov 2026 09:00:00 GMT"
	withLastMod := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Last-Modified", lastMod)
			h(w, r)
		}
	}
	testCases := []struct {
		desc   string
		h      http.HandlerFunc
		header []string
		status int
		// stored: a plain read afterwards is a hit (the 412 was not kept)
		stored bool
	}{
		{desc: "If-Match, another tag", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: "nomatch"`}, status: 412, stored: true},
		{desc: "If-Match, another tag, the client's request id", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: "nomatch"`, "X-Request-Id: report-42"}, status: 412, stored: true},
		{desc: "If-Match, the tag", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: "v1"`}, status: 200, stored: true},
		{desc: "If-Match, star", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: *`}, status: 200, stored: true},
		{desc: "If-Match, the weak tag", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: W/"v1"`}, status: 412, stored: true},
		{desc: "If-Match, the gzip coding's tag", h: static(big, `"v1"`, readCC, ""), header: []string{"Accept-Encoding: gzip", `If-Match: "v1-gzip"`}, status: 200, stored: true},
		{desc: "If-Match, the identity tag for the gzip coding", h: static(big, `"v1"`, readCC, ""), header: []string{"Accept-Encoding: gzip", `If-Match: "v1"`}, status: 412, stored: true},
		{desc: "If-Match, the zstd coding's tag", h: static(big, `"v1"`, readCC, ""), header: []string{"Accept-Encoding: zstd", `If-Match: "v1-zstd"`}, status: 200, stored: true},
		{desc: "a false If-Match wins over a matching If-None-Match", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: "nomatch"`, `If-None-Match: "v1"`}, status: 412, stored: true},
		{desc: "a true If-Match, then a matching If-None-Match", h: static(big, `"v1"`, readCC, ""), header: []string{`If-Match: "v1"`, `If-None-Match: "v1"`}, status: 304, stored: true},
		{desc: "If-Unmodified-Since, earlier", h: withLastMod(static(big, `"v1"`, readCC, "")), header: []string{"If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT"}, status: 412, stored: true},
		{desc: "If-Unmodified-Since, Last-Modified", h: withLastMod(static(big, `"v1"`, readCC, "")), header: []string{"If-Unmodified-Since: " + lastMod}, status: 200, stored: true},
		{desc: "If-Unmodified-Since, invalid", h: withLastMod(static(big, `"v1"`, readCC, "")), header: []string{"If-Unmodified-Since: yesterday"}, status: 200, stored: true},
		{desc: "If-Unmodified-Since without Last-Modified", h: static(big, `"v1"`, readCC, ""), header: []string{"If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT"}, status: 200, stored: true},
		{desc: "a true If-Match: If-Unmodified-Since is not evaluated", h: withLastMod(static(big, `"v1"`, readCC, "")), header: []string{`If-Match: "v1"`, "If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT"}, status: 200, stored: true},
		{desc: "a 404 ignores them", h: nil, header: []string{`If-Match: "nomatch"`}, status: 404, stored: true},
		{desc: "not stored, If-Match another tag", h: static(big, `"v1"`, "no-store", ""), header: []string{`If-Match: "nomatch"`}, status: 412},
		{desc: "not stored, If-Match another tag, gzip", h: static(big, `"v1"`, "no-store", ""), header: []string{"Accept-Encoding: gzip", `If-Match: "v1"`}, status: 412},
		{desc: "not stored, If-Match the gzip coding's tag", h: static(big, `"v1"`, "no-store", ""), header: []string{"Accept-Encoding: gzip", `If-Match: "v1-gzip"`}, status: 200},
		{desc: "not stored, If-Unmodified-Since earlier", h: withLastMod(static(big, `"v1"`, "no-store", "")), header: []string{"If-Unmodified-Since: Thu, 01 Jan 2015 00:00:00 GMT"}, status: 412},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			p := unique("/api/v1/specs")
			if tc.h != nil {
				o.handle(p, tc.h)
			}
			for _, round := range []string{"miss", "hit"} {
				resp, body := edge.Do(t, "GET", p, "", tc.header...)
				if resp.StatusCode != tc.status {
					t.Fatalf("%s: %d; want %d (Cache-Status %q)", round, resp.StatusCode, tc.status, resp.Header.Get("Cache-Status"))
				}
				if tc.status == 412 {
					if cc := resp.Header.Get("Cache-Control"); cc != "no-store" || resp.Header.Get("Content-Type") != "application/json" ||
						!strings.Contains(body, `"code":"precondition_failed"`) {
						t.Errorf("%s: 412 with Cache-Control %q, Content-Type %q, body %q", round, cc, resp.Header.Get("Content-Type"), body)
					}
					if resp.Header.Get("ETag") != "" || resp.Header.Get("Content-Encoding") != "" {
						t.Errorf("%s: 412 with the representation's ETag %q or Content-Encoding %q", round, resp.Header.Get("ETag"), resp.Header.Get("Content-Encoding"))
					}
					checkRequestID(t, round, tc.header, resp)
					// HEAD: the fields of the GET (RFC 9110 §9.3.2).
					head, headBody := edge.Do(t, "HEAD", p, "", tc.header...)
					if head.StatusCode != 412 || headBody != "" || head.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
						t.Errorf("%s: HEAD %d, Content-Length %q, body %q; want 412 with the GET's length %d and no body", round, head.StatusCode, head.Header.Get("Content-Length"), headBody, len(body))
					}
					checkRequestID(t, round+" HEAD", tc.header, head)
				}
				if tc.status == 200 && !strings.Contains(resp.Header.Get("Cache-Status"), "hit") && round == "hit" && tc.stored {
					t.Errorf("the second read is not a hit: %q", resp.Header.Get("Cache-Status"))
				}
			}
			if !tc.stored {
				return
			}
			// What was stored is the 200 (or the 404), never the 412.
			before := o.count(p)
			resp, _ := edge.Do(t, "GET", p, "")
			if !strings.Contains(resp.Header.Get("Cache-Status"), "hit") || o.count(p) != before {
				t.Errorf("a plain read after: %d, Cache-Status %q, origin requests %d → %d; want a stored hit", resp.StatusCode, resp.Header.Get("Cache-Status"), before, o.count(p))
			}
			if tc.h != nil && resp.StatusCode != 200 {
				t.Errorf("a plain read after: %d; want 200", resp.StatusCode)
			}
		})
	}
}

// TestOnlyIfCached: a request with only-if-cached never reaches the origin
// (RFC 9111 §5.2.1.7). It is answered from the stored response when the
// request's other directives let that response answer it (fresh enough,
// or stale within max-stale), in any coding, and otherwise with the JSON
// 504: nothing stored, no-cache, a max-age or min-fresh the response does
// not meet, a stale response that may not be served so.
func TestOnlyIfCached(t *testing.T) {
	edge, o := startEdge(t, "")
	big := `{"items":"` + strings.Repeat("peppol e-invoicing ", 900) + `"}`
	testCases := []struct {
		desc   string
		cc     string // the origin's Cache-Control; default readCC
		stored string // the coding a plain GET stores first ("" identity; "-" nothing)
		header []string
		status int
	}{
		{desc: "fresh", header: []string{"Cache-Control: only-if-cached"}, status: 200},
		{desc: "fresh, max-age it meets", header: []string{"Cache-Control: only-if-cached, max-age=600"}, status: 200},
		{desc: "fresh, gzip made from identity", header: []string{"Cache-Control: only-if-cached", "Accept-Encoding: gzip"}, status: 200},
		{desc: "fresh, gzip stored", stored: "gzip", header: []string{"Cache-Control: only-if-cached", "Accept-Encoding: gzip"}, status: 200},
		{desc: "nothing stored", stored: "-", header: []string{"Cache-Control: only-if-cached"}, status: 504},
		{desc: "nothing stored, gzip", stored: "-", header: []string{"Cache-Control: only-if-cached", "Accept-Encoding: gzip"}, status: 504},
		{desc: "no-cache", header: []string{"Cache-Control: only-if-cached, no-cache"}, status: 504},
		{desc: "Pragma: no-cache", header: []string{"Cache-Control: only-if-cached", "Pragma: no-cache"}, status: 200},
		{desc: "no-cache, gzip", header: []string{"Cache-Control: only-if-cached, no-cache", "Accept-Encoding: gzip"}, status: 504},
		{desc: "no-cache, gzip stored", stored: "gzip", header: []string{"Cache-Control: only-if-cached, no-cache", "Accept-Encoding: gzip"}, status: 504},
		{desc: "min-fresh not met", header: []string{"Cache-Control: only-if-cached, min-fresh=100000"}, status: 504},
		{desc: "max-age=0", header: []string{"Cache-Control: max-age=0, only-if-cached"}, status: 504},
		{desc: "stale, must-revalidate", cc: "public, max-age=0, must-revalidate", header: []string{"Cache-Control: only-if-cached"}, status: 504},
		{desc: "stale, must-revalidate, max-stale", cc: "public, max-age=0, must-revalidate", header: []string{"Cache-Control: only-if-cached, max-stale"}, status: 504},
		{desc: "stale", cc: "public, max-age=0", header: []string{"Cache-Control: only-if-cached"}, status: 504},
		{desc: "stale within max-stale", cc: "public, max-age=0", header: []string{"Cache-Control: only-if-cached, max-stale=600"}, status: 200},
		{desc: "stale within max-stale, gzip", cc: "public, max-age=0", header: []string{"Cache-Control: only-if-cached, max-stale=600", "Accept-Encoding: gzip"}, status: 200},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			p := unique("/api/v1/countries/fr")
			o.handle(p, static(big, `"fr"`, cmp.Or(tc.cc, readCC), ""))
			switch tc.stored {
			case "-":
			case "":
				edge.Do(t, "GET", p, "")
			default:
				edge.Do(t, "GET", p, "", "Accept-Encoding: "+tc.stored)
			}
			before := o.count(p)
			resp, body := edge.Do(t, "GET", p, "", tc.header...)
			if n := o.count(p); n != before {
				t.Errorf("the origin was asked (%d → %d requests)", before, n)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d; want %d (Cache-Status %q)", resp.StatusCode, tc.status, resp.Header.Get("Cache-Status"))
			}
			switch tc.status {
			case 200:
				if !strings.Contains(resp.Header.Get("Cache-Status"), "; hit") || decodeBody(t, resp.Header.Get("Content-Encoding"), []byte(body)) != big {
					t.Errorf("Cache-Status %q, body (Content-Encoding %q) not the stored one; want a hit", resp.Header.Get("Cache-Status"), resp.Header.Get("Content-Encoding"))
				}
			case 504:
				if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"error"`) {
					t.Errorf("504 with Content-Type %q, body %.200q; want the JSON error", resp.Header.Get("Content-Type"), body)
				}
				// Nothing served from the cache, nothing forwarded.
				if got := resp.Header.Get("Cache-Status"); got != "Invoicewire; detail=only-if-cached" {
					t.Errorf("Cache-Status %q; want Invoicewire; detail=only-if-cached", got)
				}
			}
		})
	}
}

// TestStoredErrorNamesRequestID checks the request id of answers from the
// store: a stored error (here a 404) names one on a hit as on the miss, the
// client's when it sent one, else one the edge made; a stored success names
// only the client's.
func TestStoredErrorNamesRequestID(t *testing.T) {
	edge, o := startEdge(t, "")
	ok := unique("/api/v1/specs")
	o.handle(ok, static(`{"items":[]}`, `"v1"`, readCC, ""))
	testCases := []struct {
		desc   string
		path   string
		header []string
		want   string // "" none, "made" one the edge made, else this one
	}{
		{desc: "stored 404, no id sent", path: unique("/api/v1/articles/gone"), want: "made"},
		{desc: "stored 404, the client's id", path: unique("/api/v1/articles/gone"), header: []string{"X-Request-Id: report-7"}, want: "report-7"},
		{desc: "stored 404, an id that is no id", path: unique("/api/v1/articles/gone"), header: []string{"X-Request-Id: has space"}, want: "made"},
		{desc: "stored 200, no id sent", path: ok, want: ""},
		{desc: "stored 200, the client's id", path: ok, header: []string{"X-Request-Id: report-8"}, want: "report-8"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			edge.Do(t, "GET", tc.path, "", tc.header...) // stores it
			resp, _ := edge.Do(t, "GET", tc.path, "", tc.header...)
			if !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
				t.Fatalf("Cache-Status %q; want a hit", resp.Header.Get("Cache-Status"))
			}
			got := resp.Header.Get("X-Request-Id")
			switch tc.want {
			case "made":
				if !httpheader.ValidRequestID(got) || got == "has space" {
					t.Fatalf("%d with X-Request-Id %q; want one the edge made", resp.StatusCode, got)
				}
			default:
				if got != tc.want {
					t.Fatalf("%d with X-Request-Id %q; want %q", resp.StatusCode, got, tc.want)
				}
			}
		})
	}
}
