package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/invoicewire/invoicewire/internal/sse"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const testSiteRoot = "http://localhost:8080"

// realEngine is an Engine over the real corpus, shared by the tests that only
// read it.
var realEngine = sync.OnceValues(func() (*Engine, error) {
	e, err := New(Config{SiteRoot: testSiteRoot})
	if err != nil {
		return nil, err
	}
	c, err := loadRealCorpus()
	if err != nil {
		return nil, err
	}
	e.Use(c)
	return e, nil
})

func serveReal(t *testing.T) (*Engine, *httptest.Server) {
	t.Helper()
	e, err := realEngine()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv
}

func mustNew(t testing.TB, cfg Config, opts ...Option) *Engine {
	t.Helper()
	e, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// post sends body to /ask with the given Content-Type and extra headers.
func post(t *testing.T, srv *httptest.Server, contentType, body string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/ask", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tookMS is the only field of an answer that changes between runs.
var tookMS = regexp.MustCompile(`"took_ms":[0-9.e+-]+`)

func normalizeTook(b []byte) []byte { return tookMS.ReplaceAll(b, []byte(`"took_ms":0`)) }

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./origin/ask -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

// TestGolden pins whole answers on the real corpus, as JSON and as a stream.
func TestGolden(t *testing.T) {
	_, srv := serveReal(t)
	testCases := []struct {
		desc   string
		file   string
		body   string
		accept string
		// answer must be in the summary's first sentence: no golden may
		// lock in a summary that misses the answer.
		answer string
	}{
		{desc: "JSON answer with a summary", file: "belgium.json", body: `{"query":"When does Belgium require B2B e-invoices?"}`, answer: "1 January 2026"},
		{desc: "the same answer streamed (Accept)", file: "belgium.sse", body: `{"query":"When does Belgium require B2B e-invoices?"}`, accept: "text/event-stream", answer: "1 January 2026"},
		{desc: "NLWeb query object and max_results", file: "g2-object.json", body: `{"query":{"text":"Peppol G2 certificates retired"},"prefer":{"max_results":2}}`, answer: "1 April 2026"},
		{desc: "a follow-up, summarized", file: "follow-up.json", body: `{"query":"and what is the fine?","context":{"prev":["When does Greece require B2B e-invoices?"]},"prefer":{"mode":"summarize"}}`, answer: "50% of the VAT"},
		{desc: "zero results", file: "zero.json", body: `{"query":"quantum chromodynamics"}`},
		{desc: "zero results streamed (prefer.streaming)", file: "zero.sse", body: `{"query":"quantum chromodynamics","prefer":{"streaming":true}}`},
		{desc: "locale without content falls back to English", file: "fallback.json", body: `{"query":"Norway B2B e-invoicing","locale":"fr-FR","prefer":{"max_results":3}}`},
		{desc: "vague question: low scores, no summary", file: "vague.json", body: `{"query":"invoice","prefer":{"max_results":3}}`},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := http.Header{"X-Request-Id": {"req_golden"}}
			if tc.accept != "" {
				h.Set("Accept", tc.accept)
			}
			resp := post(t, srv, "application/json", tc.body, h)
			body := readBody(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			wantCT := "application/json"
			if strings.HasSuffix(tc.file, ".sse") {
				wantCT = "text/event-stream"
			}
			for k, want := range map[string]string{"Content-Type": wantCT, "Cache-Control": "no-store", "Access-Control-Allow-Origin": "*", "X-Request-Id": "req_golden"} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if tc.answer != "" {
				first := regexp.MustCompile(`"sentences":\[\{"text":"((?:[^"\\]|\\.)*)"`).FindSubmatch(body)
				if first == nil || !strings.Contains(string(first[1]), tc.answer) {
					t.Errorf("the summary's first sentence does not state %q: %s", tc.answer, body)
				}
			}
			golden(t, tc.file, normalizeTook(body))
		})
	}
}

// TestStreamMatchesJSON reads a stream one byte at a time, as a client
// behind a slow link would, and checks that its events carry exactly the
// items of the JSON answer, in order, framed by start and complete.
func TestStreamMatchesJSON(t *testing.T) {
	_, srv := serveReal(t)
	for _, q := range []string{"Peppol G2 certificates", "When is KSeF mandatory in Poland?", "no such words anywhere"} {
		t.Run(q, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"query": q})
			h := http.Header{"X-Request-Id": {"req_same"}}
			jsonResp := post(t, srv, "application/json", string(body), h)
			var answer struct {
				Meta    map[string]any    `json:"_meta"`
				Results []json.RawMessage `json:"results"`
			}
			if err := json.Unmarshal(readBody(t, jsonResp), &answer); err != nil {
				t.Fatal(err)
			}
			h.Set("Accept", "application/json;q=0.5, text/event-stream")
			streamResp := post(t, srv, "application/json", string(body), h)
			defer streamResp.Body.Close()
			events, err := sse.ReadAll(iotest.OneByteReader(streamResp.Body))
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != len(answer.Results)+2 {
				t.Fatalf("%d events for %d items", len(events), len(answer.Results))
			}
			if events[0].Name != "start" || events[len(events)-1].Name != "complete" {
				t.Fatalf("events begin with %q and end with %q", events[0].Name, events[len(events)-1].Name)
			}
			for i, item := range answer.Results {
				ev := events[i+1]
				var data struct {
					Index int             `json:"index"`
					Item  json.RawMessage `json:"item"`
				}
				if err := json.Unmarshal([]byte(ev.Data), &data); err != nil {
					t.Fatal(err)
				}
				if ev.Name != "result" || data.Index != i || !bytes.Equal(data.Item, item) {
					t.Errorf("event %d: %s %s, want result %d %s", i+1, ev.Name, ev.Data, i, item)
				}
			}
			var complete struct {
				Meta       map[string]any `json:"_meta"`
				TotalItems int            `json:"total_items"`
			}
			if err := json.Unmarshal([]byte(events[len(events)-1].Data), &complete); err != nil {
				t.Fatal(err)
			}
			if complete.TotalItems != len(answer.Results) || complete.Meta["request_id"] != "req_same" {
				t.Errorf("complete: %s", events[len(events)-1].Data)
			}
		})
	}
}

