// Command cluster is make bench-cluster: several edges tested together on
// a Redis Cluster, from the real binaries.
//
// It starts a Redis Cluster of three masters with a replica each on
// loopback (append-only, cluster-node-timeout 1 s), publishes content/
// with bin/iwctl, and runs a webhook receiver (bin/receiver), two origins,
// two workers and three edges (bin/edge on caddyfile/Caddyfile.production:
// each edge balances over both origins, with its own cache), all on the
// cluster (IW_REDIS_URL=redis+cluster://...). Then, in turn:
//
//  1. one client's requests spread round-robin over the three edges,
//     open-loop at twice its quota's rate for whole windows: what each
//     window admitted, against the quota (goal: at most +5%);
//  2. after each of many publishes (an article retracted, restored), how
//     long each edge takes to answer with the new state (goal: p99 at
//     most 100 ms);
//  3. kill -9 of one Redis master under read load over every edge and
//     write load (state changes, each with its webhook event), while its
//     replica is promoted: the window of errors clients saw, and checks
//     that every acknowledged change is in the store, every event reached
//     every subscription, and a publish reaches every edge again, with no
//     restart;
//  4. kill -9 of one edge and one origin under load: the clients of the
//     other edges must see no failure.
//
// It prints one table (also loadtest/out/cluster.md) and exits 1 when a
// goal is missed. CLUSTER_QUICK=1 is the short pass/fail run (fewer
// windows and publishes, shorter loads), about a minute and a half after
// the build; make bench-cluster-check runs it. make test does not.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/loadtest/procwatch"
)

// run is one bench-cluster run.
type run struct {
	st            *stack
	rdb           redis.UniversalClient
	pub           *store.Publisher
	urls          []string
	quotaPath     string
	subscriptions int
}

