// Command scale is make bench-scale: Invoicewire at archive scale, measured
// end to end with the real binaries.
//
// For each size N (SCALE_N, default "10000 100000 1000000") it generates an
// N-article archive from the real corpus in content/ (contenttest.Archive:
// recombined paragraphs, non-ASCII kept, twenty years of dates, a fixed
// seed), writes it as a content tree, publishes it into a fresh
// redis-server with bin/iwctl sync, retracts one article in two hundred,
// syncs again unchanged, builds the ask index, starts bin/origin and
// bin/edge, times cache misses of every kind of read at the origin, edits
// one article and waits until the API, its page, its twin, the feed, the
// sitemap and /ask all show it through the edge. Each size prints one
// table; the last table is the growth from the smallest to the largest
// size. Raw output goes to loadtest/out/scale-<N>.txt and
// loadtest/out/scale.md.
//
//	SCALE_N="10000 100000" go run ./loadtest/scale     (after make build)
//
// SCALE_TREE_DIR=/work/scale-data uses the trees already written under
// <dir>/<N>/content instead of generating them, and never writes to them
// (they may be shared between worktrees).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/loadtest/procwatch"
	"github.com/invoicewire/invoicewire/origin/ask"
)

// seed fixes the archive: the same N always gives the same articles.
const seed = 15

func main() {
	sizes := []int{10_000, 100_000, 1_000_000}
	if v := strings.Fields(os.Getenv("SCALE_N")); len(v) > 0 {
		sizes = sizes[:0]
		for _, s := range v {
			n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
			if err != nil || n < 100 {
				fmt.Fprintf(os.Stderr, "scale: SCALE_N must list sizes of at least 100, got %q\n", s)
				os.Exit(2)
			}
			sizes = append(sizes, n)
		}
	}
	out := "loadtest/out"
	if err := os.MkdirAll(out, 0o755); err != nil {
		fatal(err)
	}
	base, err := content.Load("content")
	if err != nil {
		fatal(err)
	}
	var tables []*table
	for _, n := range sizes {
		t, err := measure(context.Background(), base, n, out)
		if err != nil {
			fatal(err)
		}
		tables = append(tables, t)
		text := t.String()
		fmt.Print(text)
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("scale-%d.txt", n)), []byte(text+t.raw.String()), 0o644); err != nil {
			fatal(err)
		}
	}
	var md strings.Builder
	for _, t := range tables {
		md.WriteString(t.String())
		md.WriteString("\n")
	}
	if len(tables) > 1 {
		g := growth(tables[0], tables[len(tables)-1])
		fmt.Print(g)
		md.WriteString(g)
	}
	if err := os.WriteFile(filepath.Join(out, "scale.md"), []byte(md.String()), 0o644); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

const (
	mib = 1 << 20
	gib = 1 << 30
)

