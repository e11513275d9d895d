package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/origin/mcp"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// connect opens a session with the SDK's own client over Streamable HTTP,
// exactly as an MCP client would.
func connect(t *testing.T, endpoint string, client *http.Client) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "invoicewire-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v (bad arguments must be tool errors)", tool, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestTools exercises every tool through the origin with the SDK client:
// the tool list matches the server card, results come from the store, and
// bad arguments or unknown identifiers are tool errors with a useful text.
func TestTools(t *testing.T) {
	inst := origintest.Start(t)
	cs := connect(t, inst.SiteRoot+"/mcp", inst.Server.Client())
	if v := cs.InitializeResult().ProtocolVersion; v != mcp.ProtocolVersions[0] {
		t.Errorf("negotiated protocol %s, the server card's newest is %s", v, mcp.ProtocolVersions[0])
	}
	for _, v := range mcp.ProtocolVersions {
		if !slices.Contains(sdk.SupportedProtocolVersions(), v) {
			t.Errorf("the server card lists %s, which the SDK does not speak", v)
		}
	}

	got, _ := json.Marshal(cs.InitializeResult().Capabilities)
	card, _ := json.Marshal(mcp.Capabilities)
	if !bytes.Equal(canonicalJSON(t, got), canonicalJSON(t, card)) {
		t.Errorf("initialize states capabilities %s, the server card %s", got, card)
	}

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, want []string
	described := map[string]string{}
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		described[tl.Name] = tl.Description
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("%s is not marked read-only", tl.Name)
		}
	}
	for _, tl := range mcp.Tools {
		want = append(want, tl.Name)
		if tl.Description == "" || described[tl.Name] != tl.Description {
			t.Errorf("%s is described %q to clients and %q on the card", tl.Name, described[tl.Name], tl.Description)
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, the server card lists %v", names, want)
	}

	first := contenttest.Article(0)
	testCases := []struct {
		desc     string
		tool     string
		args     map[string]any
		wantErr  string // substring of the tool error; "" means success
		wantText string // substring of a successful result
		wantNot  string // must not appear in a successful result
	}{
		{desc: "newest articles", tool: "search_articles", args: map[string]any{}, wantText: first.Slug},
		{desc: "filtered", tool: "search_articles", args: map[string]any{"section": "mandates", "country": "BE", "limit": 3}, wantText: first.Slug},
		{desc: "text query", tool: "search_articles", args: map[string]any{"query": "synthetic ARTICLE 12"}, wantText: contenttest.Article(12).Slug},
		{desc: "text query without matches", tool: "search_articles", args: map[string]any{"query": "blockchain"}, wantText: `"count":0`},
		{desc: "a query word is a whole word", tool: "search_articles", args: map[string]any{"query": "1"}, wantText: `"count":1,`},
		{desc: "no match inside a longer word", tool: "search_articles", args: map[string]any{"query": "synth"}, wantText: `"count":0,`},
		{desc: "a hyphenated word matches its compound", tool: "search_articles", args: map[string]any{"query": "E-INVOICING"}, wantText: `"count":29,`},
		{desc: "a part of a compound is a word", tool: "search_articles", args: map[string]any{"query": "invoicing"}, wantText: `"count":29,`},
		{desc: "a query without words", tool: "search_articles", args: map[string]any{"query": "!!!"}, wantErr: "no words"},
		{desc: "a blank query", tool: "search_articles", args: map[string]any{"query": " \t "}, wantErr: "no words"},
		{desc: "retracted articles are not found", tool: "search_articles", args: map[string]any{"query": "synthetic", "limit": 50}, wantText: `"count":29`, wantNot: origintest.RetractedSlug},
		{desc: "unknown section", tool: "search_articles", args: map[string]any{"section": "sport"}, wantErr: "section"},
		{desc: "country of three letters", tool: "search_articles", args: map[string]any{"country": "deu"}, wantErr: "country"},
		{desc: "limit 0", tool: "search_articles", args: map[string]any{"limit": 0}, wantErr: "limit"},
		{desc: "limit too high", tool: "search_articles", args: map[string]any{"limit": 500}, wantErr: "limit"},
		{desc: "negative offset", tool: "search_articles", args: map[string]any{"offset": -1}, wantErr: "offset"},
		{desc: "limit of the wrong type", tool: "search_articles", args: map[string]any{"limit": "ten"}, wantErr: "limit"},
		{desc: "unknown argument", tool: "search_articles", args: map[string]any{"colour": "blue"}, wantErr: "colour"},
		{desc: "overlong query", tool: "search_articles", args: map[string]any{"query": strings.Repeat("x", 201)}, wantErr: "query"},
		{desc: "article as markdown", tool: "get_article", args: map[string]any{"slug": first.Slug}, wantText: "# " + first.Title},
		{desc: "unknown article", tool: "get_article", args: map[string]any{"slug": "no-such-article"}, wantErr: "search_articles"},
		{desc: "retracted article", tool: "get_article", args: map[string]any{"slug": origintest.RetractedSlug}, wantErr: "retracted"},
		{desc: "malformed slug", tool: "get_article", args: map[string]any{"slug": "../../etc/passwd"}, wantErr: "slug"},
		{desc: "missing slug", tool: "get_article", args: map[string]any{}, wantErr: "slug"},
		{desc: "countries", tool: "list_countries", args: nil, wantText: `"code":"jp"`},
		{desc: "country, either case", tool: "get_country", args: map[string]any{"code": "DE"}, wantText: `"mandate_status":"phased-rollout"`},
		{desc: "untracked country", tool: "get_country", args: map[string]any{"code": "zz"}, wantErr: "list_countries"},
		{desc: "country code of digits", tool: "get_country", args: map[string]any{"code": "12"}, wantErr: "code"},
		{desc: "specs", tool: "list_specs", args: nil, wantText: "peppol-bis-billing-3"},
		{desc: "spec", tool: "get_spec", args: map[string]any{"slug": "peppol-bis-billing-3"}, wantText: `"version":"3.0.20"`},
		{desc: "unknown spec", tool: "get_spec", args: map[string]any{"slug": "no-such-spec"}, wantErr: "list_specs"},
		{desc: "sources", tool: "list_sources", args: nil, wantText: "openpeppol"},
		{desc: "a list tool refuses arguments", tool: "list_sources", args: map[string]any{"x": 1}, wantErr: "x"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args)
			got := text(res)
			if tc.wantErr != "" {
				if !res.IsError {
					t.Fatalf("no tool error: %s", got)
				}
				if !strings.Contains(got, tc.wantErr) {
					t.Errorf("tool error %q does not mention %q", got, tc.wantErr)
				}
				return
			}
			if res.IsError {
				t.Fatalf("tool error: %s", got)
			}
			if !strings.Contains(got, tc.wantText) {
				t.Errorf("result does not contain %q: %.400s", tc.wantText, got)
			}
			if tc.wantNot != "" && strings.Contains(got, tc.wantNot) {
				t.Errorf("result contains %q", tc.wantNot)
			}
		})
	}

	t.Run("an unknown tool is a protocol error", func(t *testing.T) {
		if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "delete_everything"}); err == nil {
			t.Error("no error")
		}
	})
	t.Run("search pages through results", func(t *testing.T) {
		var out mcp.SearchOutput
		res := call(t, cs, "search_articles", map[string]any{"query": "synthetic", "limit": 5, "offset": 5})
		if err := json.Unmarshal([]byte(text(res)), &out); err != nil {
			t.Fatal(err)
		}
		if out.Count != origintest.Articles-1 || len(out.Items) != 5 || out.Items[0].Slug != contenttest.Article(6).Slug {
			t.Errorf("count %d, %d items, first %v", out.Count, len(out.Items), out.Items)
		}
	})
}

