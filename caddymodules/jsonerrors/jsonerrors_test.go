package jsonerrors

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	"github.com/invoicewire/invoicewire/internal/apierror"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

// closedPort is a loopback port nothing listens on: a dead origin.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Hint      string `json:"hint"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

func TestEdgeErrorsAreJSON(t *testing.T) {
	edge := edgetest.Start(t, fmt.Sprintf(`
	error /boom "dial tcp 10.1.2.3:8081: secret internal detail" 500
	error /teapot "no" 418
	@down path /down*
	reverse_proxy @down %s
	handle_errors {
		json_errors
	}`, closedPort(t)))

	testCases := []struct {
		desc     string
		method   string
		path     string
		header   []string
		status   int
		code     string
		noBody   bool
		wantID   string
		idNotSet bool
	}{
		{desc: "server fault hides its cause", method: "GET", path: "/boom", status: 500, code: "internal"},
		{desc: "origin down is unavailable, not HTML", method: "GET", path: "/down/api/v1/articles", status: 503, code: "unavailable"},
		{desc: "origin down on POST", method: "POST", path: "/down/ask", status: 503, code: "unavailable"},
		{desc: "other 4xx is bad_request", method: "GET", path: "/teapot", status: 418, code: "bad_request"},
		{desc: "HEAD gets no body", method: "HEAD", path: "/boom", status: 500, noBody: true},
		{desc: "request id echoed", method: "GET", path: "/boom", header: []string{"X-Request-Id: abc-123"}, status: 500, code: "internal", wantID: "abc-123"},
		{desc: "request id with a space replaced", method: "GET", path: "/boom", header: []string{`X-Request-Id: a b`}, status: 500, code: "internal", idNotSet: true},
		{desc: "request id over 128 characters replaced", method: "GET", path: "/boom", header: []string{"X-Request-Id: " + strings.Repeat("x", 129)}, status: 500, code: "internal", idNotSet: true},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			resp, body := edge.Do(t, test.method, test.path, "", test.header...)
			if resp.StatusCode != test.status {
				t.Fatalf("status %d; want %d (body %q)", resp.StatusCode, test.status, body)
			}
			for k, want := range map[string]string{
				"Content-Type":                  "application/json",
				"Cache-Control":                 "no-store",
				"Access-Control-Allow-Origin":   "*",
				"Access-Control-Expose-Headers": DefaultExposeHeaders,
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s = %q; want %q", k, got, want)
				}
			}
			if test.status == 503 && resp.Header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
			if test.noBody {
				if body != "" {
					t.Errorf("HEAD body %q", body)
				}
				return
			}
			var eb errorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("body is not JSON: %q", body)
			}
			if eb.Error.Code != test.code || eb.Error.Message == "" {
				t.Errorf("error %+v; want code %s and a message", eb.Error, test.code)
			}
			if strings.Contains(body, "secret") || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "dial") {
				t.Errorf("body leaks internal detail: %s", body)
			}
			id := resp.Header.Get("X-Request-Id")
			if id == "" || eb.Error.RequestID != "" {
				t.Errorf("X-Request-Id %q, body request_id %q; want the header only (openapi's Error has no such member)", id, eb.Error.RequestID)
			}
			if test.status >= 500 && !strings.Contains(eb.Error.Hint, id) {
				t.Errorf("hint %q does not name the request id %q", eb.Error.Hint, id)
			}
			if test.wantID != "" && id != test.wantID {
				t.Errorf("request id %q; want %q", id, test.wantID)
			}
			if test.idNotSet && strings.Contains(id, `"`) {
				t.Errorf("unsafe request id echoed: %q", id)
			}
		})
	}
}

