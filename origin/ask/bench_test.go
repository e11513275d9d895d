package ask

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// The benchmarks run on a generated archive of benchArticles rich synthetic
// articles (contenttest.RichCorpus: about 500 words each, a long-tailed
// vocabulary). Issue 8's goals: p95 query latency under 10 ms, index build
// under 2 s.
//
//	go test -run '^$' -bench . -benchtime 2000x ./origin/ask/   (make bench-ask)
const benchArticles = 10_000

var benchCorpus = sync.OnceValue(func() Corpus {
	c := contenttest.RichCorpus(benchArticles)
	return Corpus{Articles: c.Articles, Countries: c.Countries, Specs: c.Specs, Synonyms: c.Synonyms}
})

// benchQuestions mix specific and vague questions, entity names, versions
// and words the archive does not contain.
var benchQuestions = []string{
	"When does Belgium require B2B e-invoicing?",
	"Peppol access point certificate migration",
	"Germany turnover threshold penalties 2027",
	"What is the e-reporting obligation in France?",
	"Peppol BIS Billing 3.0 validation rules release",
	"accredited providers pilot Poland",
	"invoice",
	"How do accounts payable teams archive structured invoices?",
	"EN 16931 syntax UBL CII",
	"Japan voluntary clearance platform revenue",
	"kariton lumovi sazefi",
	"quantum chromodynamics",
	"tax authority API deadline postponed",
	"public procurement invoicing in PL and DE",
	"Which suppliers must send credit notes through the platform?",
	"digital bookkeeping law decree 2028",
}

// BenchmarkBuild measures building the index from articles in memory, and
// reports the heap the finished index keeps.
func BenchmarkBuild(b *testing.B) {
	c := benchCorpus()
	var ix *Index
	cpu := cpuTime()
	for b.Loop() {
		ix = buildIndex(c, testSiteRoot)
	}
	b.StopTimer()
	// CPU time is reported beside wall time: on a shared machine the wall
	// time of a parallel build depends on what else runs.
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	ix = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix = buildIndex(c, testSiteRoot)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "index-MiB")
	b.ReportMetric(float64(ix.Len()), "articles")
	b.ReportMetric(float64(ix.Terms()), "terms")
	runtime.KeepAlive(ix)
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatencies adds percentiles of the measured durations to b.
func reportLatencies(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkAsk measures whole answers through the Go API (Engine.Ask):
// parsing, ranking, snippets and the summary.
func BenchmarkAsk(b *testing.B) {
	e := mustNew(b, Config{SiteRoot: testSiteRoot})
	e.Use(benchCorpus())
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := e.Ask(ctx, Request{Query: benchQuestions[i%len(benchQuestions)], RequestID: "req_bench"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	b.StopTimer()
	reportLatencies(b, lat)
}

// BenchmarkAskHTTP measures POST /ask over loopback HTTP, JSON and stream
// alternately, as a client sees it (request to last byte).
func BenchmarkAskHTTP(b *testing.B) {
	e := mustNew(b, Config{SiteRoot: testSiteRoot})
	e.Use(benchCorpus())
	srv := httptest.NewServer(e)
	defer srv.Close()
	client := srv.Client()
	var lat []time.Duration
	i := 0
	var buf [32 << 10]byte
	for b.Loop() {
		q := benchQuestions[i%len(benchQuestions)]
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ask", strings.NewReader(`{"query":"`+q+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if i%2 == 1 {
			req.Header.Set("Accept", "text/event-stream")
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf[:]); err != nil {
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	b.StopTimer()
	reportLatencies(b, lat)
}

// BenchmarkRebuildFromStore measures what a content change costs in
// production: reading every article and the registries from a real Redis,
// then building the index.
func BenchmarkRebuildFromStore(b *testing.B) {
	// One server whatever the mode (redistest.New): the content sits in one
	// slot anyway, and make bench-ask compares runs on the same setup.
	st := store.New(redistest.Start(b).Client())
	ctx := context.Background()
	pub := &store.Publisher{Store: st, SiteRoot: testSiteRoot, Now: func() time.Time { return contenttest.Base }}
	if err := pub.SyncCorpus(ctx, contenttest.RichCorpus(benchArticles), nil); err != nil {
		b.Fatal(err)
	}
	e := mustNew(b, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	cpu := cpuTime()
	for b.Loop() {
		if err := e.Rebuild(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(e.idx.Load().Len()), "articles")
}