type fakeAsker struct{ got string }

func (f *fakeAsker) Ask(_ context.Context, query, locale string) (any, error) {
	f.got = query + "|" + locale
	return map[string]any{"answer": "quoted"}, nil
}

// TestAskHook shows the hook the /ask engine plugs into: with Server.Ask
// set, an "ask" tool appears and passes the question through.
func TestAskHook(t *testing.T) {
	inst := origintest.Start(t)
	asker := &fakeAsker{}
	ts := httptest.NewServer(mcp.Handler(&mcp.Server{Store: inst.Store, SiteRoot: inst.SiteRoot, Log: slog.New(slog.DiscardHandler), Ask: asker}))
	defer ts.Close()
	cs := connect(t, ts.URL, ts.Client())
	res := call(t, cs, "ask", map[string]any{"query": " When is KSeF mandatory? "})
	if res.IsError || !strings.Contains(text(res), "quoted") || asker.got != "When is KSeF mandatory?|en" {
		t.Errorf("ask: %v %s %q", res.IsError, text(res), asker.got)
	}
	if res := call(t, cs, "ask", map[string]any{"query": ""}); !res.IsError {
		t.Error("an empty question is not a tool error")
	}
}

// TestAskAsAskDoes checks that the ask tool takes exactly the questions POST
// /ask takes: docs/decisions.md (Ask) counts 1..500 characters once trimmed,
// and the tool is the /ask engine, so the engine's check decides for both.
// A refusal says what is wrong without echoing the question back. The
// locale is judged alike too: left out it means en, sent blank it is
// refused.
func TestAskAsAskDoes(t *testing.T) {
	inst := origintest.Start(t)
	cs := connect(t, inst.SiteRoot+"/mcp", inst.Server.Client())
	testCases := []struct {
		desc   string
		query  string
		locale *string // nil: left out
		ok     bool
	}{
		{desc: "locale en", query: "KSeF", locale: ptr("en"), ok: true},
		{desc: "locale empty", query: "KSeF", locale: ptr(""), ok: false},
		{desc: "locale blank", query: "KSeF", locale: ptr(" \t"), ok: false},
		{desc: "500 characters once trimmed, 504 as sent", query: "  " + strings.Repeat("ksef ", 100) + "  ", ok: true},
		{desc: "500 characters of two bytes", query: strings.Repeat("é", 500), ok: true},
		{desc: "one character among blanks", query: " \t k \n", ok: true},
		{desc: "501 characters once trimmed", query: " " + strings.Repeat("é", 501) + " ", ok: false},
		{desc: "empty", query: "", ok: false},
		{desc: "blanks only", query: " \t\n ", ok: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			args := map[string]any{"query": tc.query}
			if tc.locale != nil {
				args["locale"] = *tc.locale
			}
			body, _ := json.Marshal(args)
			resp, err := inst.Server.Client().Post(inst.SiteRoot+"/ask", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[bool]int{true: 200, false: 400}[tc.ok]; resp.StatusCode != want {
				t.Fatalf("POST /ask: %d, want %d", resp.StatusCode, want)
			}
			res := call(t, cs, "ask", args)
			got := text(res)
			if res.IsError == tc.ok {
				t.Fatalf("the ask tool: isError %v, POST /ask %d: %.300s", res.IsError, resp.StatusCode, got)
			}
			if q := strings.TrimSpace(tc.query); res.IsError && len(q) > 20 && strings.Contains(got, q[:20]) {
				t.Errorf("the tool error echoes the question: %.300s", got)
			}
		})
	}
}