// TestStreamFlushesEachEvent holds the server before every result until the
// client has received the event before it: if any event sat in a buffer,
// the client would never see it and the test would stop at its deadline.
func TestStreamFlushesEachEvent(t *testing.T) {
	c, err := loadRealCorpus()
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan int, 64)
	e := mustNew(t, Config{SiteRoot: testSiteRoot}, withResultHook(func(ctx context.Context, index int) {
		if index == 0 {
			return // nothing sent yet but start
		}
		select {
		case got := <-received:
			if got != index {
				t.Errorf("before result %d the client had received event %d", index, got)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the client never received the event before result %d: the stream is buffered", index)
		case <-ctx.Done():
		}
	}))
	e.Use(c)
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp := post(t, srv, "application/json", `{"query":"Peppol certificate migration G3","prefer":{"streaming":true,"max_results":5}}`, nil)
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body)
	n := 0
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		// Events before an article result: start (and the summary). Tell
		// the server which item index the next result will have.
		if ev.Name == "start" {
			continue
		}
		if ev.Name == "result" {
			n++
			received <- n
		}
	}
	if n < 3 {
		t.Fatalf("only %d results streamed", n)
	}
}

// TestBadInput sends every kind of bad request, with and without
// Accept: text/event-stream: each gets the JSON error of docs/decisions.md (JSON errors) with the right
// status, and no stream begins.
func TestBadInput(t *testing.T) {
	_, srv := serveReal(t)
	big := `{"query":"x","pad":"` + strings.Repeat("a", MaxBody) + `"}`
	testCases := []struct {
		desc        string
		contentType string
		body        string
		status      int
	}{
		{desc: "missing query", body: `{}`, status: 400},
		{desc: "null query", body: `{"query":null}`, status: 400},
		{desc: "empty query", body: `{"query":""}`, status: 400},
		{desc: "whitespace-only query", body: `{"query":"  \n\t  "}`, status: 400},
		{desc: "overlong query", body: `{"query":"` + strings.Repeat("é", MaxQueryChars+1) + `"}`, status: 400},
		{desc: "number query", body: `{"query":42}`, status: 400},
		{desc: "array query", body: `{"query":["a"]}`, status: 400},
		{desc: "boolean query", body: `{"query":true}`, status: 400},
		{desc: "object query without text", body: `{"query":{}}`, status: 400},
		{desc: "object query with a number text", body: `{"query":{"text":5}}`, status: 400},
		{desc: "object query with an empty text", body: `{"query":{"text":" "}}`, status: 400},
		{desc: "invalid JSON", body: `{"query": "a"`, status: 400},
		{desc: "not JSON at all", body: `query=a`, status: 400},
		{desc: "trailing data", body: `{"query":"a"} {}`, status: 400},
		{desc: "query given twice", body: `{"query":"a","query":"b"}`, status: 400},
		{desc: "query object with text in other case", body: `{"query":{"teXt":"a"}}`, status: 400},
		{desc: "prefer.max_results given twice", body: `{"query":"a","prefer":{"max_results":2,"max_results":3}}`, status: 400},
		{desc: "empty body", body: ``, status: 400},
		{desc: "array body", body: `[]`, status: 400},
		{desc: "null body", body: `null`, status: 400},
		{desc: "locale not a string", body: `{"query":"a","locale":5}`, status: 400},
		{desc: "locale not a tag", body: `{"query":"a","locale":"english please"}`, status: 400},
		{desc: "empty locale", body: `{"query":"a","locale":""}`, status: 400},
		{desc: "streaming not a boolean", body: `{"query":"a","prefer":{"streaming":"yes"}}`, status: 400},
		{desc: "max_results 0", body: `{"query":"a","prefer":{"max_results":0}}`, status: 400},
		{desc: "max_results 51", body: `{"query":"a","prefer":{"max_results":51}}`, status: 400},
		{desc: "max_results fractional", body: `{"query":"a","prefer":{"max_results":1.5}}`, status: 400},
		{desc: "prefer not an object", body: `{"query":"a","prefer":true}`, status: 400},
		{desc: "unknown mode", body: `{"query":"a","prefer":{"mode":"poetry"}}`, status: 400},
		{desc: "mode sent empty", body: `{"query":"a","mode":""}`, status: 400},
		{desc: "prefer.mode sent empty", body: `{"query":"a","prefer":{"mode":""}}`, status: 400},
		{desc: "mode in another case than the enum", body: `{"query":"a","prefer":{"mode":"Summarize"}}`, status: 400},
		{desc: "mode with spaces", body: `{"query":"a","mode":" list"}`, status: 400},
		{desc: "mode not a string", body: `{"query":"a","prefer":{"mode":1}}`, status: 400},
		{desc: "unknown flat generate_mode", body: `{"query":"a","generate_mode":"chat"}`, status: 400},
		{desc: "prev not a list", body: `{"query":"a","prev":5}`, status: 400},
		{desc: "prev with a number", body: `{"query":"a","context":{"prev":["ok",5]}}`, status: 400},
		{desc: "context not an object", body: `{"query":"a","context":"x"}`, status: 400},
		{desc: "prev over 10 queries", body: `{"query":"a","context":{"prev":["1","2","3","4","5","6","7","8","9","10","11"]}}`, status: 400},
		{desc: "overlong query in prev", body: `{"query":"a","prev":["` + strings.Repeat("é", MaxQueryChars+1) + `"]}`, status: 400},
		{desc: "text/plain body", contentType: "text/plain", body: `{"query":"a"}`, status: 415},
		{desc: "no Content-Type", contentType: "-", body: `{"query":"a"}`, status: 415},
		{desc: "form body", contentType: "application/x-www-form-urlencoded", body: `query=a`, status: 415},
		{desc: "body over 16 KiB", body: big, status: 413},
	}
	for _, tc := range testCases {
		for _, accept := range []string{"", "text/event-stream"} {
			t.Run(tc.desc+" "+accept, func(t *testing.T) {
				ct := tc.contentType
				switch ct {
				case "":
					ct = "application/json"
				case "-":
					ct = ""
				}
				h := http.Header{}
				if accept != "" {
					h.Set("Accept", accept)
				}
				resp := post(t, srv, ct, tc.body, h)
				body := readBody(t, resp)
				checkError(t, resp, body, tc.status)
			})
		}
	}
}

