package ratelimitheaders

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/dunglas/httpsfv"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

// checkFields parses the rate-limit fields as a client would (httpsfv, RFC
// 9651) and returns remaining and reset.
func checkFields(t *testing.T, h http.Header, quota int64) (remaining, reset int64) {
	t.Helper()
	pol, err := httpsfv.UnmarshalList(h.Values("RateLimit-Policy"))
	if err != nil || len(pol) != 1 {
		t.Fatalf("RateLimit-Policy %q: %v", h.Values("RateLimit-Policy"), err)
	}
	it := pol[0].(httpsfv.Item)
	q, _ := it.Params.Get("q")
	w, _ := it.Params.Get("w")
	if it.Value != "default" || q != quota || w != int64(60) {
		t.Errorf("RateLimit-Policy = %q; want \"default\";q=%d;w=60", h.Get("RateLimit-Policy"), quota)
	}
	rl, err := httpsfv.UnmarshalList(h.Values("RateLimit"))
	if err != nil || len(rl) != 1 {
		t.Fatalf("RateLimit %q: %v", h.Values("RateLimit"), err)
	}
	ri := rl[0].(httpsfv.Item)
	r, _ := ri.Params.Get("r")
	tt, _ := ri.Params.Get("t")
	remaining, reset = r.(int64), tt.(int64)
	if ri.Value != "default" || reset < 1 || reset > 60 {
		t.Errorf("RateLimit = %q", h.Get("RateLimit"))
	}
	if h.Get("RateLimit-Limit") != strconv.FormatInt(quota, 10) ||
		h.Get("RateLimit-Remaining") != strconv.FormatInt(remaining, 10) ||
		h.Get("RateLimit-Reset") != strconv.FormatInt(reset, 10) {
		t.Errorf("legacy fields %q %q %q disagree with RateLimit %q", h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset"), h.Get("RateLimit"))
	}
	return remaining, reset
}

func TestHeadersAnd429(t *testing.T) {
	// 45 s into a window: the budget of 3 lasts the whole table, wherever
	// the wall clock is in its minute.
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(15 * time.Second))
	pc, err := PoolLimitersWithClock(Handler{Quota: 3, Window: caddy.Duration(time.Minute), Redis: srv.URL()}, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Release)
	b, _ := json.Marshal(token.Record{ClientID: "cli_a", ExpiresAt: time.Now().Add(time.Hour)})
	srv.Client().Set(context.Background(), token.Key("tok-a"), b, time.Hour)
	edge := edgetest.Start(t, fmt.Sprintf(`
	rate_limit_headers {
		quota 3
		window 60
		redis %s
	}
	error /fail "nope" 404
	respond "ok"
	handle_errors {
		json_errors
	}`, srv.URL()))
	if !pc.Used() {
		t.Fatal("the handler did not take the limiters with the test's clock")
	}

	testCases := []struct {
		desc      string
		method    string // GET when empty
		path      string
		header    []string
		status    int
		remaining int64
	}{
		{desc: "first request", path: "/", status: 200, remaining: 2},
		{desc: "errors carry the fields", path: "/fail", status: 404, remaining: 1},
		{desc: "last of the budget", path: "/", status: 200, remaining: 0},
		{desc: "over the budget", path: "/", status: 429, remaining: 0},
		{desc: "a token adds no budget to its address", path: "/", header: []string{"Authorization: Bearer tok-a"}, status: 429, remaining: 0},
		{desc: "an invalid token counts against the IP", path: "/", header: []string{"Authorization: Bearer bogus"}, status: 429, remaining: 0},
		{desc: "a CORS preflight is never refused", method: "OPTIONS", path: "/", header: []string{"Origin: https://app.example", "Access-Control-Request-Method: GET"}, status: 200, remaining: 0},
		{desc: "an OPTIONS that is no preflight is", method: "OPTIONS", path: "/", status: 429, remaining: 0},
		{desc: "a target over max_target is a 414, over the budget too", path: "/?" + strings.Repeat("x", DefaultMaxTarget), status: 414, remaining: 0},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			method := test.method
			if method == "" {
				method = "GET"
			}
			resp, body := edge.Do(t, method, test.path, "", test.header...)
			if resp.StatusCode != test.status {
				t.Fatalf("status %d; want %d (%s)", resp.StatusCode, test.status, body)
			}
			remaining, reset := checkFields(t, resp.Header, 3)
			if remaining != test.remaining || reset != 45 {
				t.Errorf("remaining %d, reset %d; want %d, 45", remaining, reset, test.remaining)
			}
			if test.status == 429 {
				ra, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
				if err != nil || ra < reset {
					t.Errorf("Retry-After %q; want delay-seconds ≥ reset %d", resp.Header.Get("Retry-After"), reset)
				}
				var eb struct {
					Error struct{ Code string } `json:"error"`
				}
				if json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Code != "rate_limited" {
					t.Errorf("429 body %q; want rate_limited JSON", body)
				}
				if resp.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("429 Cache-Control %q; want no-store", resp.Header.Get("Cache-Control"))
				}
			}
		})
	}
	// The next window brings a fresh budget.
	clock.add(time.Minute)
	resp, body := edge.Do(t, "GET", "/", "")
	if resp.StatusCode != 200 {
		t.Fatalf("next window: status %d; want 200 (%s)", resp.StatusCode, body)
	}
	if remaining, reset := checkFields(t, resp.Header, 3); remaining != 2 || reset != 45 {
		t.Errorf("next window: remaining %d, reset %d; want 2, 45", remaining, reset)
	}
}

func TestRedisDownStillServes(t *testing.T) {
	srv := redistest.New(t)
	edge := edgetest.Start(t, fmt.Sprintf(`
	rate_limit_headers {
		quota 1000
		redis %s
		sync_interval 20ms
	}
	respond "ok"`, srv.URL()))
	srv.Stop()
	for i := range 20 {
		resp, _ := edge.Do(t, "GET", "/", "", "Authorization: Bearer whatever")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d with Redis down: status %d", i, resp.StatusCode)
		}
		checkFields(t, resp.Header, 1000)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSerialisationMatchesHTTPSFV(t *testing.T) {
	// The RateLimit value is built by appending Integers to the
	// httpsfv-serialised policy name; it must equal httpsfv's own output.
	b, err := newBudget("default", 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ r, t int64 }{{0, 1}, {999, 60}, {1 << 40, 86400}} {
		it := httpsfv.NewItem("default")
		it.Params.Add("r", c.r)
		it.Params.Add("t", c.t)
		want, err := httpsfv.Marshal(httpsfv.List{it})
		if err != nil {
			t.Fatal(err)
		}
		got := b.itemPrefix + ";r=" + strconv.FormatInt(c.r, 10) + ";t=" + strconv.FormatInt(c.t, 10)
		if got != want {
			t.Errorf("got %q; httpsfv %q", got, want)
		}
	}
}
