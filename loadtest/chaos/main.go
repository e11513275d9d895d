// Command chaos is `make chaos`: it starts the whole service on free
// loopback ports (Redis, origin, worker, edge with caddyfile/Caddyfile, a
// webhook receiver), puts it under load, and breaks it three ways while
// printing what clients saw and what was lost (docs/architecture.md;
// docs/decisions.md: edge cache, rate limit, delivery, Redis persistence):
//
//  1. Redis killed (SIGKILL) while readers read, iwctl retracts and
//     restores articles and clients create webhook subscriptions; restarted
//     on its append-only file. The edge keeps serving cached pages and
//     answers the rest with JSON errors; afterwards nothing acknowledged is
//     missing and nothing half-written is visible.
//  2. The worker killed (SIGKILL) in the middle of a fan-out to 100
//     subscriptions and restarted: every delivery arrives at least once.
//  3. The origin restarted behind the edge: clients of cached pages see no
//     error.
//
// It exits 1 if any expectation failed or anything acknowledged was lost.
// Binaries come from bin/ (make build).
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/invoicewire/invoicewire/internal/freeport"
)

func main() {
	c, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		if c != nil {
			c.stopAll()
		}
		os.Exit(1)
	}
	ok := c.run()
	c.stopAll()
	fmt.Printf("\nchaos: lost %d acknowledged writes or deliveries (must be 0)\n", c.lost)
	if !ok || c.lost != 0 {
		fmt.Printf("chaos: SOME EXPECTATIONS FAILED (logs and data kept in %s)\n", c.dir)
		os.Exit(1)
	}
	fmt.Println("chaos: every expectation held")
	// A passing run's logs and data are of no further use; a failing
	// run's stay for whoever looks into it.
	if err := os.RemoveAll(c.dir); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: removing its files:", err)
	}
}

// cluster is the running service.
type cluster struct {
	dir                           string
	env                           []string
	redisPort                     int
	edge, origin, originMetrics   string
	edgeAdmin, workerMetrics, rcv string
	procs                         map[string]*exec.Cmd
	failed                        bool
	// lost counts acknowledged writes and deliveries found missing.
	lost int
}

// redisFsync is the content Redis's appendfsync, as deploy/ configures it
// (docs/decisions.md, "Redis persistence").
const redisFsync = "everysec"

// redisAppendOnly is "yes" as deployed. CHAOS_REDIS_APPENDONLY=no runs
// Redis without persistence, so the SIGKILL loses everything: a check that
// make chaos notices loss and fails.
var redisAppendOnly = cmp.Or(os.Getenv("CHAOS_REDIS_APPENDONLY"), "yes")

// freePort is a port for one of the stack's servers, below the ephemeral
// range so that no outgoing connection takes it before the server binds it
// (internal/freeport).
func freePort() int {
	ports, err := freeport.Find(1)
	if err != nil {
		panic(err)
	}
	return ports[0]
}

func start() (*cluster, error) {
	for _, b := range []string{"bin/origin", "bin/worker", "bin/edge", "bin/iwctl", "bin/receiver"} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("%s missing: run make build and go build -o bin/ ./loadtest/receiver (make chaos does)", b)
		}
	}
	dir, err := os.MkdirTemp("", "invoicewire-chaos-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, procs: map[string]*exec.Cmd{}, redisPort: freePort()}
	edgePort := freePort()
	c.edge = fmt.Sprintf("127.0.0.1:%d", edgePort)
	c.origin = fmt.Sprintf("127.0.0.1:%d", freePort())
	c.originMetrics = fmt.Sprintf("127.0.0.1:%d", freePort())
	c.workerMetrics = fmt.Sprintf("127.0.0.1:%d", freePort())
	c.edgeAdmin = fmt.Sprintf("127.0.0.1:%d", freePort())
	c.rcv = fmt.Sprintf("127.0.0.1:%d", freePort())
	c.env = append(os.Environ(),
		"IW_PUBLIC_URL=http://"+c.edge,
		fmt.Sprintf("IW_REDIS_URL=redis://127.0.0.1:%d/0", c.redisPort),
		"IW_ORIGIN_ADDR="+c.origin,
		"IW_ORIGIN_METRICS_ADDR="+c.originMetrics,
		"IW_WORKER_METRICS_ADDR="+c.workerMetrics,
		"IW_EDGE_PORT="+strconv.Itoa(edgePort),
		"IW_EDGE_ADMIN_ADDR="+c.edgeAdmin,
		"IW_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8",
		"IW_RATELIMIT_QUOTA=100000000", "IW_RATELIMIT_REGISTER_QUOTA=100000000", "IW_EDGE_CONNS_PER_ADDRESS=100000",
		// A killed worker's events and deliveries come back quickly.
		"IW_WORKER_CLAIM_IDLE=3s", "IW_WORKER_LEASE=3s",
		"IW_LOG_LEVEL=warn", "IW_SHUTDOWN_GRACE=2s",
		"XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir,
	)
	fmt.Printf("chaos: service on http://%s (files in %s)\n", c.edge, dir)
	if err := c.startRedis(); err != nil {
		return c, err
	}
	if out, err := c.command("bin/iwctl", "sync", "content").CombinedOutput(); err != nil {
		return c, fmt.Errorf("iwctl sync: %v\n%s", err, out)
	}
	steps := []struct {
		name  string
		args  []string
		ready string
	}{
		{"receiver", []string{"bin/receiver", "-addr", c.rcv, "-slow", slowDelivery.String()}, "http://" + c.rcv + "/stats"},
		{"origin", []string{"bin/origin"}, "http://" + c.origin + "/api/v1/"},
		{"worker", []string{"bin/worker"}, "http://" + c.workerMetrics + "/metrics"},
		{"edge", []string{"bin/edge", "run", "--config", "caddyfile/Caddyfile", "--adapter", "caddyfile"}, "http://" + c.edge + "/api/v1/"},
	}
	for _, s := range steps {
		if err := c.startProc(s.name, s.args...); err != nil {
			return c, err
		}
		if err := waitHTTP(s.ready); err != nil {
			return c, fmt.Errorf("%s: %v\n%s", s.name, err, c.tail(s.name))
		}
	}
	return c, nil
}