// TestEmptyHostSaysSo: Caddy refuses an HTTP/1.1 request with an empty Host
// before any handler; the JSON 400 names that as the cause.
func TestEmptyHostSaysSo(t *testing.T) {
	edge := edgetest.Start(t, `
	respond "ok"
	handle_errors {
		json_errors
	}`)
	conn, err := net.Dial("tcp", strings.TrimPrefix(edge.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb errorBody
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || resp.StatusCode != 400 || eb.Error.Code != "bad_request" || !strings.Contains(eb.Error.Message, "Host") {
		t.Fatalf("%d %+v (%v); want a 400 bad_request naming Host", resp.StatusCode, eb.Error, err)
	}
}

// TestAPIErrorPassesThrough checks that an *apierror.Error returned by a
// module (wrapped in caddyhttp.Error, as they all do) keeps its code,
// message, hint and headers.
func TestAPIErrorPassesThrough(t *testing.T) {
	h := &Handler{}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	ae := apierror.New(http.StatusTooManyRequests, "Slow down.", "Wait.")
	ae.Header = http.Header{"Retry-After": {"7"}}
	req := httptest.NewRequest("GET", "/x", nil)
	repl := caddy.NewReplacer()
	reqCtx := context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl)
	reqCtx = context.WithValue(reqCtx, caddyhttp.ErrorCtxKey, error(caddyhttp.Error(http.StatusTooManyRequests, ae)))
	req = req.WithContext(reqCtx)
	w := httptest.NewRecorder()
	w.Header().Set("ETag", `"stale"`) // left by an earlier handler
	w.Header().Set("Ratelimit-Remaining", "0")
	if err := h.ServeHTTP(w, req, nil); err != nil {
		t.Fatal(err)
	}
	if w.Code != 429 || w.Header().Get("Retry-After") != "7" {
		t.Errorf("status %d Retry-After %q; want 429 and 7", w.Code, w.Header().Get("Retry-After"))
	}
	if w.Header().Get("ETag") != "" || w.Header().Get("Ratelimit-Remaining") != "0" {
		t.Errorf("ETag %q should be dropped and RateLimit-Remaining %q kept", w.Header().Get("ETag"), w.Header().Get("Ratelimit-Remaining"))
	}
	var eb errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil || eb.Error.Code != "rate_limited" || eb.Error.Message != "Slow down." || eb.Error.Hint != "Wait." {
		t.Errorf("body %s (%v)", w.Body.String(), err)
	}
	if !errors.Is(error(ae), ae) {
		t.Fatal("unreachable")
	}
}

// TestOriginHeaderLimitBecomesJSON checks the Caddyfile recipe for the
// origin's own plain-text 431 (net/http answers it before any handler).
func TestOriginHeaderLimitBecomesJSON(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	up.Config.MaxHeaderBytes = 1024
	up.Start()
	defer up.Close()
	edge := edgetest.Start(t, fmt.Sprintf(`
	reverse_proxy %s {
		@headersTooLarge status 431
		handle_response @headersTooLarge {
			error 431
		}
	}
	handle_errors {
		json_errors
	}`, strings.TrimPrefix(up.URL, "http://")))
	resp, body := edge.Do(t, "GET", "/", "", "X-Big: "+strings.Repeat("b", 20000))
	var eb errorBody
	if resp.StatusCode != 431 || json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Code != "bad_request" {
		t.Errorf("status %d body %q; want 431 with a JSON bad_request", resp.StatusCode, body)
	}
	if resp, _ := edge.Do(t, "GET", "/", ""); resp.StatusCode != 200 {
		t.Errorf("small request: %d", resp.StatusCode)
	}
}

func TestRequestIDMember(t *testing.T) {
	edge := edgetest.Start(t, `
	error "no" 404
	handle_errors {
		json_errors {
			request_id_member
		}
	}`)
	resp, body := edge.Do(t, "GET", "/", "", "X-Request-Id: req-7")
	var eb errorBody
	if json.Unmarshal([]byte(body), &eb) != nil || eb.Error.RequestID != "req-7" || resp.Header.Get("X-Request-Id") != "req-7" {
		t.Errorf("body %s header %q; want request_id req-7 in both", body, resp.Header.Get("X-Request-Id"))
	}
}

// TestErrorResponsesLogged checks that every 5xx the edge writes is logged
// at error level with what finds it again (the request id its hint quotes,
// method, path without the query, status) and the underlying error the
// body hides, and that a 4xx is logged at debug level only.
func TestErrorResponsesLogged(t *testing.T) {
	h := &Handler{}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	h.logger = zap.New(core)
	serve := func(method, target string, err error, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		for _, kv := range header {
			k, v, _ := strings.Cut(kv, ": ")
			req.Header.Set(k, v)
		}
		reqCtx := context.WithValue(req.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer())
		reqCtx = context.WithValue(reqCtx, caddyhttp.ErrorCtxKey, err)
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, req.WithContext(reqCtx), nil); err != nil {
			t.Fatal(err)
		}
		return w
	}
	dial := errors.New("dial tcp 10.1.2.3:8081: connect: connection refused")
	w := serve("GET", "/api/v1/articles?token=secret", caddyhttp.Error(http.StatusBadGateway, dial), "X-Request-Id: d1b4-report-me")
	if w.Code != 503 {
		t.Fatalf("status %d, want 503", w.Code)
	}
	serve("GET", "/nope", caddyhttp.Error(http.StatusNotFound, errors.New("no route")))

	entries := logs.All()
	if len(entries) != 2 {
		t.Fatalf("%d log entries, want 2: %v", len(entries), entries)
	}
	e, f := entries[0], entries[0].ContextMap()
	if e.Level != zapcore.ErrorLevel || f["request_id"] != "d1b4-report-me" || f["method"] != "GET" ||
		f["path"] != "/api/v1/articles" || f["status"] != int64(503) || !strings.Contains(fmt.Sprint(f["error"]), "10.1.2.3:8081") {
		t.Errorf("5xx entry %v %v, want it at error level with id, method, path, status and cause", e.Level, f)
	}
	if strings.Contains(fmt.Sprint(f), "secret") {
		t.Errorf("the entry carries the query string: %v", f)
	}
	if e := entries[1]; e.Level != zapcore.DebugLevel || e.ContextMap()["status"] != int64(404) {
		t.Errorf("4xx entry %v %v, want it at debug level", e.Level, e.ContextMap())
	}
}