// checkError checks a docs/decisions.md (JSON errors) error answer.
func checkError(t *testing.T, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q: an error must be JSON, never a stream", ct)
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("not a docs/decisions.md (JSON errors) error body: %s", body)
	}
	want := map[int]string{400: "bad_request", 405: "method_not_allowed", 413: "payload_too_large", 415: "unsupported_media_type", 503: "unavailable"}[status]
	if e.Error.Code != want {
		t.Errorf("code %q, want %q", e.Error.Code, want)
	}
}

// TestQueryLimits checks the bounds of docs/decisions.md (ask): 500 characters after trimming.
func TestQueryLimits(t *testing.T) {
	_, srv := serveReal(t)
	q := strings.Repeat("é", MaxQueryChars)
	for _, tc := range []struct {
		desc, query string
		status      int
	}{
		{desc: "500 characters", query: q, status: 200},
		{desc: "500 characters padded with spaces", query: "   " + q + "\n ", status: 200},
		{desc: "one character", query: "x", status: 200},
		{desc: "501 characters", query: q + "é", status: 400},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"query": tc.query})
			resp := post(t, srv, "application/json", string(body), nil)
			b := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
		})
	}
	t.Run("max_results 50", func(t *testing.T) {
		resp := post(t, srv, "application/json", `{"query":"peppol e-invoicing","prefer":{"max_results":50}}`, nil)
		var a struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal(readBody(t, resp), &a); err != nil {
			t.Fatal(err)
		}
		if n := len(a.Results); n <= DefaultResults || n > MaxResults+1 {
			t.Errorf("%d items for max_results 50", n)
		}
	})
	t.Run("default is 10", func(t *testing.T) {
		resp := post(t, srv, "application/json", `{"query":"peppol e-invoicing"}`, nil)
		var a struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal(readBody(t, resp), &a); err != nil {
			t.Fatal(err)
		}
		articles := 0
		for _, r := range a.Results {
			if r["@type"] == "NewsArticle" {
				articles++
			}
		}
		if articles != DefaultResults {
			t.Errorf("%d articles, want %d", articles, DefaultResults)
		}
	})
}

