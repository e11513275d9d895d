// Package origintest starts a real origin for tests: the suite's real Redis
// (redistest.New: one redis-server on a free port, or a three-master Redis
// Cluster when the tests run in cluster mode), a synthetic corpus published
// through the real publisher, and the origin's handler on a real HTTP
// listener. Contract
// tests (origin/openapi_contract_test.go) and the generated-client check
// (origin/openapi/generator_test.go) use it.
package origintest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin"
)

// Articles is the size of the corpus Start publishes: more than one page of
// the default limit, so pagination has a next page.
const Articles = 30

// RetractedSlug names the article Start retracts, so 410 can be exercised.
var RetractedSlug = contenttest.Article(3).Slug

// Instance is one running origin.
type Instance struct {
	// SiteRoot is {site_root}, the listener's own address.
	SiteRoot string
	// BaseURL is {base_url}, SiteRoot + "/api/v1".
	BaseURL string
	Store   *store.Store
	// Publisher writes to the same Redis, for tests that change content.
	Publisher *store.Publisher
	// Corpus is what was published (before any retraction).
	Corpus *content.Corpus
	// Server is the HTTP test server; use Server.Client().
	Server *httptest.Server
	// Origin is the handler behind Server, for benchmarks that call it
	// without the network.
	Origin *origin.Server
	// Redis is the Redis behind Store (a server or a cluster), for tests
	// that stop or restart it.
	Redis redistest.Backend
}

// Start brings up an origin with the synthetic corpus of contenttest
// (Articles articles) and RetractedSlug retracted. Everything stops when the
// test ends.
//
// Options adjust the origin's configuration before it is built (trusted
// ID-JAG issuers, the webhook address policy).
func Start(t testing.TB, options ...func(*origin.Config)) *Instance {
	t.Helper()
	return start(t, Articles, true, options)
}

// New brings up an origin over a new Redis holding n synthetic articles.
func New(t testing.TB, n int, options ...func(*origin.Config)) *Instance {
	t.Helper()
	return start(t, n, false, options)
}

// start publishes n articles, retracts RetractedSlug when asked (before the
// origin starts, so no cache or index ever held it), then serves.
func start(t testing.TB, n int, retract bool, options []func(*origin.Config)) *Instance {
	t.Helper()
	rs := redistest.New(t)
	st := store.New(rs.Client())
	ts := httptest.NewUnstartedServer(nil)
	siteRoot := "http://" + ts.Listener.Addr().String()
	now := contenttest.Base.Add(24 * time.Hour)
	pub := &store.Publisher{Store: st, SiteRoot: siteRoot, Now: func() time.Time { return now }}
	corpus := contenttest.Corpus(n)
	ctx := context.Background()
	if err := pub.SyncCorpus(ctx, corpus, nil); err != nil {
		t.Fatalf("origintest: publishing the corpus: %v", err)
	}
	if retract {
		if _, err := pub.Retract(ctx, RetractedSlug, "The synthetic source did not support the headline."); err != nil {
			t.Fatalf("origintest: retracting %s: %v", RetractedSlug, err)
		}
	}
	inst := &Instance{SiteRoot: siteRoot, BaseURL: siteRoot + "/api/v1", Store: st, Publisher: pub, Corpus: corpus, Redis: rs}
	inst.Origin = serve(t, ts, st, siteRoot, options...)
	inst.Server = ts
	return inst
}

// Get fetches path (relative to the site root, or absolute) with the
// header name/value pairs given and returns the response with its body
// read.
func (inst *Instance) Get(t testing.TB, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	u := path
	if !strings.HasPrefix(u, "http") {
		u = inst.SiteRoot + path
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := inst.Server.Client().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp, b
}

// Another starts a second origin, with its own response cache, over the same
// Redis, as a second origin process would be.
func (inst *Instance) Another(t testing.TB) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	serve(t, ts, store.New(inst.Redis.Client()), inst.SiteRoot)
	return ts
}

// serve starts ts with an origin over st once the origin follows
// invalidations.
func serve(t testing.TB, ts *httptest.Server, st *store.Store, siteRoot string, options ...func(*origin.Config)) *origin.Server {
	t.Helper()
	cfg := origin.Config{SiteRoot: siteRoot, CacheBytes: 16 << 20, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range options {
		o(&cfg)
	}
	srv, err := origin.New(cfg, st)
	if err != nil {
		t.Fatalf("origintest: creating the origin: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	go srv.Follow(ctx, ready)
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("origintest: the origin did not subscribe to invalidations")
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		cancel()
		srv.Close()
	})
	return srv
}
