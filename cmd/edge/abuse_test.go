package main

// The abuse-resistance tests of issue 20: each sends, through the edge of
// `make run` (or the production Caddyfile) in front of a real origin over a
// real Redis, what the security assessment sent, and checks the answer the
// contract wants.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// rawConn dials the edge for a test that writes its own bytes.
func rawConn(t *testing.T, edge string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(edge, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Generous: a test that waits this long has failed anyway.
	c.SetDeadline(time.Now().Add(25 * time.Second))
	return c
}

// readResponse reads one response from br and its whole body.
func readResponse(t *testing.T, br *bufio.Reader) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return resp, b
}

// closedByServer reports whether the server has closed c: a read returns
// EOF (or a reset) rather than data or the test's own deadline.
func closedByServer(c net.Conn, br *bufio.Reader) bool {
	_, err := br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestClientMistakesAre4xx is issue 20's item 4: malformed slugs, a broken
// chunked body and a body far over the limit are the client's mistakes and
// answer 404, 400 and 413, never 503 (which pages on-call).
func TestClientMistakesAre4xx(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	art := inst.Corpus.Articles[0]
	month := art.PublishedAt.Format("2006/01")

	for _, path := range []string{"/api/v1/articles/%01", "/api/v1/articles/%00", "/api/v1/articles/%7f", "/api/v1/articles/a%20b", "/" + month + "/%01.md", "/api/v1/specs/%01", "/api/v1/countries/%01"} {
		t.Run("GET "+path, func(t *testing.T) {
			resp, body := do(t, "GET", edge+path)
			if resp.StatusCode >= 500 || !isJSONError(body, "not_found") && !isJSONError(body, "bad_request") {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}

	// The asterisk form is for OPTIONS only (RFC 9112 §3.2.4): a GET of
	// it was once redirected to "*/", and the edge kept that redirect.
	t.Run("GET * twice", func(t *testing.T) {
		c := rawConn(t, edge)
		br := bufio.NewReader(c)
		for range 2 {
			fmt.Fprint(c, "GET * HTTP/1.1\r\nHost: localhost\r\n\r\n")
			resp, body := readResponse(t, br)
			if resp.StatusCode != 400 || !isJSONError(body, "bad_request") || resp.Header.Get("Location") != "" ||
				resp.Header.Get("Cache-Control") != "no-store" || strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
				t.Fatalf("%d, Location %q, Cache-Control %q, Cache-Status %q: %s", resp.StatusCode, resp.Header.Get("Location"),
					resp.Header.Get("Cache-Control"), resp.Header.Get("Cache-Status"), body)
			}
		}
		// net/http answers this one itself (its globalOptionsHandler).
		fmt.Fprint(c, "OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if resp, body := readResponse(t, br); resp.StatusCode != 200 {
			t.Fatalf("OPTIONS *: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("malformed chunked body", func(t *testing.T) {
		c := rawConn(t, edge)
		fmt.Fprint(c, "POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
		resp, body := readResponse(t, bufio.NewReader(c))
		if resp.StatusCode != 400 || !isJSONError(body, "bad_request") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	// RFC 9112 §6.1 makes it a 501, but the client's to change: its code is
	// bad_request, not internal, which pages on-call as a server fault.
	t.Run("a transfer coding before chunked", func(t *testing.T) {
		c := rawConn(t, edge)
		fmt.Fprint(c, "POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
		resp, body := readResponse(t, bufio.NewReader(c))
		if resp.StatusCode != 501 || !isJSONError(body, "bad_request") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("8 MiB body", func(t *testing.T) {
		c := rawConn(t, edge)
		fmt.Fprintf(c, "POST /api/v1/agent-auth/register HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 8<<20)
		// Part of the body; the edge must answer without the rest.
		c.Write([]byte(`{"client_name":"` + strings.Repeat("x", 200<<10)))
		resp, body := readResponse(t, bufio.NewReader(c))
		if resp.StatusCode != 413 || !isJSONError(body, "payload_too_large") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("65 KiB chunked body", func(t *testing.T) {
		c := rawConn(t, edge)
		chunk := `{"client_name":"` + strings.Repeat("x", 65<<10) + `"}`
		fmt.Fprintf(c, "POST /api/v1/agent-auth/register HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(chunk), chunk)
		resp, body := readResponse(t, bufio.NewReader(c))
		if resp.StatusCode != 413 || !isJSONError(body, "payload_too_large") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
}

// TestSlowBodyIs408 is item 7: a body that trickles in (one byte at a time,
// never all of it) ends in a JSON 408 once the read_body time is over,
// never in an empty 200.
func TestSlowBodyIs408(t *testing.T) {
	inst := origintest.Start(t)
	t.Setenv("IW_EDGE_READ_BODY_TIMEOUT", "2s")
	edge := startEdge(t, inst, 100000)
	c := rawConn(t, edge)
	fmt.Fprint(c, "POST /api/v1/agent-auth/register HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	br := bufio.NewReader(c)
	resp, body := readResponse(t, br)
	if resp.StatusCode != 408 || !isJSONError(body, "request_timeout") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	// The connection closes after the 408 (RFC 9112 §9.6), rather than
	// waiting for the rest of a body the client may never send.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if !closedByServer(c, br) {
		t.Errorf("the connection stayed open after the 408")
	}
}

// TestSlowHeadersAndConnectionsPerAddress is item 8: a client that never
// finishes its headers loses its connection after the read_header time,
// and one address holds at most IW_EDGE_CONNS_PER_ADDRESS connections.
func TestSlowHeadersAndConnectionsPerAddress(t *testing.T) {
	inst := origintest.Start(t)
	t.Setenv("IW_EDGE_READ_HEADER_TIMEOUT", "1s")
	t.Setenv("IW_EDGE_CONNS_PER_ADDRESS", "4")
	edge := startEdge(t, inst, 100000)

	t.Run("slow headers", func(t *testing.T) {
		c := rawConn(t, edge)
		fmt.Fprint(c, "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n")
		// The test's deadline is far beyond the bound; Caddy's default
		// (a minute) would hold the connection past it.
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		if !closedByServer(c, bufio.NewReader(c)) {
			t.Errorf("a connection with unfinished headers was still open after 15 s")
		}
	})

	t.Run("connections per address", func(t *testing.T) {
		// The slow-header connection above is closed by the server; the
		// guard releases its slot when that close completes, which can
		// trail the client's EOF by a moment.
		time.Sleep(300 * time.Millisecond)
		var open []net.Conn
		for range 4 {
			c := rawConn(t, edge)
			// Each connection proves it was accepted by being answered,
			// and stays open (keep-alive) afterwards.
			fmt.Fprint(c, "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
			resp, _ := readResponse(t, bufio.NewReader(c))
			if resp.StatusCode != 200 {
				t.Fatalf("connection %d: %d", len(open), resp.StatusCode)
			}
			open = append(open, c)
		}
		extra := rawConn(t, edge)
		fmt.Fprint(extra, "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if !closedByServer(extra, bufio.NewReader(extra)) {
			t.Fatalf("a fifth connection from one address was served")
		}
		open[0].Close()
		// The slot frees once the edge has seen the close; retry briefly.
		deadline := time.Now().Add(5 * time.Second)
		for {
			c := rawConn(t, edge)
			fmt.Fprint(c, "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
			br := bufio.NewReader(c)
			if resp, err := http.ReadResponse(br, nil); err == nil && resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no connection accepted after one of four closed")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestContentLengthWithChunkedClosesTheConnection is item 9: a request with
// both Content-Length and Transfer-Encoding: chunked is answered 400 and
// its connection closed (RFC 9112 §6.1), so what follows on the connection
// is never read as a request.
func TestContentLengthWithChunkedClosesTheConnection(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	// Each request would be answered 200 if its framing were believed: the
	// ask's chunked body is a valid question, and the GET needs no body.
	for _, req := range []string{
		"POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"1a\r\n{\"query\":\"peppol belgium\"}\r\n0\r\n\r\nGGET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"GET /api/v1/countries/be HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	} {
		c := rawConn(t, edge)
		fmt.Fprint(c, req)
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br)
		if resp.StatusCode != 400 || !isJSONError(body, "bad_request") || !strings.Contains(string(body), "both Content-Length and Transfer-Encoding") {
			t.Errorf("%.30q: %d %s, want the 400 naming both length fields", req, resp.StatusCode, body)
		}
		if !resp.Close {
			t.Errorf("%.30q: the 400 does not say Connection: close", req)
		}
		if !closedByServer(c, br) {
			t.Errorf("%.30q: the connection stayed open: the rest of the body would be read as a request", req)
		}
	}
}

// TestUnparsableRequestsAreJSON: requests net/http refuses before any
// handler runs (a bad percent escape, a missing Host, oversized fields) get
// the JSON error from the real edge, not net/http's plain text
// (caddymodules/connguard/rawerrors.go).
func TestUnparsableRequestsAreJSON(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	for _, tc := range []struct {
		desc, raw string
		status    int
	}{
		{desc: "bad percent escape", raw: "GET /api/v1/articles/%zz HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 400},
		{desc: "no Host", raw: "GET /api/v1/ HTTP/1.1\r\n\r\n", status: 400},
		{desc: "fields over max_header_size", raw: "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("x", 2<<20) + "\r\n\r\n", status: 431},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := rawConn(t, edge)
			go fmt.Fprint(c, tc.raw) // the edge may answer before it has read all of it
			resp, body := readResponse(t, bufio.NewReader(c))
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || !isJSONError(body, "bad_request") {
				t.Errorf("%d %v %s, want %d with a JSON bad_request", resp.StatusCode, resp.Header, body, tc.status)
			}
		})
	}
}

// TestProductionEdgeSetsHSTS is item 10's HSTS: the production Caddyfile,
// with only its admin address and site address swapped for free local
// ports (plain HTTP, no certificates), answers with Strict-Transport-Security.
func TestProductionEdgeSetsHSTS(t *testing.T) {
	inst := origintest.Start(t)
	edge := startProductionEdge(t, inst)
	for _, path := range []string{"/api/v1/", "/api/v1/no-such-thing"} {
		resp, _ := do(t, "GET", edge+path)
		if hsts := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=31536000") {
			t.Errorf("GET %s (%d): Strict-Transport-Security %q", path, resp.StatusCode, hsts)
		}
	}
}

// TestErrorsNameNoGoTypes is item 10's error messages: a body of the wrong
// shape is described in JSON's words, never with the server's Go types.
func TestErrorsNameNoGoTypes(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	for _, tc := range []struct{ desc, path, body string }{
		{desc: "ask with an array", path: "/ask", body: `[]`},
		{desc: "ask with a number for an object", path: "/ask", body: `{"query":"x","prefer":5}`},
		{desc: "register with a number", path: "/api/v1/agent-auth/register", body: `{"client_name":5}`},
		{desc: "register with a string", path: "/api/v1/agent-auth/register", body: `"x"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := post(t, edge+tc.path, tc.body)
			var e struct {
				Error struct{ Code, Message, Hint string } `json:"error"`
			}
			if resp.StatusCode != 400 || json.Unmarshal(body, &e) != nil || e.Error.Code != "bad_request" {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			for _, leak := range []string{"Go ", "wireRequest", "struct", "agentauth.", "ask.", "int64", "float64", "json:"} {
				if strings.Contains(e.Error.Message+e.Error.Hint, leak) {
					t.Errorf("message names %q: %s", leak, body)
				}
			}
		})
	}
}

// registerAndClaim registers an anonymous client through the edge and
// claims a token for it.
func registerAndClaim(t *testing.T, base string, header ...string) (clientID, accessToken string) {
	t.Helper()
	resp, body := post(t, base+"/api/v1/agent-auth/register", `{"client_name":"abuse test"}`, header...)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(body, &reg) != nil {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, base+"/api/v1/agent-auth/claim", `{"client_id":"`+reg.ClientID+`"}`)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &tok) != nil {
		t.Fatalf("claim: %d %s", resp.StatusCode, body)
	}
	return reg.ClientID, tok.AccessToken
}

// TestTokensAddNoBudget is item 1: an address that spent its budget stays
// limited with any token it claims, registering included; registering has
// a stricter budget of its own.
func TestTokensAddNoBudget(t *testing.T) {
	t.Run("a token does not escape its address's budget", func(t *testing.T) {
		inst := origintest.Start(t)
		edge := startEdge(t, inst, 8)
		_, tok := registerAndClaim(t, edge) // 2 of 8
		for i := range 6 {
			if resp, body := do(t, "GET", edge+"/api/v1/"); resp.StatusCode != 200 {
				t.Fatalf("request %d of the budget: %d %s", i+3, resp.StatusCode, body)
			}
		}
		if resp, _ := do(t, "GET", edge+"/api/v1/"); resp.StatusCode != 429 {
			t.Fatalf("anonymous request over the budget: %d", resp.StatusCode)
		}
		for _, tc := range []struct{ desc, method, path, body string }{
			{desc: "a read with the token", method: "GET", path: "/api/v1/"},
			{desc: "an owner route with the token", method: "GET", path: "/api/v1/webhooks/subscriptions"},
			{desc: "register with the token", method: "POST", path: "/api/v1/agent-auth/register", body: `{"client_name":"more"}`},
		} {
			var resp *http.Response
			var body []byte
			if tc.method == "GET" {
				resp, body = do(t, "GET", edge+tc.path, "Authorization: Bearer "+tok)
			} else {
				resp, body = post(t, edge+tc.path, tc.body, "Authorization: Bearer "+tok)
			}
			if resp.StatusCode != 429 || !isJSONError(body, "rate_limited") {
				t.Errorf("%s: %d %s, want 429", tc.desc, resp.StatusCode, body)
			}
		}
	})

	t.Run("registering has its own budget", func(t *testing.T) {
		inst := origintest.Start(t)
		t.Setenv("IW_RATELIMIT_REGISTER_QUOTA", "2")
		edge := startEdge(t, inst, 100000)
		for i := range 2 {
			resp, body := post(t, edge+"/api/v1/agent-auth/register", `{"client_name":"agent"}`)
			if resp.StatusCode != 201 {
				t.Fatalf("registration %d: %d %s", i+1, resp.StatusCode, body)
			}
		}
		resp, body := post(t, edge+"/api/v1/agent-auth/register", `{"client_name":"agent"}`)
		if resp.StatusCode != 429 || !isJSONError(body, "rate_limited") || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("third registration: %d %s", resp.StatusCode, body)
		}
		if pol := resp.Header.Get("RateLimit-Policy"); !strings.Contains(pol, `"register";q=2;w=3600`) {
			t.Errorf("RateLimit-Policy %q does not name the register policy", pol)
		}
		// Other requests from the address go on.
		if resp, _ := do(t, "GET", edge+"/api/v1/"); resp.StatusCode != 200 {
			t.Errorf("a read after the registration budget is spent: %d", resp.StatusCode)
		}
	})
}

// mcpPost sends one raw MCP POST through the edge.
func mcpPost(t *testing.T, edge, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return post(t, edge+"/mcp", body, append([]string{"Accept: application/json, text/event-stream"}, header...)...)
}

// TestMCPAmplification is item 2: a JSON-RPC batch is refused whatever
// MCP-Protocol-Version says, and a tool result has a bound.
func TestMCPAmplification(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_articles","arguments":{"limit":50}}}`
	var calls []string
	for i := range 50 {
		calls = append(calls, fmt.Sprintf(call, i+1))
	}
	batch := "[" + strings.Join(calls, ",") + "]"
	for _, version := range []string{"", "MCP-Protocol-Version: 2025-03-26", "MCP-Protocol-Version: 2025-06-18"} {
		t.Run("batch with "+version, func(t *testing.T) {
			var header []string
			if version != "" {
				header = append(header, version)
			}
			resp, body := mcpPost(t, edge, batch, header...)
			if resp.StatusCode != 400 || !isJSONError(body, "bad_request") {
				t.Errorf("%d, %d bytes: %.200s", resp.StatusCode, len(body), body)
			}
		})
	}

	t.Run("a tool result is bounded", func(t *testing.T) {
		// One article grows to 400 KB; get_article must not return it whole.
		corpus := *inst.Corpus
		corpus.Articles = slices.Clone(corpus.Articles)
		copied := *corpus.Articles[0]
		big := &copied
		corpus.Articles[0] = big
		big.Body += "\n\n" + strings.Repeat("Peppol e-invoicing mandate news. ", 12000)
		if err := inst.Publisher.SyncCorpus(context.Background(), &corpus, nil); err != nil {
			t.Fatal(err)
		}
		resp, body := mcpPost(t, edge, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_article","arguments":{"slug":"`+big.Slug+`"}}}`,
			"MCP-Protocol-Version: 2025-06-18")
		var rpc struct {
			Result struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &rpc) != nil {
			t.Fatalf("%d %.300s", resp.StatusCode, body)
		}
		if len(body) > 300<<10 || !rpc.Result.IsError {
			t.Errorf("get_article of a 400 KB article answered %d bytes (isError %v)", len(body), rpc.Result.IsError)
		}
	})
}

// TestMCPOriginAllowList is item 10's Origin check: /mcp refuses browser
// origins outside the allow-list (default: the site's own) with 403, and
// serves programs (no Origin) and the allowed origins.
func TestMCPOriginAllowList(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		desc   string
		header []string
		status int
	}{
		{desc: "a program sends no Origin", status: 200},
		{desc: "the site's own origin", header: []string{"Origin: " + inst.SiteRoot}, status: 200},
		{desc: "a rebinding page", header: []string{"Origin: http://attacker.example"}, status: 403},
		{desc: "a null origin", header: []string{"Origin: null"}, status: 403},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := mcpPost(t, edge, list, append(tc.header, "MCP-Protocol-Version: 2025-06-18")...)
			if resp.StatusCode != tc.status || tc.status == 403 && !isJSONError(body, "forbidden") {
				t.Errorf("%d %.200s, want %d", resp.StatusCode, body, tc.status)
			}
		})
	}
}

// TestWebhooksStayOffTheServiceAndSpecialRanges is items 5 and 6: with
// loopback allowed for receivers (as in make run), a subscription to one of
// the service's own listeners (the edge's admin API, the origin, Redis) or
// to an IPv4-compatible IPv6 address is refused with 400.
func TestWebhooksStayOffTheServiceAndSpecialRanges(t *testing.T) {
	ports := freeport.Ports(t, 2)
	admin, edgePort := ports[0], ports[1]
	inst := origintest.Start(t, func(c *origin.Config) {
		// The policy make run's processes build from their environment.
		cfg, err := config.FromLookup(func(k string) (string, bool) {
			v, ok := map[string]string{
				"IW_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8,::1/128",
				"IW_EDGE_ADMIN_ADDR":     fmt.Sprintf("localhost:%d", admin),
				"IW_EDGE_PORT":           fmt.Sprint(edgePort),
			}[k]
			return v, ok && v != ""
		})
		if err != nil {
			t.Fatal(err)
		}
		c.WebhookPolicy = cfg.WebhookPolicy()
	})
	edge := startEdgeOn(t, strings.TrimPrefix(inst.SiteRoot, "http://"), inst.Redis.URL(), inst.SiteRoot, 100000, admin, edgePort)
	_, tok := registerAndClaim(t, edge)
	bearer := "Authorization: Bearer " + tok
	for _, tc := range []struct {
		desc, url string
		status    int
	}{
		{desc: "the edge's admin API", url: fmt.Sprintf("http://127.0.0.1:%d/load", admin), status: 400},
		{desc: "the edge's admin API on another loopback address", url: fmt.Sprintf("http://127.0.0.2:%d/stop", admin), status: 400},
		{desc: "the edge itself", url: fmt.Sprintf("http://127.0.0.1:%d/api/v1/", edgePort), status: 400},
		{desc: "the origin's metrics", url: "http://127.0.0.1:8091/metrics", status: 400},
		{desc: "IPv4-compatible metadata address", url: "https://[::169.254.169.254]/latest", status: 400},
		{desc: "IPv4-compatible loopback", url: "https://[::127.0.0.1]/hook", status: 400},
		{desc: "a receiver on another loopback port", url: "http://127.0.0.1:9/hook", status: 201},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := post(t, edge+"/api/v1/webhooks", `{"url":"`+tc.url+`","events":["article.published"]}`, bearer)
			if resp.StatusCode != tc.status || tc.status == 400 && !isJSONError(body, "bad_request") {
				t.Errorf("%d %s, want %d", resp.StatusCode, body, tc.status)
			}
		})
	}
}

// clientFrom is an HTTP client whose connections leave from the loopback
// address local, so the edge sees another client address.
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
}

// postWith sends a JSON POST with c (post uses the shared client).
func postWith(t *testing.T, c *http.Client, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestIdempotentReplayStaysWithItsClient is item 3: the same
// Idempotency-Key and body from another address is a new request, not a
// replay of the first client's credentials; the first client's retry is
// replayed; and no stored answer holds a secret in the clear.
func TestIdempotentReplayStaysWithItsClient(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	const body = `{"client_name":"same body"}`
	type registration struct {
		ClientID string `json:"client_id"`
		Token    string `json:"registration_access_token"`
	}
	send := func(c *http.Client, header ...string) (registration, *http.Response) {
		t.Helper()
		resp, b := postWith(t, c, edge+"/api/v1/agent-auth/register", body, append([]string{"Idempotency-Key: shared-key-1"}, header...)...)
		var reg registration
		if resp.StatusCode != 201 || json.Unmarshal(b, &reg) != nil || reg.ClientID == "" {
			t.Fatalf("register: %d %s", resp.StatusCode, b)
		}
		return reg, resp
	}
	a, _ := send(clientFrom("127.0.0.1"))
	b, resp := send(clientFrom("127.0.0.2"))
	if b.ClientID == a.ClientID || b.Token == a.Token || resp.Header.Get("Idempotency-Replayed") != "" {
		t.Errorf("another address got the first client's registration (replayed %q)", resp.Header.Get("Idempotency-Replayed"))
	}
	again, resp := send(clientFrom("127.0.0.1"))
	if again != a || resp.Header.Get("Idempotency-Replayed") != "true" {
		t.Errorf("the first client's retry: %+v replayed %q, want %+v replayed", again, resp.Header.Get("Idempotency-Replayed"), a)
	}
	// A token presented makes the token the client: the same key and body
	// with a token is not the address's record either.
	_, tok := registerAndClaim(t, edge)
	withToken, resp := send(clientFrom("127.0.0.1"), "Authorization: Bearer "+tok)
	if withToken.ClientID == a.ClientID || resp.Header.Get("Idempotency-Replayed") != "" {
		t.Errorf("a request with a token replayed the address's record")
	}

	// A claim under a key, so a stored answer holds an access token too.
	resp, cb := post(t, edge+"/api/v1/agent-auth/claim", `{"client_id":"`+a.ClientID+`"}`, "Idempotency-Key: claim-key-1")
	var claimed struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(cb, &claimed) != nil || claimed.AccessToken == "" {
		t.Fatalf("claim: %d %s", resp.StatusCode, cb)
	}
	rdb := inst.Redis.Client()
	ctx := context.Background()
	keys, err := redistest.Keys(ctx, rdb, "iw:idem:*")
	if err != nil || len(keys) < 3 {
		t.Fatalf("idempotency records: %v, %v", keys, err)
	}
	for _, k := range keys {
		v, err := rdb.Get(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		v = withDecodedStrings(t, v)
		for _, secret := range []string{a.Token, b.Token, withToken.Token, claimed.AccessToken, a.ClientID, "same body"} {
			if strings.Contains(v, secret) {
				t.Errorf("record %s holds %q in the clear", k, secret)
			}
		}
	}
}

// withDecodedStrings returns a JSON record followed by every string in it
// that decodes as base64 (encoding/json stores []byte so), decoded: a
// secret stored as bytes is as clear as one stored as text.
func withDecodedStrings(t *testing.T, record string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(record), &v); err != nil {
		t.Fatalf("a record is not JSON: %v", err)
	}
	out := []string{record}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if b, err := base64.StdEncoding.DecodeString(x); err == nil {
				out = append(out, string(b))
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return strings.Join(out, "\n")
}

// TestClaimDoesNotRevealClients is item 10's claim: an unknown client_id is
// answered exactly as a known client that needs an assertion, so claim
// does not tell which client ids exist.
func TestClaimDoesNotRevealClients(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	resp, body := post(t, edge+"/api/v1/agent-auth/register", `{"client_name":"asserted","identity_type":"identity_assertion"}`)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(body, &reg) != nil {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	unknown := "cli_" + strings.Repeat("0", len(reg.ClientID)-4)
	for _, tc := range []struct{ desc, body string }{
		{desc: "no assertion", body: `{"client_id":"%s"}`},
		{desc: "a malformed assertion", body: `{"client_id":"%s","identity_assertion":"not.a.jwt"}`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r1, known := post(t, edge+"/api/v1/agent-auth/claim", fmt.Sprintf(tc.body, reg.ClientID))
			r2, missing := post(t, edge+"/api/v1/agent-auth/claim", fmt.Sprintf(tc.body, unknown))
			var e1, e2 struct {
				Error struct{ Code, Message, Hint string } `json:"error"`
			}
			if json.Unmarshal(known, &e1) != nil || json.Unmarshal(missing, &e2) != nil {
				t.Fatalf("bodies %s / %s", known, missing)
			}
			if r1.StatusCode != 400 || r1.StatusCode != r2.StatusCode || e1 != e2 {
				t.Errorf("known client: %d %s\nunknown client: %d %s", r1.StatusCode, known, r2.StatusCode, missing)
			}
		})
	}
}

// TestJSONTypesCompressed: the +json types (JSON Feed, the agent card) are
// compressed like application/json, on the miss that stores them and on the
// hit after it (edgecache.CompressedTypes).
func TestJSONTypesCompressed(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	for _, path := range []string{"/feeds/all.json", "/.well-known/agent-card.json"} {
		for _, pass := range []string{"miss", "hit"} {
			resp, body := do(t, "GET", edge+path, "Accept-Encoding: gzip")
			if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s (%s): %d, Content-Type %q, Content-Encoding %q, Vary %q, %d bytes; want gzip", path, pass, resp.StatusCode,
					resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"), len(body))
			}
		}
	}
}

// TestCompressedRequestBodyIs415: a body in a content coding is refused
// with 415 and Accept-Encoding: identity (RFC 7694 §3), not read as its
// compressed bytes; identity is accepted.
func TestCompressedRequestBodyIs415(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	for _, tc := range []struct {
		desc, coding string
		status       int
	}{
		{desc: "gzip", coding: "gzip", status: 415},
		{desc: "br", coding: "br", status: 415},
		{desc: "identity then gzip", coding: "identity, gzip", status: 415},
		{desc: "identity", coding: "identity", status: 200},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := postWith(t, client, edge+"/ask", `{"query":"peppol belgium"}`, "Content-Encoding: "+tc.coding)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 415 && (!isJSONError(body, "unsupported_media_type") || resp.Header.Get("Accept-Encoding") != "identity") {
				t.Errorf("%s, Accept-Encoding %q: want unsupported_media_type and Accept-Encoding: identity", body, resp.Header.Get("Accept-Encoding"))
			}
		})
	}
}

// TestRegisterReplayOverBudget: once the register budget is spent, the
// retry of a registration under its Idempotency-Key still gets the stored
// answer (auth.md, "Rate limits": a replay is answered), through the real
// edge and origin; a new key, another body or no key gets the register
// budget's 429 and creates nothing, and so does a new key whose request
// names the replay-only mark in Connection.
func TestRegisterReplayOverBudget(t *testing.T) {
	inst := origintest.Start(t)
	t.Setenv("IW_RATELIMIT_REGISTER_QUOTA", "2")
	edge := startEdge(t, inst, 100000)
	const body = `{"client_name":"replayed agent"}`
	// Two clients spend the budget; the first under a key, with a
	// replay-only mark of its own, which the edge removes.
	resp, first := post(t, edge+"/api/v1/agent-auth/register", body, "Idempotency-Key: key-1", "X-Invoicewire-Replay-Only: 1")
	if resp.StatusCode != 201 {
		t.Fatalf("first registration: %d %s", resp.StatusCode, first)
	}
	if resp, b := post(t, edge+"/api/v1/agent-auth/register", body); resp.StatusCode != 201 {
		t.Fatalf("second registration: %d %s", resp.StatusCode, b)
	}
	clients := func() int {
		keys, err := redistest.Keys(context.Background(), inst.Redis.Client(), "iw:client:{*}")
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	before := clients()
	for _, tc := range []struct {
		desc   string
		body   string
		header []string
		status int
	}{
		{desc: "the retry under its key is replayed", body: body, header: []string{"Idempotency-Key: key-1"}, status: 201},
		{desc: "a new key gets the 429", body: body, header: []string{"Idempotency-Key: key-2"}, status: 429},
		{desc: "the key with another body gets the 429", body: `{"client_name":"another"}`, header: []string{"Idempotency-Key: key-1"}, status: 429},
		{desc: "no key gets the 429", body: body, status: 429},
		// The proxy deletes the fields Connection names (RFC 9110 §7.6.1):
		// naming the replay-only mark there took it off, the origin created
		// the client, and the plain retry got its answer replayed.
		{desc: "a new key naming the replay-only mark in Connection gets the 429", body: body,
			header: []string{"Idempotency-Key: key-3", "Connection: X-Invoicewire-Replay-Only"}, status: 429},
		{desc: "and so does its retry", body: body, header: []string{"Idempotency-Key: key-3"}, status: 429},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, b := post(t, edge+"/api/v1/agent-auth/register", tc.body, tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s; want %d", resp.StatusCode, b, tc.status)
			}
			if tc.status == 201 {
				if string(b) != string(first) || resp.Header.Get("Idempotency-Replayed") != "true" {
					t.Errorf("answer %s (replayed %q); want the first answer replayed: %s", b, resp.Header.Get("Idempotency-Replayed"), first)
				}
				return
			}
			if !isJSONError(b, "rate_limited") || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "per 3600 seconds") {
				t.Errorf("%s (Retry-After %q); want the register budget's 429", b, resp.Header.Get("Retry-After"))
			}
		})
	}
	if n := clients(); n != before {
		t.Errorf("%d clients after the requests over the budget; want %d", n, before)
	}
}