// measure runs every step for one size and returns its table.
func measure(ctx context.Context, base *content.Corpus, n int, out string) (*table, error) {
	t := &table{n: n}
	work := filepath.Join(out, "scale", strconv.Itoa(n))
	logf := func(format string, args ...any) {
		line := fmt.Sprintf("scale %d: "+format, append([]any{n}, args...)...)
		fmt.Fprintln(os.Stderr, line)
		fmt.Fprintln(&t.raw, line)
	}

	t0 := time.Now()
	tree, shared := filepath.Join(work, "content"), false
	if d := os.Getenv("SCALE_TREE_DIR"); d != "" {
		// Trees written before, shared between worktrees and never
		// written by this run: <dir>/<N>/content.
		if st, err := os.Stat(filepath.Join(d, strconv.Itoa(n), "content")); err == nil && st.IsDir() {
			tree, shared = filepath.Join(d, strconv.Itoa(n), "content"), true
		}
	}
	info, err := writeArchive("content", tree, base, n, seed, shared)
	if err != nil {
		return nil, err
	}
	if shared {
		logf("using the shared tree %s (not written)", tree)
	}
	logf("archive ready in %s (%d sampled, %d to retract)", time.Since(t0).Round(time.Millisecond), len(info.sample), len(info.retract))

	rp, redisURL, err := startRedis(filepath.Join(work, "redis"))
	if err != nil {
		return nil, err
	}
	defer rp.stop()
	edgePort, err := freePort()
	if err != nil {
		return nil, err
	}
	siteRoot := "http://127.0.0.1:" + strconv.Itoa(edgePort)
	env := []string{"IW_REDIS_URL=" + redisURL, "IW_PUBLIC_URL=" + siteRoot, "IW_LOG_LEVEL=info"}

	t.add("machine", "load average (1 min) at the start, 2 cores", strings.Fields(procwatch.LoadAverage())[0], "", "")

	// Publishing with the real CLI.
	rdb, err := store.NewClient(redisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	redisCPU0 := redisCPU(ctx, rdb)
	sync1, err := runOnce("bin/iwctl", env, "sync", info.dir)
	if err != nil {
		return nil, err
	}
	redisCPU1 := redisCPU(ctx, rdb)
	logf("iwctl sync: %s (CPU %s, Redis CPU %s), peak RSS %d MiB: %s", sync1.wall.Round(time.Millisecond), sync1.cpu.Round(time.Millisecond),
		(redisCPU1 - redisCPU0).Round(time.Millisecond), sync1.peakRSS/mib, lastLine(sync1.out))
	rate := float64(n) / sync1.wall.Seconds()
	t.add("publish", "iwctl sync of the whole archive", dur(sync1.wall), "", "")
	t.add("publish", "publish rate", fmt.Sprintf("%.0f articles/s", rate), "≥ 10,000/s", met(rate >= 10_000))
	t.add("publish", "iwctl CPU time, Redis CPU time", dur(sync1.cpu)+", "+dur(redisCPU1-redisCPU0), "", "")
	t.add("publish", "iwctl peak RSS", fmt.Sprintf("%d MiB", sync1.peakRSS/mib), "≤ 2 GiB", met(sync1.peakRSS <= 2*gib))

	st := store.New(rdb)
	pub := &store.Publisher{Store: st, SiteRoot: siteRoot, Now: time.Now}
	t0 = time.Now()
	if err := retractAll(ctx, pub, info.retract); err != nil {
		return nil, err
	}
	logf("retracted %d articles in %s", len(info.retract), time.Since(t0).Round(time.Millisecond))

	sync2, err := runOnce("bin/iwctl", env, "sync", info.dir)
	if err != nil {
		return nil, err
	}
	logf("unchanged re-sync: %s (CPU %s), peak RSS %d MiB: %s", sync2.wall.Round(time.Millisecond), sync2.cpu.Round(time.Millisecond), sync2.peakRSS/mib, lastLine(sync2.out))
	t.add("publish", "unchanged re-sync", dur(sync2.wall), "≤ 15 s", met(sync2.wall <= 15*time.Second))
	t.add("publish", "unchanged re-sync, iwctl CPU time", dur(sync2.cpu), "", "")

	used, jsonBytes, err := redisMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	t.add("redis", "used_memory, events not yet delivered", fmt.Sprintf("%d MiB", used/mib), "", "")
	t.add("redis", "stored article JSON", fmt.Sprintf("%d MiB", jsonBytes/mib), "", "")
	t.add("redis", "used_memory ÷ stored JSON, events not yet delivered", fmt.Sprintf("%.2f", float64(used)/float64(jsonBytes)), "", "")
	for _, k := range []struct{ what, pattern string }{
		{"events stream (until the worker delivers them)", events.Stream},
		{"index of all articles (sorted set)", "iw:{content}:idx:all"},
		{"all indexes (sorted sets)", "iw:{content}:idx:*"},
		{"sitemap files (hashes)", "iw:{content}:sitemap:*"},
		{"sync digests (hashes)", "iw:{content}:synced*"},
	} {
		n, err := keysMemory(ctx, rdb, k.pattern)
		if err != nil {
			return nil, fmt.Errorf("measuring %s: %w", k.pattern, err)
		}
		t.add("redis", k.what, fmt.Sprintf("%d MiB", n/mib), "", "")
	}
	// The worker deletes each event once it is delivered; none runs here,
	// so the stream is emptied as it would be.
	if err := rdb.XTrimMaxLen(ctx, events.Stream, 0).Err(); err != nil {
		return nil, err
	}
	if used, _, err = redisMemory(ctx, rdb); err != nil {
		return nil, err
	}
	ratio := float64(used) / float64(jsonBytes)
	t.add("redis", "used_memory, events delivered", fmt.Sprintf("%d MiB", used/mib), "", "")
	t.add("redis", "used_memory ÷ stored JSON, events delivered", fmt.Sprintf("%.2f", ratio), "≤ 1.5", met(ratio <= 1.5))

	build, heap, err := buildAskIndex(ctx, st, siteRoot)
	if err != nil {
		return nil, err
	}
	t.add("ask", "index built from Redis (in this process)", dur(build), "≤ 60 s", met(build <= 60*time.Second))
	t.add("ask", "index heap", fmt.Sprintf("%d MiB", heap/mib), "", "")

	// The origin and the edge.
	originAddr, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	adminAddr, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	env = append(env, "IW_ORIGIN_ADDR="+originAddr, "IW_ORIGIN_METRICS_ADDR="+metricsAddr,
		"IW_EDGE_PORT="+strconv.Itoa(edgePort), "IW_EDGE_ADMIN_ADDR="+adminAddr, "IW_RATELIMIT_QUOTA=100000000")
	client := &http.Client{Timeout: 2 * time.Minute}
	originURL := "http://" + originAddr
	// The origin runs as deployed (deploy/k8s): with a soft memory limit,
	// here the goal's 1.5 GiB, unless the caller set one.
	originEnv := env
	if os.Getenv("GOMEMLIMIT") == "" {
		originEnv = append(slices.Clone(env), "GOMEMLIMIT=1536MiB")
	}
	op, err := start("bin/origin", originEnv)
	if err != nil {
		return nil, err
	}
	defer func() { op.stop(); fmt.Fprintf(&t.raw, "\norigin log (tail):\n%s\n", tail(op.log.String(), 4000)) }()
	apiReady, err := waitHTTP(ctx, 10*time.Minute, func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, originURL+"/api/v1/", nil)
		code, _, err := status(client, req)
		return err == nil && code == http.StatusOK
	})
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, tail(op.log.String(), 2000))
	}
	askReady, err := waitHTTP(ctx, 10*time.Minute, func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, originURL+"/ask", strings.NewReader(`{"query":"peppol"}`))
		req.Header.Set("Content-Type", "application/json")
		code, _, err := status(client, req)
		return err == nil && code == http.StatusOK
	})
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, tail(op.log.String(), 2000))
	}
	askReady += apiReady
	t.add("origin", "start until the API answers", dur(apiReady), "", "")
	t.add("origin", "start until /ask answers", dur(askReady), "", "")
	startRSS := op.rss()
	t.add("origin", "RSS after start (index built)", fmt.Sprintf("%d MiB", startRSS/mib), "≤ 1.5 GiB", met(startRSS <= 3*gib/2))

	ep, err := start("bin/edge", env, "run", "--config", "caddyfile/Caddyfile", "--adapter", "caddyfile")
	if err != nil {
		return nil, err
	}
	defer ep.stop()
	if _, err := waitHTTP(ctx, 2*time.Minute, func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, siteRoot+"/api/v1/", nil)
		code, _, err := status(client, req)
		return err == nil && code == http.StatusOK
	}); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, tail(ep.log.String(), 2000))
	}

	// Cache misses of every kind, at the origin.
	mix := &readMix{r: rand.New(rand.NewPCG(seed, uint64(n))), sample: published(info), total: n - len(info.retract), perKind: 200}
	kinds := map[string][]target{}
	for _, m := range []map[string][]target{mix.listTargets(), mix.articleTargets()} {
		for k, v := range m {
			kinds[k] = v
		}
	}
	kinds["/ask (JSON answer)"] = mix.askTargets()
	feeds, err := feedTargets(ctx, client, originURL, siteRoot)
	if err != nil {
		return nil, err
	}
	for k, v := range feeds {
		kinds[k] = v
	}
	maps, files, err := sitemapTargets(ctx, client, originURL, siteRoot)
	if err != nil {
		return nil, err
	}
	for k, v := range maps {
		kinds[k] = v
	}
	t.add("sitemaps", "files listed by the sitemap index", strconv.Itoa(files), fmt.Sprintf("≥ %d", 2+(n-len(info.retract)+49_999)/50_000), met(files >= 2+(n-len(info.retract)+49_999)/50_000))
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		l := timeTargets(ctx, client, originURL, k, kinds[k])
		t.lat = append(t.lat, l)
		if l.note != "" {
			logf("%s: %d of %d failed, first: %s", k, l.fails, l.n, l.note)
		}
	}
	mixRSS := op.rss()
	t.add("origin", "index build, as the origin logs it", builtLine(op.log.String()), "", "")
	t.add("origin", "RSS after the read mix", fmt.Sprintf("%d MiB", mixRSS/mib), "≤ 1.5 GiB", met(mixRSS <= 3*gib/2))

	// One edit, written as iwctl sync writes it, watched through the edge.
	token := "zq" + letters(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)), 10)
	edited, err := editArticle(info, base, seed, info.newest, token, time.Now())
	if err != nil {
		return nil, err
	}
	// An article stays in its sitemap file when edited, so the file is
	// found before the edit and only it is watched.
	sitemapFile := findSitemapFile(ctx, client, siteRoot, edited)
	t0 = time.Now()
	o, err := pub.SyncArticle(ctx, edited)
	if err != nil || !o.Changed {
		return nil, fmt.Errorf("scale: publishing the edit: changed=%v %v", o.Changed, err)
	}
	commit := time.Since(t0)
	v := watchEdit(ctx, client, siteRoot, sitemapFile, edited, token, t0, 2*time.Minute)
	t.add("edit", "one edit committed (store.Publisher.SyncArticle)", dur(commit), "", "")
	surfaces := make([]string, 0, len(v.surfaces))
	for s := range v.surfaces {
		surfaces = append(surfaces, s)
	}
	slices.Sort(surfaces)
	for _, s := range surfaces {
		t.add("edit", "visible at the edge: "+s, dur(v.surfaces[s]), "", "")
	}
	t.add("edit", "visible everywhere", dur(v.all), "≤ 1 s", met(v.all >= 0 && v.all <= time.Second))
	if info.shared {
		// The shared tree does not hold the edit; a sync would undo it.
		return t, nil
	}
	sync3, err := runOnce("bin/iwctl", env, "sync", info.dir)
	if err != nil {
		return nil, err
	}
	logf("sync after the edit, already published: %s: %s", sync3.wall.Round(time.Millisecond), lastLine(sync3.out))
	return t, nil
}