// quietRedis drops go-redis's own log lines (a dead node's refused dials,
// expected in the failover); the report says what clients saw.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietRedis{})
	ok, err := benchCluster(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func benchCluster(ctx context.Context) (bool, error) {
	quick := os.Getenv("CLUSTER_QUICK") == "1"
	const quota, window = 1000, 10 * time.Second
	windows, publishes, failLoad, killLoad := 3, 100, 15*time.Second, 8*time.Second
	if quick {
		windows, publishes, failLoad, killLoad = 2, 40, 6*time.Second, 4*time.Second
	}
	out := "loadtest/out"
	dir := filepath.Join(out, "cluster")
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	loadBefore := procwatch.LoadAverage()
	fmt.Printf("cluster: load average before %s; files in %s\n", loadBefore, dir)

	st := &stack{dir: dir, procs: map[string]*proc{}}
	defer st.stopAll()
	if err := st.startRedisCluster(); err != nil {
		return false, err
	}
	st.env = append(os.Environ(),
		"IW_REDIS_URL="+st.redisURL, "IW_LOG_LEVEL=warn", "IW_SHUTDOWN_GRACE=2s",
		"IW_TRUSTED_PROXIES=127.0.0.0/8", "IW_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8",
		fmt.Sprintf("IW_RATELIMIT_QUOTA=%d", quota), fmt.Sprintf("IW_RATELIMIT_WINDOW=%d", int(window/time.Second)),
		"IW_EDGE_CONNS_PER_ADDRESS=100000",
		// A dead worker's claims pass to the other quickly.
		"IW_WORKER_CLAIM_IDLE=3s", "IW_WORKER_LEASE=3s",
		"XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir,
	)
	// Links point at the first edge.
	st.env = append(st.env, "IW_PUBLIC_URL=http://127.0.0.1")
	if out, err := runCmd(st, "bin/iwctl", "sync", "content"); err != nil {
		return false, fmt.Errorf("cluster: iwctl sync content: %w\n%s", err, out)
	}
	if err := st.startServices(); err != nil {
		return false, err
	}
	rdb, err := store.NewClient(st.redisURL)
	if err != nil {
		return false, err
	}
	defer rdb.Close()
	r := &run{st: st, rdb: rdb, pub: &store.Publisher{Store: store.New(rdb), SiteRoot: "http://127.0.0.1", Now: time.Now}}
	slugs, err := r.slugs(ctx, 30)
	if err != nil {
		return false, err
	}
	for _, s := range slugs[2:] {
		r.urls = append(r.urls, "/api/v1/articles/"+s)
	}
	r.urls = append(r.urls, "/api/v1/articles?limit=5", "/api/v1/", "/")
	r.quotaPath = "/api/v1/articles/" + slugs[2]
	if err := r.subscribe(3); err != nil {
		return false, err
	}
	// Warm the caches.
	for _, e := range st.edges {
		for _, u := range r.urls {
			get(ctx, e, u, "192.0.2.1")
		}
	}

	rep := &report{quick: quick, loadBefore: loadBefore}
	fmt.Printf("cluster: 1. one client over three edges, %d windows of %s (quota %d)\n", windows, window, quota)
	rep.quota = r.quotaOverEdges(ctx, quota, window, windows)
	fmt.Printf("cluster: 2. %d publishes, time until every edge serves the new state\n", publishes)
	rep.delays, err = r.propagation(ctx, slugs[0], publishes)
	if err != nil {
		return false, err
	}
	fmt.Println("cluster: 3. kill -9 of a Redis master under read and write load")
	rep.failover, err = r.failover(ctx, slugs[10:20], slugs[1], 3*time.Second, failLoad)
	if err != nil {
		return false, err
	}
	fmt.Println("cluster: 4. kill -9 of an edge and an origin under load")
	rep.kills = r.processKills(ctx, 2*time.Second, killLoad)
	rep.loadAfter = procwatch.LoadAverage()

	table, ok := rep.table()
	fmt.Print(table)
	if err := os.WriteFile(filepath.Join(out, "cluster.md"), []byte(table), 0o644); err != nil {
		return false, err
	}
	return ok, nil
}

func runCmd(st *stack, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = st.env
	return cmd.CombinedOutput()
}

// slugs returns the first n articles' slugs, from the store.
func (r *run) slugs(ctx context.Context, n int) ([]string, error) {
	page, err := store.New(r.rdb).Articles(ctx, store.ArticleFilter{}, 0, n, nil)
	if err != nil {
		return nil, fmt.Errorf("cluster: listing articles: %w", err)
	}
	var out []string
	for _, a := range page.Articles {
		out = append(out, a.Slug)
	}
	if len(out) < n {
		return nil, fmt.Errorf("cluster: %d articles; want %d", len(out), n)
	}
	return out, nil
}

// subscribe registers a client through the first edge and subscribes n
// receiver paths to every article event.
func (r *run) subscribe(n int) error {
	e := r.st.edges[0]
	reg, err := post(e, "/api/v1/agent-auth/register", "", map[string]any{"client_name": "bench-cluster"})
	if err != nil {
		return fmt.Errorf("cluster: register: %w", err)
	}
	claim, err := post(e, "/api/v1/agent-auth/claim", "", map[string]any{"client_id": reg["client_id"]})
	if err != nil {
		return fmt.Errorf("cluster: claim: %w", err)
	}
	token, _ := claim["access_token"].(string)
	for i := range n {
		if _, err := post(e, "/api/v1/webhooks", token, map[string]any{
			"url": fmt.Sprintf("http://%s/hook/%d", r.st.receiver, i), "events": []string{"article.retracted", "article.published"},
		}); err != nil {
			return fmt.Errorf("cluster: subscribe: %w", err)
		}
	}
	r.subscriptions = n
	return nil
}

type receiverStats struct {
	Deliveries int `json:"deliveries"`
	Unique     int `json:"unique"`
}

// receiverEvents is the receiver's set of "<path> <type> <reason>", one per
// distinct delivery (loadtest/receiver).
func (r *run) receiverEvents() map[string]bool {
	var s struct {
		Events []string `json:"events"`
	}
	resp, err := client.Get("http://" + r.st.receiver + "/stats?events=1")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&s)
	seen := make(map[string]bool, len(s.Events))
	for _, e := range s.Events {
		seen[e] = true
	}
	return seen
}

func (r *run) receiverStats() receiverStats {
	var s receiverStats
	resp, err := client.Get("http://" + r.st.receiver + "/stats")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&s)
	return s
}
