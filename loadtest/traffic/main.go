// Command traffic is make bench-traffic: the edge under internet-shaped
// load, on the real stack built from the real binaries.
//
// It starts two non-persistent redis-servers (the content, and the rate
// limiter's counters as IW_RATELIMIT_REDIS_URL), publishes content/ with
// bin/iwctl and TRAFFIC_ARTICLES (10,000) articles of make bench-scale's
// generated archive (contenttest.ArchiveSource, the same seed) with the
// publisher iwctl uses, then runs bin/origin and bin/edge (make run's
// caddyfile/Caddyfile, IW_TRUSTED_PROXIES=127.0.0.0/8). The edge has a core
// of its own (BENCH_EDGE_CPU, 0); the origin and both Redis servers share
// the other (BENCH_ORIGIN_CPU, 1) with this program, which the make target
// pins there too (BENCH_LOAD_CPU): the ratio then compares what the edge
// does with one core in both phases, and the origin's renderings of misses
// do not take the edge's CPU. This program sends the load over keep-alive
// connections of its own (raw HTTP/1.1, a few allocations a request):
//
//   - single URL: one article's JSON, from 65,536 addresses in turn (the
//     quota is the real one, so one address would be refused): the
//     reference, as make bench-edge's single URL;
//   - hot set alone: the traffic mix below restricted to its 100 most
//     popular URLs, without /ask or the clients over their quota, for
//     TRAFFIC_SINGLE_DURATION: every answer a hit, so beside the traffic
//     phase it tells how much of the gap to the single URL the traffic's
//     answers and clients make, and how much its long tail's misses and
//     /ask;
//   - traffic: every article's JSON, page and markdown twin (3 URLs an
//     article) with Zipf popularity, a fresh random client per request
//     (IPv4, or an IPv6 /64) in X-Forwarded-For, Accept-Encoding among
//     zstd, br, gzip and identity, 2% conditional (an ETag seen before),
//     1% POST /ask, and three clients each sending twice its quota
//     (IW_RATELIMIT_QUOTA per IW_RATELIMIT_WINDOW, the README's defaults)
//     on connections of their own, so 429.
//
// Before all three, the traffic mix runs for TRAFFIC_WARMUP (30 s, not
// reported) and until TRAFFIC_WARMUP_REQUESTS (150,000) were answered, as
// an edge that has been serving for a while would have its cache filled by
// the same popularity.
//
// All three are closed loops that saturate the edge's core. Then the
// single URL and the traffic run again as open loops at each share in
// TRAFFIC_LATENCY_LOAD (0.2, 0.35, 0.5 and 0.7) of the traffic phase's
// rate, for TRAFFIC_LATENCY_DURATION (20s) each: requests fall due at
// fixed times, each is sent on whichever connection is free first, and its
// latency counts from the time it was due. That is the latency clients
// see at a load the edge carries, which a saturated closed loop cannot
// show; the loads together show up to which share of its core's capacity
// an edge keeps p99 within 10 ms. Each open loop also reports its latency
// counted from when the request was sent, which leaves out delays on the
// generator's side.
//
// Each open loop also reports how long the busiest thread of the edge and
// of this program waited, runnable, for a CPU (the kernel's run_delay) and how
// much of the edge's core went to interrupts and the hypervisor: latency
// that no request's own work explains.
//
// It reports req/s, p50/p99/p99.9, edge peak RSS, the edge's GC pause time,
// the CPU the edge spent per request in each phase, the generator's own
// CPU, the counters Redis's commands/s and bytes/s, the hit ratio of the
// hot set (the 100 most popular URLs) and the load average, as a table on
// stdout and in loadtest/out/traffic.md, with the raw figures in
// loadtest/out/traffic.txt. With TRAFFIC_PROFILE=1 it also saves the
// edge's CPU profile (20 s in the middle of the traffic phase, with the
// origin's beside it in origin-cpu.pprof, and the
// middle halves of the single URL's and the hot set's in
// edge-cpu-single.pprof and edge-cpu-hot.pprof) and heap
// profile (at its end) from the admin API's /debug/pprof to
// loadtest/out/traffic/edge-{cpu,heap}.pprof, and 3 s of its execution
// trace in each open loop at the highest load,
// edge-open-{single,traffic}.trace.
//
// Environment: TRAFFIC_ARTICLES (10000), TRAFFIC_DURATION (60s),
// TRAFFIC_SINGLE_DURATION (20s), TRAFFIC_WARMUP (30s),
// TRAFFIC_WARMUP_REQUESTS (150000), TRAFFIC_LATENCY_LOAD (0.2,0.35,0.5,0.7),
// TRAFFIC_LATENCY_DURATION (20s), TRAFFIC_CONNECTIONS
// (64), TRAFFIC_PROFILE, TRAFFIC_EDGE_BIN (bin/edge: another build of the
// edge, for before/after pairs in one session), BENCH_EDGE_CPU (0),
// BENCH_ORIGIN_CPU (1).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/loadtest/procwatch"
)