// published are the sampled articles that stay published.
func published(info *archiveInfo) []*content.Article {
	gone := map[string]bool{}
	for _, s := range info.retract {
		gone[s] = true
	}
	var out []*content.Article
	for _, a := range info.sample {
		if !gone[a.Slug] {
			out = append(out, a)
		}
	}
	return out
}

// retractAll retracts slugs, four at a time, as iwctl retract does each.
func retractAll(ctx context.Context, pub *store.Publisher, slugs []string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	next := make(chan string)
	for range 4 {
		wg.Go(func() {
			for s := range next {
				if _, err := pub.Retract(ctx, s, "Generated retraction of the scale benchmark."); err != nil {
					select {
					case errs <- fmt.Errorf("scale: retracting %s: %w", s, err):
					default:
					}
				}
			}
		})
	}
	for _, s := range slugs {
		next <- s
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// redisMemory is Redis's used_memory and the bytes of article JSON stored.
// keysMemory is the memory Redis reports for the keys matching pattern.
func keysMemory(ctx context.Context, rdb redis.UniversalClient, pattern string) (int64, error) {
	var total int64
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, iter.Err()
}

func redisMemory(ctx context.Context, rdb redis.UniversalClient) (used, jsonBytes int64, err error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	iter := rdb.Scan(ctx, 0, "iw:{content}:article:*", 1000).Iterator()
	var keys []string
	flush := func() error {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.StrLen(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for _, c := range cmds {
			jsonBytes += c.Val()
		}
		keys = keys[:0]
		return nil
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return 0, 0, err
	}
	if len(keys) > 0 {
		if err := flush(); err != nil {
			return 0, 0, err
		}
	}
	return used, jsonBytes, nil
}

// redisCPU is the CPU time Redis has used (INFO cpu), zero when unknown.
func redisCPU(ctx context.Context, rdb redis.UniversalClient) time.Duration {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				x, _ := strconv.ParseFloat(v, 64)
				total += x
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}

// buildAskIndex builds the ask index from the store in this process and
// reports the time and the heap the index keeps.
func buildAskIndex(ctx context.Context, st *store.Store, siteRoot string) (time.Duration, uint64, error) {
	e, err := ask.New(ask.Config{Store: st, SiteRoot: siteRoot, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, 0, err
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	if err := e.Rebuild(ctx); err != nil {
		return 0, 0, err
	}
	took := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	heap := uint64(0)
	if after.HeapAlloc > before.HeapAlloc {
		heap = after.HeapAlloc - before.HeapAlloc
	}
	e = nil
	debug.FreeOSMemory()
	return took, heap, nil
}

func letters(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// builtLine is the took of the origin's first "ask: index built" log line
// (JSON, nanoseconds).
func builtLine(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"ask: index built"`) {
			continue
		}
		var rec struct {
			Took time.Duration `json:"took"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil {
			return dur(rec.Took)
		}
	}
	return "-"
}
