package observability

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
	"github.com/invoicewire/invoicewire/deploy/check/stack"
)

// prometheusMade are series Prometheus records itself for every target.
var prometheusMade = map[string]bool{"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true}

// exporterMade are series of exporters that run beside Invoicewire, by
// prefix, and where they are deployed: not run here, so not checked.
var exporterMade = map[string]string{
	"redis_": "redis_exporter (deploy/k8s/base/redis.yaml; docs/operations.md on a VM)",
}

func exporterOf(name string) string {
	for prefix, who := range exporterMade {
		if strings.HasPrefix(name, prefix) {
			return who
		}
	}
	return ""
}

// sources names the processes that export a metric, by prefix.
func sources(name string) []string {
	switch {
	case strings.HasPrefix(name, "caddy_"):
		return []string{"edge"}
	case strings.HasPrefix(name, "invoicewire_origin_"):
		return []string{"origin"}
	case strings.HasPrefix(name, "iw_worker_"):
		return []string{"worker"}
	case strings.HasPrefix(name, "invoicewire_redis_"):
		// internal/opsserver: every process with an operator listener.
		return []string{"origin", "worker"}
	}
	return nil
}

// series is what a scrape exposes: sample names (histograms as _bucket,
// _sum, _count) with their label sets; "__value__" holds a counter's or
// gauge's value.
type series map[string][]map[string]string

// value is the value of the first sample named name, or 0.
func (s series) value(name string) float64 {
	for _, ls := range s[name] {
		var v float64
		fmt.Sscan(ls["__value__"], &v)
		return v
	}
	return 0
}

func parseScrape(t *testing.T, who string, b []byte) series {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: /metrics does not parse: %v", who, err)
	}
	out := series{}
	for name, f := range fams {
		for _, m := range f.Metric {
			ls := map[string]string{}
			for _, l := range m.Label {
				ls[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[name+"_bucket"] = append(out[name+"_bucket"], ls)
				out[name+"_sum"] = append(out[name+"_sum"], ls)
				out[name+"_count"] = append(out[name+"_count"], ls)
			case dto.MetricType_SUMMARY:
				out[name] = append(out[name], ls)
				out[name+"_sum"] = append(out[name+"_sum"], ls)
				out[name+"_count"] = append(out[name+"_count"], ls)
			case dto.MetricType_COUNTER:
				ls["__value__"] = fmt.Sprint(m.GetCounter().GetValue())
				out[name] = append(out[name], ls)
			case dto.MetricType_GAUGE:
				ls["__value__"] = fmt.Sprint(m.GetGauge().GetValue())
				out[name] = append(out[name], ls)
			default:
				out[name] = append(out[name], ls)
			}
		}
	}
	return out
}

// has reports whether some exported series has the selector's name and
// every label value it pins.
func (s series) has(sel selector) bool {
	for _, ls := range s[sel.name] {
		ok := true
		for k, v := range sel.labels {
			ok = ok && ls[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// TestQueriedMetricsAreExported runs the real processes through what an
// operator's Prometheus would see — reads, misses and hits, rate limiting,
// webhook subscriptions and deliveries (delivered, failing, dead-lettered,
// a receiver answering 410), an origin outage and a Redis outage — scrapes
// their /metrics, and requires every series the alert rules and the
// dashboard query (name and each label value pinned with =) to be there.
// It runs once for each shipped Caddyfile, so a panel that only one
// deployment feeds fails here: the Kubernetes one with the worker, make
// run's and the production example for the edge's and origin's series.
func TestQueriedMetricsAreExported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every process; skipped with -short")
	}
	root := repo.Root(t)
	haveEdge, haveWorker := repo.HasCommand(root, "edge"), repo.HasCommand(root, "worker")

	var sels []selectorIn
	for _, q := range queries(t, root) {
		for _, s := range selectors(t, q) {
			sels = append(sels, selectorIn{q, s})
		}
	}
	if len(sels) == 0 {
		t.Fatal("no selectors found in the rules and the dashboard")
	}
	names := []string{"origin", "iwctl"}
	if haveWorker {
		names = append(names, "worker")
	}
	if haveEdge {
		names = append(names, "edge")
	}
	bins := repo.Build(t, root, t.TempDir(), names...)
	for _, tc := range []struct {
		desc      string
		caddyfile string
		worker    bool
	}{
		{desc: "kubernetes", caddyfile: stack.CaddyfileK8s, worker: haveWorker},
		{desc: "make run", caddyfile: stack.CaddyfileRun},
		{desc: "production", caddyfile: stack.CaddyfileProduction},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if !haveEdge && tc.caddyfile != stack.CaddyfileK8s {
				t.Skip("SKIPPED UNTIL MERGED: no edge in this checkout")
			}
			checkExported(t, sels, bins, tc.caddyfile, haveEdge, tc.worker)
		})
	}
}

// checkExported starts the stack with the given Caddyfile, sends the
// traffic and checks every selector whose process runs.
func checkExported(t *testing.T, sels []selectorIn, bins map[string]string, caddyfile string, haveEdge, haveWorker bool) {
	st := stack.Start(t, stack.Options{Edge: haveEdge, Worker: haveWorker, Caddyfile: caddyfile, Bins: bins, Env: []string{
		"IW_RATELIMIT_QUOTA=60", "IW_RATELIMIT_WINDOW=60",
		// Fast retries, so a failing receiver reaches the dead letters
		// within the test.
		"IW_WEBHOOK_RETRY_SCHEDULE=100ms,100ms",
		"IW_WORKER_LEASE=2s", "IW_WORKER_CLAIM_IDLE=2s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := st.PublicURL()
	get := func(path string, hdr ...string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	// Reads: misses, then hits; a 404.
	for _, p := range []string{"/api/v1/articles", "/api/v1/articles?section=mandates", "/api/v1/countries", "/api/v1/specs", "/api/v1/nope"} {
		get(p)
		get(p)
	}

	if haveWorker {
		webhookTraffic(t, ctx, st, base)
	}
	// A content change: an event for the worker, a purge at the edges.
	st.Run("iwctl", "retract", firstSlug(t, ctx, base), "--reason", "deploy check: a real event and a purge")
	if haveWorker {
		waitWorker(t, ctx, st)
	}
	if haveEdge {
		waitFor(t, ctx, st.EdgeMetrics, "caddy_edge_cache_purges_total", func(s series) bool {
			return s.has(selector{name: "caddy_edge_cache_purges_total", labels: map[string]string{"kind": "keys"}})
		})
	}

	scrapes := map[string]series{}
	scrape := func(who, addr string) {
		b, err := stack.Scrape(ctx, addr)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		scrapes[who] = parseScrape(t, who, b)
	}
	scrape("origin", st.OriginMetrics)
	if haveWorker {
		scrape("worker", st.WorkerMetrics)
	}

	if haveEdge {
		// Past the budget: 429s.
		for i := 0; i < 70; i++ {
			if get("/api/v1/sources") == http.StatusTooManyRequests {
				break
			}
		}
		// The origin goes away: a cached page is served stale-if-error (a
		// client no-cache forces the edge to ask), a new one gets a JSON 5xx.
		get("/api/v1/specs", "X-Forwarded-For", "192.0.2.7") // cached (again)
		st.Stop("origin", false)
		get("/api/v1/specs", "Cache-Control", "no-cache", "X-Forwarded-For", "192.0.2.7")
		get("/api/v1/articles/never-cached", "X-Forwarded-For", "192.0.2.7")
		// Redis goes away: syncs fail, a token nobody has seen cannot be
		// verified.
		st.Stop("redis", false)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/webhooks", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+randomToken())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", "192.0.2.8") // 127.0.0.1 is out of budget
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		for i := 0; i < 10; i++ {
			get("/api/v1/countries", "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", 10+i))
			time.Sleep(100 * time.Millisecond)
		}
		// A sync that cannot reach Redis fails at its deadline (a few
		// sync intervals, caddymodules/ratelimitheaders), not at once.
		if haveEdge {
			waitFor(t, ctx, st.EdgeMetrics, "a failed rate limit sync", func(s series) bool {
				return s.has(selector{name: "caddy_rate_limit_headers_syncs_total", labels: map[string]string{"result": "error"}})
			})
		}
		scrape("edge", st.EdgeMetrics)
		// With no traffic at all, the processes' own probe reports the
		// outage that InvoicewireRedisUnreachable alerts on.
		redisDown := func(s series) bool {
			return s.has(selector{name: "invoicewire_redis_up", labels: map[string]string{"__value__": "0"}})
		}
		if haveWorker {
			waitFor(t, ctx, st.WorkerMetrics, "invoicewire_redis_up 0", redisDown)
		}
	}

	var unchecked []string
	for _, s := range sels {
		if prometheusMade[s.sel.name] || exporterOf(s.sel.name) != "" {
			continue
		}
		srcs := sources(s.sel.name)
		if len(srcs) == 0 {
			t.Errorf("%s: %s belongs to no Invoicewire process (prefix caddy_, invoicewire_origin_, invoicewire_redis_ or iw_worker_)", s.q.where, s.sel.name)
			continue
		}
		for _, src := range srcs {
			got, ok := scrapes[src]
			if !ok {
				if src != "worker" || caddyfile == stack.CaddyfileK8s {
					unchecked = append(unchecked, s.sel.name)
				}
				continue
			}
			if !got.has(s.sel) {
				t.Errorf("%s: %s%v is not exported by the %s", s.q.where, s.sel.name, s.sel.labels, src)
			}
		}
	}
	if len(unchecked) > 0 {
		t.Skipf("SKIPPED UNTIL MERGED: edge=%v worker=%v in this checkout; %d selectors unchecked: %s",
			haveEdge, haveWorker, len(unchecked), strings.Join(dedupe(unchecked), " "))
	}
}

// selectorIn is a selector and the query it was found in.
type selectorIn struct {
	q   query
	sel selector
}

// webhookTraffic registers an agent and subscribes three receivers (one
// answering 200, one 500, one 410) with test events.
func webhookTraffic(t *testing.T, ctx context.Context, st *stack.Stack, base string) {
	post := func(path, token string, body any) map[string]any {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
		}
		json.Unmarshal(raw, &out)
		return out
	}
	reg := post("/api/v1/agent-auth/register", "", map[string]any{"client_name": "deploy-check"})
	claim := post("/api/v1/agent-auth/claim", "", map[string]any{"client_id": reg["client_id"]})
	token, _ := claim["access_token"].(string)
	if token == "" {
		t.Fatalf("claim gave no access_token: %v", claim)
	}
	for _, status := range []int{200, 500, 410} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		post("/api/v1/webhooks?test=true", token, map[string]any{
			"url": srv.URL + "/hook", "events": []string{"article.published", "article.retracted"},
		})
	}
}

// waitWorker waits until the worker has delivered, read the stream,
// dead-lettered and disabled a subscription.
func waitWorker(t *testing.T, ctx context.Context, st *stack.Stack) {
	waitFor(t, ctx, st.WorkerMetrics, "deliveries, events, a dead letter and a disabled subscription", func(s series) bool {
		return s.has(selector{name: "iw_worker_deliveries_total", labels: map[string]string{"outcome": "delivered"}}) &&
			s.has(selector{name: "iw_worker_subscriptions_disabled_total"}) &&
			s.has(selector{name: "iw_worker_events_total"}) &&
			s.value("iw_worker_dead_letters_total") > 0
	})
}

// waitFor scrapes addr until ok holds, for at most a minute.
func waitFor(t *testing.T, ctx context.Context, addr, what string, ok func(series) bool) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := stack.Scrape(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if ok(parseScrape(t, addr, b)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s within 60 s; metrics:\n%s", addr, what, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func firstSlug(t *testing.T, ctx context.Context, base string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/articles?limit=1", nil)
	req.Header.Set("X-Forwarded-For", "192.0.2.200")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []struct {
			Slug string `json:"slug"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Items) == 0 {
		t.Fatalf("reading an article slug: %v (%d items)", err, len(list.Items))
	}
	return list.Items[0].Slug
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