func TestMethods(t *testing.T) {
	_, srv := serveReal(t)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		t.Run(m, func(t *testing.T) {
			req, _ := http.NewRequest(m, srv.URL+"/ask", nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readBody(t, resp)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST, OPTIONS" {
				t.Errorf("status %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
			if m != http.MethodHead {
				checkError(t, resp, body, 405)
			}
		})
	}
	t.Run("preflight", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/ask", nil)
		req.Header.Set("Origin", "https://reader.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
		}
	})
}

// TestClientDisconnectFreesWork cancels a stream in the middle: the
// server's context ends, no further result is computed, and the handler
// returns.
func TestClientDisconnectFreesWork(t *testing.T) {
	c, err := loadRealCorpus()
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	released := make(chan error, 1)
	var calls sync.Map
	e := mustNew(t, Config{SiteRoot: testSiteRoot}, withResultHook(func(ctx context.Context, index int) {
		calls.Store(index, true)
		if index != 2 {
			return
		}
		close(reached)
		select {
		case <-ctx.Done():
			released <- nil
		case <-time.After(30 * time.Second):
			released <- errors.New("the request's context was never cancelled")
		}
	}))
	e.Use(c)
	srv := httptest.NewServer(e)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/ask", strings.NewReader(`{"query":"Peppol certificate migration G3","prefer":{"max_results":10}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := sse.NewReader(resp.Body)
	if ev, err := rd.Next(); err != nil || ev.Name != "start" {
		t.Fatalf("first event %q, %v", ev.Name, err)
	}
	<-reached
	cancel()
	resp.Body.Close()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	// The handler returns: nothing is left answering. (Waiting for it is
	// not a timing assertion; the deadline only stops a hung test.)
	deadline := time.Now().Add(30 * time.Second)
	for e.inflight.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the handler is still running after the client left")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, more := calls.Load(3); more {
		t.Error("a result was computed after the client left")
	}
}