func (c *cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	return cmd
}

func (c *cluster) startRedis() error {
	data := filepath.Join(c.dir, "redis")
	os.MkdirAll(data, 0o755)
	if err := c.startProc("redis", "redis-server", "--port", strconv.Itoa(c.redisPort), "--bind", "127.0.0.1",
		"--dir", data, "--appendonly", redisAppendOnly, "--appendfsync", redisFsync, "--save", ""); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.redisPort)); err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("redis-server did not start")
}

func (c *cluster) startProc(name string, args ...string) error {
	logf, err := os.OpenFile(filepath.Join(c.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := c.command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	c.procs[name] = cmd
	go func() { cmd.Wait(); logf.Close() }()
	return nil
}

// stop ends a process: SIGTERM (graceful) or SIGKILL (a crash).
func (c *cluster) stop(name string, sig syscall.Signal) {
	cmd := c.procs[name]
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	for i := 0; i < 200; i++ {
		if cmd.Process.Signal(syscall.Signal(0)) != nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	cmd.Process.Kill()
	delete(c.procs, name)
}

func (c *cluster) stopAll() {
	for _, n := range []string{"edge", "worker", "origin", "receiver", "redis"} {
		c.stop(n, syscall.SIGTERM)
	}
}

func (c *cluster) tail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

func waitHTTP(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within 30 s", url)
}

// expect prints one expectation and remembers a failure.
func (c *cluster) expect(ok bool, format string, args ...any) {
	mark := "ok  "
	if !ok {
		mark = "FAIL"
		c.failed = true
	}
	fmt.Printf("  [%s] %s\n", mark, fmt.Sprintf(format, args...))
}

// tally counts what clients saw in one stretch of time.
type tally struct {
	mu                                 sync.Mutex
	cachedOK, cachedBad                int
	otherOK, otherJSONErr, otherBadErr int
	hangs                              int
	noRateLimit                        int
	maxLatency                         time.Duration
	statuses                           map[int]int
	examples                           []string
}

func (t *tally) String() string {
	var codes []string
	keys := make([]int, 0, len(t.statuses))
	for k := range t.statuses {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		codes = append(codes, fmt.Sprintf("%d×%d", k, t.statuses[k]))
	}
	return fmt.Sprintf("cached pages %d ok / %d not; other requests %d ok, %d JSON errors, %d non-JSON errors; %d hung (>5 s); slowest %v; statuses %s",
		t.cachedOK, t.cachedBad, t.otherOK, t.otherJSONErr, t.otherBadErr, t.hangs, t.maxLatency.Round(time.Millisecond), strings.Join(codes, " "))
}

var client = &http.Client{Timeout: 5 * time.Second}

// cachedPaths are warmed before each fault; uncached requests use a fresh
// offset each time, so they must reach the origin (and Redis).
var cachedPaths = []string{"/api/v1/", "/api/v1/articles", "/api/v1/countries", "/api/v1/specs", "/api/v1/sources", "/api/v1/countries/de", "/api/v1/articles?section=mandates"}

// stablePaths are the cached pages no article change purges (their
// surrogate keys are the registries'): under publishing load the others
// are purged by each change and refilled by the next read, so while Redis
// is down they are misses like any other.
var stablePaths = []string{"/api/v1/countries", "/api/v1/specs", "/api/v1/sources", "/api/v1/specs/peppol-bis-billing-3"}

var uncachedSeq atomic.Int64

// load runs readers until ctx ends: 4 on cached pages, 1 on uncached ones.
func (c *cluster) load(ctx context.Context, t *tally) *sync.WaitGroup {
	return c.loadInto(ctx, cachedPaths, func() *tally { return t })
}

// loadInto is load on the given cached pages, counting each request in
// the tally current says.
func (c *cluster) loadInto(ctx context.Context, pages []string, current func() *tally) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func(cached bool) {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				path := pages[n%len(pages)]
				if !cached {
					path = fmt.Sprintf("/api/v1/articles?limit=1&offset=%d", 1+uncachedSeq.Add(1)%10000)
				}
				c.probe(path, cached, current())
				time.Sleep(5 * time.Millisecond)
			}
		}(i < 4)
	}
	return &wg
}

