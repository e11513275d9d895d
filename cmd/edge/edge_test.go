package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/invoicewire/invoicewire/caddymodules/ratelimitheaders"
	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/sse"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// startEdge loads caddyfile/Caddyfile, exactly as `make run` does, in front
// of a real origin over a real Redis, and returns the edge's base URL.
func startEdge(t *testing.T, inst *origintest.Instance, quota int) string {
	t.Helper()
	return startEdgeFor(t, strings.TrimPrefix(inst.SiteRoot, "http://"), inst.Redis.URL(), inst.SiteRoot, quota)
}

// startEdgeFor is startEdge in front of any upstream (host:port), for tests
// whose upstream must do what the origin never does.
func startEdgeFor(t *testing.T, upstream, redisURL, siteRoot string, quota int) string {
	t.Helper()
	ports := freeport.Ports(t, 2)
	return startEdgeOn(t, upstream, redisURL, siteRoot, quota, ports[0], ports[1])
}

// startEdgeOn is startEdgeFor with the admin API and the public listener on
// the given ports.
func startEdgeOn(t *testing.T, upstream, redisURL, siteRoot string, quota, admin, port int) string {
	t.Helper()
	t.Setenv("IW_EDGE_ADMIN_ADDR", fmt.Sprintf("localhost:%d", admin))
	t.Setenv("IW_EDGE_PORT", fmt.Sprint(port))
	t.Setenv("IW_ORIGIN_ADDR", upstream)
	t.Setenv("IW_REDIS_URL", redisURL)
	t.Setenv("IW_PUBLIC_URL", siteRoot)
	t.Setenv("IW_RATELIMIT_QUOTA", fmt.Sprint(quota))
	t.Setenv("IW_TRUSTED_PROXIES", "")
	pc := stillLimiters(t, redisURL, quota)
	cfg, err := os.ReadFile("../../caddyfile/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	loadCaddy(t, string(cfg), admin)
	if !pc.Used() {
		t.Fatal("the edge did not take the rate limiters with the test's clock: the Caddyfile's limiter differs from the one pooled")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// stillLimiters pools the rate limiters every shipped Caddyfile configures
// from IW_RATELIMIT_WINDOW and IW_RATELIMIT_REDIS_URL, with quota, on
// redisURL, with a clock that stands still 10 s into a window, so a test's
// budget never renews halfway through because the wall clock crossed a
// minute. Its Used tells whether the edge loaded next took them.
func stillLimiters(t *testing.T, redisURL string, quota int) *ratelimitheaders.PooledClock {
	t.Helper()
	at := time.Unix(1_800_000_010, 0)
	window := time.Minute
	if v, err := strconv.Atoi(os.Getenv("IW_RATELIMIT_WINDOW")); err == nil {
		window = time.Duration(v) * time.Second
	}
	pc, err := ratelimitheaders.PoolLimitersWithClock(ratelimitheaders.Handler{
		Quota: int64(quota), Window: caddy.Duration(window), Redis: redisURL,
		CountersRedis: os.Getenv("IW_RATELIMIT_REDIS_URL"), MaxClients: 1_000_000,
	}, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Release)
	return pc
}

// loadCaddy starts the real Caddy of the edge binary in the test process on
// a Caddyfile whose admin API listens on the port admin.
func loadCaddy(t *testing.T, cfg string, admin int) {
	t.Helper()
	if !testing.Short() {
		// caddytest skips when Caddy does not start; that must fail here.
		t.Cleanup(func() {
			if t.Skipped() {
				t.Errorf("caddytest skipped the test: Caddy did not start")
			}
		})
	}
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: admin, LoadRequestTimeout: 20 * time.Second})
	tester.InitServer(cfg, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
}

var client = &http.Client{
	Timeout:       20 * time.Second,
	Transport:     &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func do(t *testing.T, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return doWith(t, client, method, url, header...)
}

// doWith is do with the HTTP client c (clientFrom gives another address).
func doWith(t *testing.T, c *http.Client, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// isJSONError reports whether b is the contract's error with code.
func isJSONError(b []byte, code string) bool {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && e.Error.Code == code && e.Error.Message != ""
}

func TestEndToEnd(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	art := inst.Corpus.Articles[0]
	page := fmt.Sprintf("/%s/%s/", art.PublishedAt.Format("2006/01"), art.Slug)

	t.Run("read through the cache", func(t *testing.T) {
		resp, body := do(t, "GET", edge+"/api/v1/articles", "Accept-Encoding: gzip")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("status %d encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		var list struct {
			Count int `json:"count"`
		}
		if json.Unmarshal(plain, &list) != nil || list.Count == 0 {
			t.Errorf("list body %.100q", plain)
		}
		// The edge clears its cache once, when its invalidation
		// subscription first comes up (on a Redis Cluster that can follow
		// the first read); a read after that is a hit.
		var resp2 *http.Response
		for range 100 {
			if resp2, _ = do(t, "GET", edge+"/api/v1/articles", "Accept-Encoding: gzip"); strings.HasPrefix(resp2.Header.Get("Cache-Status"), "Invoicewire; hit") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.HasPrefix(resp2.Header.Get("Cache-Status"), "Invoicewire; hit") {
			t.Errorf("second read Cache-Status %q", resp2.Header.Get("Cache-Status"))
		}
		if id := resp.Header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, "{}") {
			t.Errorf("the miss lacks the X-Request-Id the origin was given")
		}
		for _, h := range []string{"RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Age", "ETag", "Access-Control-Allow-Origin"} {
			if resp2.Header.Get(h) == "" {
				t.Errorf("hit lacks %s", h)
			}
		}
		// A hit names no new request id (nothing reached the origin) but
		// echoes the client's.
		resp3, _ := do(t, "GET", edge+"/api/v1/articles", "Accept-Encoding: gzip", "X-Request-Id: client-42")
		if resp3.Header.Get("X-Request-Id") != "client-42" {
			t.Errorf("hit X-Request-Id %q; want the client's", resp3.Header.Get("X-Request-Id"))
		}
		// An id that is no id (too long, not visible ASCII) is never echoed:
		// a hit then names none, and a miss the new one the origin was given.
		for _, id := range []string{strings.Repeat("x", 129), "caf\xc3\xa9", "a b"} {
			for _, path := range []string{"/api/v1/articles", "/api/v1/articles?limit=3&x=" + strconv.Itoa(len(id))} {
				r, _ := do(t, "GET", edge+path, "X-Request-Id: "+id)
				hit := strings.HasPrefix(r.Header.Get("Cache-Status"), "Invoicewire; hit")
				got := r.Header.Get("X-Request-Id")
				if got == id || strings.Contains(got, "xxxx") || (hit && got != "") || (!hit && !httpheader.ValidRequestID(got)) || strings.Contains(got, "{") {
					t.Errorf("GET %s (hit %v) with X-Request-Id %.20q: answered with X-Request-Id %q", path, hit, id, got)
				}
			}
		}
		if resp2.Header.Get("Surrogate-Key") != "" {
			t.Errorf("Surrogate-Key leaked")
		}
		if got := resp2.Header.Get("RateLimit-Policy"); got != `"default";q=100000;w=60` {
			t.Errorf("RateLimit-Policy %q", got)
		}
	})

	t.Run("markdown twin by Accept", func(t *testing.T) {
		resp, body := do(t, "GET", edge+page, "Accept: text/markdown")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") || !bytes.HasPrefix(body, []byte("---\n")) {
			t.Fatalf("status %d type %q body %.60q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept") {
			t.Errorf("Vary %q lacks Accept", resp.Header.Values("Vary"))
		}
		// The twin's own address shares the entry.
		resp2, _ := do(t, "GET", edge+strings.TrimSuffix(page, "/")+".md", "Accept: text/markdown")
		if !strings.Contains(resp2.Header.Get("Cache-Status"), "hit") {
			t.Errorf(".md after the page: Cache-Status %q", resp2.Header.Get("Cache-Status"))
		}
	})

	t.Run("writes need a token", func(t *testing.T) {
		resp, body := do(t, "POST", edge+"/api/v1/webhooks")
		want := `Bearer realm="invoicewire", resource_metadata="` + inst.SiteRoot + `/.well-known/oauth-protected-resource"`
		if resp.StatusCode != 401 || len(resp.Header.Values("WWW-Authenticate")) != 1 || resp.Header.Get("WWW-Authenticate") != want || !isJSONError(body, "unauthorized") {
			t.Errorf("status %d WWW-Authenticate %q body %s", resp.StatusCode, resp.Header.Values("WWW-Authenticate"), body)
		}
		if resp.Header.Get("RateLimit") == "" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("401 lacks RateLimit or CORS headers")
		}
	})

	// A browser sends no Authorization on a preflight, owner routes
	// included: each is answered at the edge, never with a 401.
	for _, tc := range []struct{ desc, path, method string }{
		{desc: "preflight of a write answered at the edge", path: "/api/v1/webhooks", method: "POST"},
		{desc: "preflight of the owner list answered at the edge", path: "/api/v1/webhooks/subscriptions", method: "GET"},
		{desc: "preflight of an owner item answered at the edge", path: "/api/v1/webhooks/subscriptions/sub_abc", method: "DELETE"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := do(t, "OPTIONS", edge+tc.path, "Origin: https://app.example", "Access-Control-Request-Method: "+tc.method, "Access-Control-Request-Headers: authorization")
			if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") ||
				!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), tc.method) || resp.Header.Get("RateLimit") == "" {
				t.Errorf("preflight %d %v %s", resp.StatusCode, resp.Header, body)
			}
		})
	}

	t.Run("not found is the origin's JSON", func(t *testing.T) {
		resp, body := do(t, "GET", edge+"/api/v1/articles/no-such-article")
		if resp.StatusCode != 404 || !isJSONError(body, "not_found") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("retraction purges the edge", func(t *testing.T) {
		slug := inst.Corpus.Articles[1].Slug
		url := edge + "/api/v1/articles/" + slug
		if resp, _ := do(t, "GET", url); resp.StatusCode != 200 {
			t.Fatalf("before: %d", resp.StatusCode)
		}
		if resp, _ := do(t, "GET", url); !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Fatalf("not cached: %q", resp.Header.Get("Cache-Status"))
		}
		if _, err := inst.Publisher.Retract(context.Background(), slug, "test retraction"); err != nil {
			t.Fatal(err)
		}
		// The purge travels by pub/sub and takes milliseconds; the deadline
		// is generous for a busy CI machine, and the time is logged.
		start := time.Now()
		for {
			resp, body := do(t, "GET", url)
			if resp.StatusCode == 410 && isJSONError(body, "gone") {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("retracted article still served after 30 s: %d", resp.StatusCode)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("retraction visible at the edge after %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("oversized and garbage input", func(t *testing.T) {
		resp, body := do(t, "GET", edge+"/api/v1/articles", "Accept: "+"text/markdown;q=0.;;,,//,*/*;q=abc", "Cache-Control: max-age=-1, no-cache=\"", "Range: bytes=-99999999999999999999")
		if resp.StatusCode != 200 {
			t.Errorf("malformed Accept/Cache-Control/Range: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, "POST", edge+"/api/v1/webhooks", "Authorization: Bearer "+strings.Repeat("x", 100000))
		if resp.StatusCode != 401 || !isJSONError(body, "unauthorized") {
			t.Errorf("oversized token: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("origin down is JSON", func(t *testing.T) {
		do(t, "GET", edge+"/api/v1/specs")
		inst.Server.Close()
		resp, body := do(t, "GET", edge+"/api/v1/countries/zz")
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !isJSONError(body, "unavailable") || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		// A stored response stands in (stale-if-error) only once stale;
		// fresh ones are served as usual.
		resp, _ = do(t, "GET", edge+"/api/v1/specs")
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Errorf("cached read with origin down: %d", resp.StatusCode)
		}
	})
}

// post sends a JSON body through the edge.
func post(t *testing.T, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return postWith(t, client, url, body, header...)
}

// TestAgentFlowThroughEdge runs the agent flow of issue 7 through the edge
// of `make run`: register → claim → subscribe → list → revoke → subscribe
// again is refused with error="invalid_token", because the revocation
// reaches the edge's token cache at once (docs/decisions.md, bearer tokens).
func TestAgentFlowThroughEdge(t *testing.T) {
	inst := origintest.Start(t, func(c *origin.Config) {
		c.WebhookPolicy = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	base := startEdge(t, inst, 1000) + "/api/v1"

	resp, body := post(t, base+"/agent-auth/register", `{"client_name":"edge agent"}`)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(body, &reg) != nil || reg.ClientID == "" {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, base+"/agent-auth/claim", `{"client_id":"`+reg.ClientID+`"}`)
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" || tok.TokenType != "Bearer" {
		t.Fatalf("claim: %d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("a token answer has Cache-Control %q, want no-store", cc)
	}
	bearer := "Authorization: Bearer " + tok.AccessToken
	subscribe := `{"url":"http://127.0.0.1:9/hook","events":["article.published"]}`
	resp, body = post(t, base+"/webhooks", subscribe, bearer)
	if resp.StatusCode != 201 {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	for range 2 {
		// Twice: an owner route carries a token, so the edge never serves
		// it from its cache (docs/decisions.md, edge cache).
		resp, body = do(t, "GET", base+"/webhooks/subscriptions", bearer)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"http://127.0.0.1:9/hook"`) {
			t.Fatalf("list: %d %s", resp.StatusCode, body)
		}
		if strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Fatalf("an owner route was served from the cache: %s", resp.Header.Get("Cache-Status"))
		}
	}
	resp, body = post(t, base+"/agent-auth/revoke", `{"token":"`+tok.AccessToken+`"}`)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("revoke: %d %q", resp.StatusCode, body)
	}
	deadline := time.Now().Add(time.Second)
	for {
		resp, body = post(t, base+"/webhooks", subscribe, bearer)
		if resp.StatusCode == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscribe after revoke: %d %s, want 401 within a second", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ch := resp.Header.Get("WWW-Authenticate"); len(resp.Header.Values("WWW-Authenticate")) != 1 || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `resource_metadata="`+inst.SiteRoot+`/.well-known/oauth-protected-resource"`) {
		t.Fatalf("WWW-Authenticate = %q", resp.Header.Values("WWW-Authenticate"))
	}
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code != "unauthorized" {
		t.Fatalf("401 body %s", body)
	}
}

// TestAskStreamsThroughEdge reads POST /ask's event stream through the edge
// of `make run` event by event (docs/decisions.md, ask): start, the results, complete, never
// stored by the edge cache.
func TestAskStreamsThroughEdge(t *testing.T) {
	inst := origintest.Start(t)
	base := startEdge(t, inst, 1000)
	for round := range 2 {
		req, _ := http.NewRequest("POST", base+"/ask", strings.NewReader(`{"query":"synthetic article e-invoicing Belgium"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("round %d: %d %q", round, resp.StatusCode, ct)
		}
		if cs := resp.Header.Get("Cache-Status"); strings.Contains(cs, "hit") || strings.Contains(cs, "stored") {
			t.Fatalf("round %d: the stream went through the cache: %q", round, cs)
		}
		rd := sse.NewReader(resp.Body)
		var names []string
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, ev.Name)
			if !json.Valid([]byte(ev.Data)) {
				t.Fatalf("event %s carries %q, not JSON", ev.Name, ev.Data)
			}
		}
		resp.Body.Close()
		if len(names) < 3 || names[0] != "start" || names[len(names)-1] != "complete" || names[1] != "result" {
			t.Fatalf("round %d: events %v, want start, result…, complete", round, names)
		}
	}
}

// TestMCPThroughEdge exercises the MCP server with the SDK's own client
// through the edge (issue 6): the session opens, the tools are listed, and a
// tool answers from the store.
func TestMCPThroughEdge(t *testing.T) {
	inst := origintest.Start(t)
	base := startEdge(t, inst, 1000)
	c := sdk.NewClient(&sdk.Implementation{Name: "edge-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatalf("connecting through the edge: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 8 {
		t.Fatalf("tools: %v, %v", tools, err)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_country", Arguments: map[string]any{"code": "de"}})
	if err != nil || res.IsError {
		t.Fatalf("get_country: %v %+v", err, res)
	}
	var got strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			got.WriteString(tc.Text)
		}
	}
	if !strings.Contains(got.String(), "Germany") {
		t.Fatalf("get_country de answered %q", got.String())
	}
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_country", Arguments: map[string]any{"code": "not a code"}})
	if err != nil || !res.IsError {
		t.Fatalf("a bad argument must be a tool error: %v %+v", err, res)
	}
}