// seed is make bench-scale's: the same archive.
const seed = 15

const mib = 1 << 20

func main() {
	if err := benchTraffic(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// loads parses TRAFFIC_LATENCY_LOAD: shares of the traffic phase's rate,
// comma-separated, each in (0, 1], run in increasing order.
func loads(v string) ([]float64, error) {
	var l []float64
	for f := range strings.SplitSeq(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x <= 0 || x > 1 {
			return nil, fmt.Errorf("traffic: TRAFFIC_LATENCY_LOAD %q: each share must be a number in (0, 1]", v)
		}
		l = append(l, x)
	}
	slices.Sort(l)
	return l, nil
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchTraffic(ctx context.Context) error {
	n := envInt("TRAFFIC_ARTICLES", 10_000)
	dur := envDuration("TRAFFIC_DURATION", 60*time.Second)
	single := envDuration("TRAFFIC_SINGLE_DURATION", 20*time.Second)
	conns := envInt("TRAFFIC_CONNECTIONS", 64)
	warm := envDuration("TRAFFIC_WARMUP", 30*time.Second)
	warmRequests := envInt("TRAFFIC_WARMUP_REQUESTS", 150_000)
	latencyDur := envDuration("TRAFFIC_LATENCY_DURATION", 20*time.Second)
	latencyLoads, err := loads(envString("TRAFFIC_LATENCY_LOAD", "0.2,0.35,0.5,0.7"))
	if err != nil {
		return err
	}
	edgeCPU, cpu := envString("BENCH_EDGE_CPU", "0"), envString("BENCH_ORIGIN_CPU", "1")
	// The edge's core, whose interrupts and stolen time are reported; -1
	// (none) when BENCH_EDGE_CPU names several.
	edgeCore, err := strconv.Atoi(edgeCPU)
	if err != nil {
		edgeCore = -1
	}
	out := "loadtest/out"
	work := filepath.Join(out, "traffic")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	var raw strings.Builder
	logf := func(format string, args ...any) {
		line := fmt.Sprintf("traffic: "+format, args...)
		fmt.Fprintln(os.Stderr, line)
		fmt.Fprintln(&raw, line)
	}
	loadBefore := procwatch.LoadAverage()
	logf("load average before: %s", loadBefore)

	contentRedis, contentURL, err := startRedis(work, "redis-content", cpu)
	if err != nil {
		return err
	}
	defer contentRedis.stop()
	counterRedis, countersURL, err := startRedis(work, "redis-counters", cpu)
	if err != nil {
		return err
	}
	defer counterRedis.stop()

	originAddr, _ := freeport.Addr()
	originMetrics, _ := freeport.Addr()
	edgeAddr, _ := freeport.Addr()
	edgeAdmin, _ := freeport.Addr()
	base := "http://" + edgeAddr
	env := []string{
		"IW_REDIS_URL=" + contentURL, "IW_RATELIMIT_REDIS_URL=" + countersURL,
		"IW_PUBLIC_URL=" + base, "IW_LOG_LEVEL=warn",
		"IW_ORIGIN_ADDR=" + originAddr, "IW_ORIGIN_METRICS_ADDR=" + originMetrics,
		"IW_EDGE_PORT=" + edgeAddr[strings.LastIndexByte(edgeAddr, ':')+1:], "IW_EDGE_ADMIN_ADDR=" + edgeAdmin,
		"IW_TRUSTED_PROXIES=127.0.0.0/8",
	}

	// Publishing: the real corpus with the CLI, then the archive.
	t0 := time.Now()
	iw, err := start(work, "iwctl", cpu, env, "bin/iwctl", "sync", "content")
	if err != nil {
		return err
	}
	if err := iw.cmd.Wait(); err != nil {
		return fmt.Errorf("traffic: iwctl sync content: %w (see %s/iwctl.log)", err, work)
	}
	articles, err := publishArchive(ctx, contentURL, base, n)
	if err != nil {
		return err
	}
	logf("published content/ and %d generated articles in %s", len(articles), time.Since(t0).Round(time.Millisecond))

	origin, err := start(work, "origin", cpu, env, "bin/origin")
	if err != nil {
		return err
	}
	defer origin.stop()
	if err := procwatch.WaitFor(5*time.Minute, func() bool { return procwatch.Answers("http://" + originAddr + "/api/v1/") }); err != nil {
		return fmt.Errorf("traffic: origin: %w (see %s/origin.log)", err, work)
	}
	edge, err := start(work, "edge", edgeCPU, env, envString("TRAFFIC_EDGE_BIN", "bin/edge"), "run", "--config", "caddyfile/Caddyfile", "--adapter", "caddyfile")
	if err != nil {
		return err
	}
	defer edge.stop()
	if err := procwatch.WaitFor(2*time.Minute, func() bool { return procwatch.Answers(base + "/api/v1/") }); err != nil {
		return fmt.Errorf("traffic: edge: %w (see %s/edge.log)", err, work)
	}

	// Every article's JSON, page and twin, in a fixed random order: the
	// Zipf rank of a URL is its place in this list.
	urls := make([]string, 0, 3*len(articles))
	for _, a := range articles {
		urls = append(urls, "/api/v1/articles/"+a.Slug, a.Path()+"/", a.Path()+".md")
	}
	r := rand.New(rand.NewPCG(seed, 2))
	r.Shuffle(len(urls), func(i, j int) { urls[i], urls[j] = urls[j], urls[i] })
	var askBodies []string
	for _, q := range []string{"When does Belgium require B2B e-invoicing?", "Peppol access point certificate migration",
		"What is the e-reporting obligation in France?", "KSeF Poland postponed", articles[0].Title, articles[1].Title} {
		b, _ := json.Marshal(map[string]string{"query": q})
		askBodies = append(askBodies, string(b))
	}
	quota, window := float64(envInt("IW_RATELIMIT_QUOTA", 1000)), time.Duration(envInt("IW_RATELIMIT_WINDOW", 60))*time.Second
	traffic := &mix{urls: urls, zipfS: 1.1, hot: 100, conditional: 0.02, ask: 0.01, askBodies: askBodies,
		heavy: []string{"198.51.100.1", "198.51.100.2", "2001:db8:ffff:1::1"}, heavyRate: 2 * quota / window.Seconds()}
	reference := &mix{urls: urls[:1], hot: 1, fixedClients: 65536}
	// The traffic's hot set alone: its answers and fresh clients without
	// the tail's misses or /ask, to tell how much of the gap to the single
	// URL each makes.
	hotSet := &mix{urls: urls[:traffic.hot], zipfS: traffic.zipfS, hot: traffic.hot, conditional: traffic.conditional}

	// Warm-up, not reported: the cache filled by the traffic's own
	// popularity, connections open.
	// It lasts at least TRAFFIC_WARMUP and until TRAFFIC_WARMUP_REQUESTS
	// were answered (at most four times TRAFFIC_WARMUP): what the cache
	// holds when the phases start then depends on the requests, not on how
	// fast a loaded machine let the edge answer them. With a time alone, a
	// run at load 20 started with a fifth of the requests of a quiet one
	// and 81-88% hits on every GET instead of 95%, and its misses, not the
	// edge's changes, decided its figures.
	logf("warming up (%s, at least %d requests)", warm, warmRequests)
	t0w := time.Now()
	var warmed, hits, cacheable int64
	for round := uint64(1); warmed == 0 || warmed < int64(warmRequests) && time.Since(t0w) < 4*warm; round++ {
		d := warm
		if round > 1 {
			d = min(warm/3, 4*warm-time.Since(t0w))
		}
		wu := run(ctx, edgeAddr, traffic, conns, d, 100+round, 0)
		warmed, hits, cacheable = warmed+wu.requests, hits+wu.hits, cacheable+wu.cacheable
	}
	logf("warm-up: %d requests in %s, hit ratio %.1f%%", warmed, time.Since(t0w).Round(time.Second), 100*float64(hits)/float64(max(cacheable, 1)))

	sample := func(stop <-chan struct{}, peak *int64, wg *sync.WaitGroup) {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if v := edge.rss(); v > *peak {
				*peak = v
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}
	phase := func(name string, m *mix, d time.Duration, perSecond float64) (*result, int64) {
		var peak int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go sample(stop, &peak, &wg)
		if perSecond > 0 {
			logf("%s: %s over %d connections, open loop at %.0f requests/s", name, d, conns, perSecond)
		} else {
			logf("%s: %s over %d connections", name, d, conns)
		}
		et0, lt0, ct0 := procwatch.ThreadTimes(edge.pid()), procwatch.ThreadTimes(os.Getpid()), procwatch.CoreTakenAway(edgeCore)
		cpu0 := edge.cpu()
		res := run(ctx, edgeAddr, m, conns, d, 7, perSecond)
		res.edgeCPU = edge.cpu() - cpu0
		res.edgeWait = procwatch.BusiestThread(et0, procwatch.ThreadTimes(edge.pid())).Wait
		res.loadWait = procwatch.BusiestThread(lt0, procwatch.ThreadTimes(os.Getpid())).Wait
		res.edgeCoreTaken = procwatch.CoreTakenAway(edgeCore) - ct0
		close(stop)
		wg.Wait()
		return res, peak
	}

	// profile saves, with TRAFFIC_PROFILE (and when on), the admin API's
	// /debug/pprof/<what> into work/<file> after delay, in the background;
	// the function it returns waits for the file.
	profileOf := func(admin string, on bool, delay time.Duration, what, file string) (wait func()) {
		if !on || os.Getenv("TRAFFIC_PROFILE") == "" {
			return func() {}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(delay)
			saveProfile("http://"+admin+"/debug/pprof/"+what, filepath.Join(work, file))
		}()
		return func() { <-done }
	}
	profile := func(on bool, delay time.Duration, what, file string) (wait func()) {
		return profileOf(edgeAdmin, on, delay, what, file)
	}

	// The middle halves of the single URL's and the hot set's phases are
	// profiled too, to set beside the traffic phase's profile: where a
	// traffic request's extra CPU goes, and how much of it the answers
	// themselves take.
	halfPhase := fmt.Sprintf("profile?seconds=%d", max(int(single/2/time.Second), 1))
	profiledSingle := profile(true, single/4, halfPhase, "edge-cpu-single.pprof")
	ref, refRSS := phase("single URL", reference, single, 0)
	profiledSingle()
	profiledHot := profile(true, single/4, halfPhase, "edge-cpu-hot.pprof")
	hot, _ := phase("hot set alone", hotSet, single, 0)
	profiledHot()

	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(countersURL, "redis://"), "/0")})
	defer rdb.Close()
	crdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(contentURL, "redis://"), "/0")})
	defer crdb.Close()
	gc0, rs0, cs0 := readGC("http://"+edgeAdmin+"/metrics"), readRedisStats(ctx, rdb), readRedisStats(ctx, crdb)
	out0 := readCacheOutcomes("http://" + edgeAdmin + "/metrics")
	o0 := origin.cpu()
	profiled := profile(true, dur/4, "profile?seconds=20", "edge-cpu.pprof")
	profiledOrigin := profileOf(originMetrics, true, dur/4, "profile?seconds=20", "origin-cpu.pprof")
	res, rss := phase("traffic", traffic, dur, 0)
	profiled()
	profiledOrigin()
	profile(true, 0, "heap", "edge-heap.pprof")()
	o1 := origin.cpu()
	gc1, rs1, cs1 := readGC("http://"+edgeAdmin+"/metrics"), readRedisStats(ctx, rdb), readRedisStats(ctx, crdb)
	outcomes := readCacheOutcomes("http://" + edgeAdmin + "/metrics")
	for i := range outcomes {
		outcomes[i] -= out0[i]
	}
	counters, _ := rdb.DBSize(ctx).Result()
	mem, _ := rdb.Info(ctx, "memory").Result()

	// Latency at loads the edge can carry: both mixes open-loop at each
	// of TRAFFIC_LATENCY_LOAD's shares of the traffic phase's rate. The
	// closed loops above saturate the edge's core, so their latency is
	// mostly the queue of the other connections' requests
	// (docs/edge-gateway.md, "Traffic").
	// With TRAFFIC_PROFILE, 3 s of the edge's execution trace in the
	// middle of each open loop at the highest load show what held its
	// core while requests waited (go tool trace).
	var open []openLoop
	for i, load := range latencyLoads {
		last := i == len(latencyLoads)-1
		o := openLoop{load: load, rate: load * rate(res)}
		wait := profile(last, latencyDur/2, "trace?seconds=3", "edge-open-single.trace")
		o.ref, _ = phase("single URL", reference, latencyDur, o.rate)
		wait()
		wait = profile(last, latencyDur/2, "trace?seconds=3", "edge-open-traffic.trace")
		o.res, _ = phase("traffic", traffic, latencyDur, o.rate)
		wait()
		open = append(open, o)
	}

	loadAfter := procwatch.LoadAverage()
	logf("load average after: %s", loadAfter)

	atEnd := readMetrics("http://"+edgeAdmin+"/metrics", "go_memstats_heap_inuse_bytes", "go_gc_gomemlimit_bytes", "caddy_edge_cache_field_sets")
	rep := &report{
		n: len(articles), urls: len(urls), conns: conns, loadBefore: loadBefore, loadAfter: loadAfter,
		ref: ref, refRSS: refRSS, hot: hot, res: res, rss: rss, open: open, originCPU: o1 - o0,
		heap: atEnd[0], memLimit: atEnd[1], fieldSets: atEnd[2], outcomes: outcomes,
		gcPause: time.Duration((gc1.pauseSum - gc0.pauseSum) * float64(time.Second)), gcCount: int64(gc1.count - gc0.count),
		gcMax:    time.Duration(gc1.maxPause * float64(time.Second)),
		counters: rs1.sub(rs0), content: cs1.sub(cs0), counterKeys: counters, counterMemory: infoField(mem, "used_memory_human"),
	}
	table := rep.String()
	fmt.Print(table)
	fmt.Fprint(&raw, "\n", rep.raw())
	if err := os.WriteFile(filepath.Join(out, "traffic.md"), []byte(table), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "traffic.txt"), []byte(raw.String()), 0o644)
}

// publishArchive publishes the first n articles of make bench-scale's
// archive with the publisher iwctl uses (eight at a time) and returns them.
func publishArchive(ctx context.Context, redisURL, siteRoot string, n int) ([]*content.Article, error) {
	corpus, err := content.Load("content")
	if err != nil {
		return nil, err
	}
	rdb, err := store.NewClient(redisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	pub := &store.Publisher{Store: store.New(rdb), SiteRoot: siteRoot, Now: time.Now}
	src := contenttest.NewArchiveSource(corpus, seed)
	out := make([]*content.Article, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				a := src.Article(i)
				if _, err := pub.SyncArticle(ctx, a); err != nil {
					mu.Lock()
					firstErr = fmt.Errorf("traffic: publishing %s: %w", a.Slug, err)
					mu.Unlock()
					return
				}
				out[i] = a
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return "?"
}

func (a redisStats) sub(b redisStats) redisStats {
	return redisStats{a.commands - b.commands, a.netIn - b.netIn, a.netOut - b.netOut}
}