func (c *cluster) probe(path string, cached bool, t *tally) {
	start := time.Now()
	resp, err := client.Get("http://" + c.edge + path)
	lat := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.statuses == nil {
		t.statuses = map[int]int{}
	}
	t.maxLatency = max(t.maxLatency, lat)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.hangs++
		} else if cached {
			t.cachedBad++
		} else {
			t.otherBadErr++
		}
		t.examples = append(t.examples, fmt.Sprintf("%s: %v", path, err))
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.statuses[resp.StatusCode]++
	if resp.Header.Get("RateLimit-Policy") == "" {
		t.noRateLimit++
	}
	ok := resp.StatusCode == 200
	switch {
	case cached && ok:
		t.cachedOK++
	case cached:
		t.cachedBad++
		t.examples = append(t.examples, fmt.Sprintf("%s (cached): %d %.80s", path, resp.StatusCode, body))
	case ok:
		t.otherOK++
	case isJSONError(resp, body):
		t.otherJSONErr++
	default:
		t.otherBadErr++
		t.examples = append(t.examples, fmt.Sprintf("%s: %d %s %.80q", path, resp.StatusCode, resp.Header.Get("Content-Type"), body))
	}
}

func isJSONError(resp *http.Response, body []byte) bool {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return false
	}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error.Code != "" && e.Error.Message != ""
}

func (c *cluster) warm() {
	for _, p := range append(cachedPaths, stablePaths...) {
		for i := 0; i < 2; i++ {
			if resp, err := client.Get("http://" + c.edge + p); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
}

func (c *cluster) run() bool {
	c.redisKilled()
	c.workerKilledMidFanout()
	c.originRestart()
	return !c.failed
}

// send makes one request through the edge with an optional bearer token
// and JSON body, and returns the body of a 2xx answer, or a *statusError.
func (c *cluster) send(method, path, token string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+c.edge+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, &statusError{resp.StatusCode, fmt.Sprintf("%s %s: %s", method, path, raw)}
	}
	return raw, nil
}

func (c *cluster) post(path, token string, body any) (map[string]any, error) {
	raw, err := c.send(http.MethodPost, path, token, body)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out, nil
}

func (c *cluster) slugs(n int) []string {
	resp, err := client.Get(fmt.Sprintf("http://%s/api/v1/articles?limit=%d", c.origin, n))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var l struct {
		Items []struct{ Slug string } `json:"items"`
	}
	json.NewDecoder(resp.Body).Decode(&l)
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Slug)
	}
	return out
}

func (c *cluster) originRestart() {
	fmt.Println("\n3. Origin restarted behind the edge")
	c.warm()
	t := &tally{}
	ctx, cancel := context.WithCancel(context.Background())
	wg := c.load(ctx, t)
	time.Sleep(time.Second)
	c.stop("origin", syscall.SIGTERM)
	time.Sleep(time.Second)
	err := c.startProc("origin", "bin/origin")
	if err == nil {
		err = waitHTTP("http://" + c.origin + "/api/v1/")
	}
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()
	fmt.Println("  during restart:", t)
	c.expect(err == nil, "origin restarted (%v)", err)
	c.expect(t.cachedBad == 0 && t.cachedOK > 0, "clients of cached pages saw no error (%d ok, %d not)", t.cachedOK, t.cachedBad)
	c.expect(t.otherBadErr == 0 && t.hangs == 0, "uncached requests got 200 or JSON errors, none hung (%d JSON errors)", t.otherJSONErr)
}