// TestLateFailure: a failure after the stream began is an error event, then
// complete (docs/decisions.md, ask), with status 200 already sent.
func TestLateFailure(t *testing.T) {
	c, err := loadRealCorpus()
	if err != nil {
		t.Fatal(err)
	}
	// A timeout so short that the answer cannot finish: the stream has
	// begun by the time the ranking notices.
	e := mustNew(t, Config{SiteRoot: testSiteRoot, Timeout: time.Nanosecond})
	e.Use(c)
	srv := httptest.NewServer(e)
	defer srv.Close()

	resp := post(t, srv, "application/json", `{"query":"Peppol G2","prefer":{"streaming":true}}`, http.Header{"X-Request-Id": {"req_late"}})
	body := readBody(t, resp)
	events, err := sse.ReadAll(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range events {
		names = append(names, ev.Name)
	}
	if resp.StatusCode != 200 || !reflect.DeepEqual(names, []string{"start", "error", "complete"}) {
		t.Fatalf("status %d, events %q", resp.StatusCode, names)
	}
	var fault struct {
		Meta  map[string]any `json:"_meta"`
		Error struct {
			Code, Message string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(events[1].Data), &fault); err != nil {
		t.Fatal(err)
	}
	if fault.Error.Code != "unavailable" || fault.Error.Message == "" || fault.Meta["request_id"] != "req_late" {
		t.Errorf("error event: %s", events[1].Data)
	}

	// The same failure before any byte is sent is a JSON 503.
	resp = post(t, srv, "application/json", `{"query":"Peppol G2"}`, nil)
	checkError(t, resp, readBody(t, resp), 503)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
}

// TestTool checks the adapter the MCP ask tool uses: same answer as
// POST /ask, errors as *apierror.Error.
func TestTool(t *testing.T) {
	e, srv := serveReal(t)
	var asker interface {
		Ask(ctx context.Context, query, locale string) (any, error)
	} = e.Tool()
	got, err := asker.Ask(context.Background(), "When is KSeF mandatory in Poland?", "")
	if err != nil {
		t.Fatal(err)
	}
	toolJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, srv, "application/json", `{"query":"When is KSeF mandatory in Poland?"}`, nil)
	httpJSON := readBody(t, resp)
	strip := regexp.MustCompile(`"(took_ms|request_id)":[^,}]+`)
	if a, b := strip.ReplaceAll(toolJSON, nil), strip.ReplaceAll(bytes.TrimSpace(httpJSON), nil); !bytes.Equal(a, b) {
		t.Errorf("the tool's answer differs from POST /ask:\n%s\n%s", a, b)
	}
	if _, err := asker.Ask(context.Background(), "  ", ""); err == nil {
		t.Error("an empty question was answered")
	}
}

// TestMetrics: requests are counted by mode and status, and builds by
// outcome, in the registry the engine was given.
func TestMetrics(t *testing.T) {
	c, err := loadRealCorpus()
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e := mustNew(t, Config{SiteRoot: testSiteRoot, Registry: reg})
	e.Use(c)
	srv := httptest.NewServer(e)
	defer srv.Close()
	readBody(t, post(t, srv, "application/json", `{"query":"Peppol"}`, nil))
	readBody(t, post(t, srv, "application/json", `{"query":"Peppol"}`, http.Header{"Accept": {"text/event-stream"}}))
	readBody(t, post(t, srv, "application/json", `{"query":""}`, nil))
	for _, tc := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{e.metrics.requests.WithLabelValues("json", "200"), 1},
		{e.metrics.requests.WithLabelValues("stream", "200"), 1},
		{e.metrics.requests.WithLabelValues("json", "400"), 1},
		{e.metrics.builds.WithLabelValues("ok"), 1},
		{e.metrics.articles, float64(len(c.Articles))},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("%v = %v, want %v", tc.c.(prometheus.Metric).Desc(), got, tc.want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "invoicewire_ask_request_duration_seconds"); err != nil || n != 2 {
		t.Errorf("duration series: %d, %v", n, err)
	}
}

// withResultHook has fn run before each result event of a stream, with the
// answer's context and the event's index.
func withResultHook(fn func(ctx context.Context, index int)) Option {
	return func(e *Engine) { e.resultHook = fn }
}