// TestHTTPErrors checks the transport's refusals are docs/decisions.md (JSON errors) JSON with no-store.
func TestHTTPErrors(t *testing.T) {
	inst := origintest.Start(t)
	testCases := []struct {
		desc        string
		method      string
		contentType string
		accept      string
		body        string
		version     string // MCP-Protocol-Version, when set
		want        int
		says        string // in the error's message, when set: the SDK's reason kept
	}{
		{desc: "GET", method: "GET", want: 405},
		{desc: "DELETE", method: "DELETE", want: 405},
		{desc: "text body", method: "POST", contentType: "text/plain", accept: "application/json, text/event-stream", body: "hi", want: 415},
		{desc: "malformed JSON", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: "{", want: 400, says: "send one JSON-RPC message as JSON"},
		{desc: "a message cut short", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":1,"method":"tools/li`, want: 400, says: "send one JSON-RPC message as JSON"},
		{desc: "Accept lacks event-stream", method: "POST", contentType: "application/json", accept: "application/json", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want: 400, says: "text/event-stream"},
		{desc: "a JSON string, not an object", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `"x"`, want: 400, says: "send one JSON-RPC message as JSON"},
		{desc: "an object as id", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, want: 400, says: "send one JSON-RPC message as JSON"},
		{desc: "unsupported protocol version", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", version: "1999-01-01", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want: 400, says: "Unsupported protocol version"},
		{desc: "invalid UTF-8 in a string", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search_articles\",\"arguments\":{\"query\":\"caf\xe9\"}}}", want: 400, says: "not valid UTF-8"},
		{desc: "neither method nor result or error", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":7}`, want: 400, says: "neither"},
		{desc: "method and result", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","result":{}}`, want: 400, says: "not both"},
		{desc: "method and error", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","error":{"code":1,"message":"x"}}`, want: 400, says: "not both"},
		{desc: "result and error", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"x"}}`, want: 400, says: "not both"},
		{desc: "a member named in another case", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":7,"Method":"tools/list"}`, want: 400, says: "neither"},
		{desc: "a fractional id", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, want: 400, says: "Invalid Request"},
		{desc: "an integer id with a fraction", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, want: 400, says: "Invalid Request"},
		{desc: "an id with an exponent", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, want: 400, says: "Invalid Request"},
		{desc: "an id above 2^53-1", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, want: 400, says: "Invalid Request"},
		{desc: "an id below -(2^53-1)", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`, want: 400, says: "Invalid Request"},
		{desc: "an id beyond int64", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}`, want: 400, says: "Invalid Request"},
		{desc: "a response under a fractional id", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":7.5,"result":{}}`, want: 400, says: "Invalid Request"},
		{desc: "body over 64 KiB", method: "POST", contentType: "application/json", accept: "application/json, text/event-stream", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, want: 413},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, inst.SiteRoot+"/mcp", strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.version != "" {
				req.Header.Set("MCP-Protocol-Version", tc.version)
			}
			resp, err := inst.Server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %s %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), body)
			}
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
				t.Errorf("not docs/decisions.md (JSON errors) JSON: %s", body)
			}
			if !strings.Contains(e.Error.Message, tc.says) || speaksGo(e.Error.Message) {
				t.Errorf("message %q does not say %q, or speaks of Go", e.Error.Message, tc.says)
			}
		})
	}
	t.Run("a response or notification is accepted", func(t *testing.T) {
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":7,"result":{}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		} {
			if status, got := rpc(t, inst.Server.Client(), inst.SiteRoot+"/mcp", body); status != http.StatusAccepted {
				t.Errorf("%s: %d %s, want 202", body, status, got)
			}
		}
	})
	t.Run("an id comes back as sent", func(t *testing.T) {
		// JSON-RPC 2.0 §5: the answer's id is the request's, to the byte
		// for the integers a float64 holds exactly.
		for _, id := range []string{`0`, `-1`, `9007199254740991`, `-9007199254740991`, `"9007199254740993"`, `"1.5"`} {
			status, got := rpc(t, inst.Server.Client(), inst.SiteRoot+"/mcp", `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
			var answer struct {
				ID json.RawMessage `json:"id"`
			}
			if status != http.StatusOK || json.Unmarshal(got, &answer) != nil || string(answer.ID) != id {
				t.Errorf("id %s: %d %s, want 200 under the same id", id, status, got)
			}
		}
	})
	t.Run("preflight", func(t *testing.T) {
		req, _ := http.NewRequest("OPTIONS", inst.SiteRoot+"/mcp", nil)
		req.Header.Set("Origin", "https://agent.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := inst.Server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
			t.Errorf("%d %v", resp.StatusCode, resp.Header)
		}
	})
	t.Run("a proxied Host is served", func(t *testing.T) {
		// Behind the edge the origin listens on loopback and sees the
		// public Host; the SDK's DNS-rebinding guard must not refuse it.
		req, _ := http.NewRequest("POST", inst.SiteRoot+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Host = "invoicewire.example"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := inst.Server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"protocolVersion"`) {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
}

// canonicalJSON re-encodes a JSON document with its object members sorted,
// so two encodings of one value compare equal.
func canonicalJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

// rpc posts one JSON-RPC message to the MCP endpoint with the given extra
// headers ("Name: value") and returns the status and the body.
func rpc(t *testing.T, client *http.Client, endpoint, body string, header ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// meta2026 is the _meta a 2026-07-28 request carries in its params.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// TestProtocolVersions checks that the versions and capabilities the cards
// announce (mcp.ProtocolVersions, mcp.Capabilities) are the ones the
// endpoint negotiates and honours (docs/decisions.md, MCP versions).
func TestProtocolVersions(t *testing.T) {
	inst := origintest.Start(t)
	endpoint, client := inst.SiteRoot+"/mcp", inst.Server.Client()
	newestLegacy := ""
	for _, v := range mcp.ProtocolVersions {
		if v < "2026-07-28" {
			newestLegacy = v
			break
		}
	}
	for _, tc := range []struct{ asked, want string }{
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2025-03-26", newestLegacy},
		{"2024-11-05", newestLegacy},
		{"1999-01-01", newestLegacy},
	} {
		t.Run("initialize "+tc.asked, func(t *testing.T) {
			status, body := rpc(t, client, endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+tc.asked+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			var res struct {
				Result struct {
					ProtocolVersion string         `json:"protocolVersion"`
					Capabilities    map[string]any `json:"capabilities"`
				} `json:"result"`
			}
			if status != 200 || json.Unmarshal(body, &res) != nil || res.Result.ProtocolVersion != tc.want {
				t.Fatalf("%d %s, want protocolVersion %s", status, body, tc.want)
			}
			if !slices.Contains(mcp.ProtocolVersions, res.Result.ProtocolVersion) {
				t.Errorf("negotiated %s, not among %v", res.Result.ProtocolVersion, mcp.ProtocolVersions)
			}
		})
	}
	for _, v := range []string{"2025-03-26", "2024-11-05"} {
		t.Run("header "+v, func(t *testing.T) {
			if status, body := rpc(t, client, endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "MCP-Protocol-Version: "+v); status != 400 {
				t.Errorf("%d %.300s", status, body)
			}
		})
	}
	t.Run("server/discover", func(t *testing.T) {
		status, body := rpc(t, client, endpoint, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta2026+`}}`,
			"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover")
		var res struct {
			Result struct {
				SupportedVersions []string        `json:"supportedVersions"`
				Capabilities      json.RawMessage `json:"capabilities"`
			} `json:"result"`
		}
		if status != 200 || json.Unmarshal(body, &res) != nil {
			t.Fatalf("%d %s", status, body)
		}
		if !slices.Equal(res.Result.SupportedVersions, mcp.ProtocolVersions) {
			t.Errorf("server/discover lists %v, the cards %v", res.Result.SupportedVersions, mcp.ProtocolVersions)
		}
		card, _ := json.Marshal(mcp.Capabilities)
		if !bytes.Equal(canonicalJSON(t, res.Result.Capabilities), canonicalJSON(t, card)) {
			t.Errorf("server/discover states capabilities %s, the cards %s", res.Result.Capabilities, card)
		}
	})
	t.Run("nothing advertised that is not served", func(t *testing.T) {
		caps, _ := json.Marshal(mcp.Capabilities)
		var c map[string]map[string]any
		if err := json.Unmarshal(caps, &c); err != nil {
			t.Fatal(err)
		}
		if _, ok := c["logging"]; ok {
			t.Error("logging is advertised; 2026-07-28 has no logging/setLevel")
		}
		if c["tools"]["listChanged"] == true {
			t.Error("tools.listChanged is advertised; the tool list never changes")
		}
	})
	t.Run("subscriptions/listen is answered at once", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", endpoint, strings.NewReader(
			`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{`+meta2026+`,"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["x:y"]}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("the listen stream was held open: %v (%s)", err, body)
		}
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"notifications":{}`) || !strings.Contains(string(body), `"id":7`) {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("a client that handles list changes holds no request open", func(t *testing.T) {
		var inFlight atomic.Int32
		h := mcp.Handler(&mcp.Server{Store: inst.Store, SiteRoot: inst.SiteRoot, Log: slog.New(slog.DiscardHandler)})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			h.ServeHTTP(w, r)
		}))
		defer ts.Close()
		c := sdk.NewClient(&sdk.Implementation{Name: "invoicewire-test", Version: "1.0.0"},
			&sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {}})
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: ts.Client()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for inFlight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := inFlight.Load(); n > 0 {
			t.Errorf("%d requests still open after Connect and a call", n)
		}
	})
}

// TestRPCErrors checks that protocol errors are JSON-RPC errors with the
// request's id and JSON-RPC 2.0's codes, whose messages speak JSON, never
// Go (docs/decisions.md, JSON errors).
func TestRPCErrors(t *testing.T) {
	inst := origintest.Start(t)
	endpoint, client := inst.SiteRoot+"/mcp", inst.Server.Client()
	v2026 := []string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: search_articles"}
	testCases := []struct {
		desc   string
		body   string
		header []string
		status int
		id     string
		code   int64
		says   []string // in the message
	}{
		{desc: "unknown method", body: `{"jsonrpc":"2.0","id":9,"method":"bogus/method"}`, status: 200, id: "9", code: -32601, says: []string{`"bogus/method"`}},
		{desc: "unknown method, 2025-06-18", body: `{"jsonrpc":"2.0","id":"a","method":"bogus/method"}`, header: []string{"MCP-Protocol-Version: 2025-06-18"}, status: 200, id: `"a"`, code: -32601, says: []string{`"bogus/method"`}},
		{desc: "arguments as an array", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_articles","arguments":[]}}`, status: 200, id: "2", code: -32602, says: []string{`"arguments"`, "object", "array"}},
		{desc: "arguments as a string", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_articles","arguments":"x"}}`, status: 200, id: "2", code: -32602, says: []string{`"arguments"`, "object", "string"}},
		{desc: "arguments as an array, 2026-07-28", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_articles","arguments":[],` + meta2026 + `}}`, header: v2026, status: 400, id: "2", code: -32602, says: []string{`"arguments"`, "object"}},
		{desc: "protocolVersion as a number", body: `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":5}}`, status: 200, id: "3", code: -32602, says: []string{`"protocolVersion"`, "a string", "a number"}},
		{desc: "a nested member of the wrong type", body: `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":7,"version":"1"}}}`, status: 200, id: "3", code: -32602, says: []string{`"clientInfo.name"`, "a string"}},
		{desc: "params as an array", body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[]}`, status: 200, id: "4", code: -32602, says: []string{"params must be an object", "array"}},
		{desc: "a tool name of the wrong type", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}`, status: 200, id: "5", code: -32602, says: []string{`"name"`, "a string"}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			status, body := rpc(t, client, endpoint, tc.body, tc.header...)
			var res struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if status != tc.status || json.Unmarshal(body, &res) != nil || res.Error == nil {
				t.Fatalf("%d %s, want %d and a JSON-RPC error", status, body, tc.status)
			}
			if string(res.ID) != tc.id || res.Error.Code != tc.code {
				t.Errorf("id %s, code %d; want id %s, code %d: %s", res.ID, res.Error.Code, tc.id, tc.code, body)
			}
			for _, s := range tc.says {
				if !strings.Contains(res.Error.Message, s) {
					t.Errorf("message %q does not say %q", res.Error.Message, s)
				}
			}
			if speaksGo(res.Error.Message) {
				t.Errorf("message %q speaks of Go", res.Error.Message)
			}
		})
	}
	t.Run("null arguments are no arguments", func(t *testing.T) {
		for _, tool := range []string{"search_articles", "list_sources", "get_article"} {
			status, body := rpc(t, client, endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":null}}`)
			if status != 200 || !strings.Contains(string(body), `"result"`) {
				t.Errorf("%s: %d %.300s", tool, status, body)
			}
		}
	})
	t.Run("a tool error speaks JSON", func(t *testing.T) {
		cs := connect(t, endpoint, client)
		res := call(t, cs, "get_article", map[string]any{"slug": nil})
		if got := text(res); !res.IsError || speaksGo(got) || !strings.Contains(got, "null") {
			t.Errorf("%v %q", res.IsError, got)
		}
	})
}

// speaksGo reports whether an error message names Go's types or values.
func speaksGo(msg string) bool {
	for _, s := range []string{"Go value", "Go struct", "interface {", "map[", "mcp.", "jsonrpc2.", "reflect.", "unmarshal"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// TestRoutineRequestsNotLogged: an agent's session (connect, list, call)
// writes nothing to the origin's log at info, where the SDK would write
// three lines a request.
func TestRoutineRequestsNotLogged(t *testing.T) {
	inst := origintest.Start(t)
	var buf logging.Buffer
	ts := httptest.NewServer(mcp.Handler(&mcp.Server{Store: inst.Store, SiteRoot: inst.SiteRoot, Log: logging.NewTo(&buf, "origin", "info")}))
	defer ts.Close()
	c := sdk.NewClient(&sdk.Implementation{Name: "invoicewire-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: ts.Client()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_countries"}); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "" {
		t.Errorf("routine requests were logged:\n%s", got)
	}
}

func ptr(s string) *string { return &s }
