package idempotency

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/origin/respond"
)

func request(key, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/webhooks", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set(Header, key)
	}
	return r
}

func statusOf(resp *respond.Response, err error) int {
	if err != nil {
		return apierror.As(err).Status
	}
	return resp.Status
}

// TestWrap covers docs/decisions.md (Idempotency-Key) against a real Redis: replay with the stored answer,
// another body → 422, a request still in flight → 409, bad keys → 400,
// failures not stored.
func TestWrap(t *testing.T) {
	srv := redistest.New(t)
	s := NewStore(srv.Client(), nil)
	var calls atomic.Int32
	created := func(r *http.Request) (*respond.Response, error) {
		n := calls.Add(1)
		resp, err := respond.JSON(map[string]int32{"n": n})
		if err != nil {
			return nil, err
		}
		resp.Status = http.StatusCreated
		resp.Header = http.Header{"Location": {"/x"}}
		return resp, nil
	}
	h := s.Wrap(Options{Route: "test"}, created)

	t.Run("replay", func(t *testing.T) {
		first, err := h(request("k1", `{"a":1}`))
		if err != nil || first.Status != 201 {
			t.Fatalf("first: %v %v", first, err)
		}
		again, err := h(request("k1", `{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if again.Status != 201 || string(again.Body) != string(first.Body) || again.Header.Get(ReplayedHeader) != "true" || again.Header.Get("Location") != "/x" {
			t.Errorf("replay = %d %s %v, want the first answer replayed", again.Status, again.Body, again.Header)
		}
		if first.Header.Get(ReplayedHeader) != "" {
			t.Error("the first answer is marked replayed")
		}
	})
	t.Run("quoted key is the same key", func(t *testing.T) {
		resp, err := h(request(`"k1"`, `{"a":1}`))
		if err != nil || resp.Header.Get(ReplayedHeader) != "true" {
			t.Errorf("a structured-field string key did not replay: %v %v", resp, err)
		}
	})
	// The fingerprint covers the body, the query and the media type, and
	// the 422 says so whichever differed: it used to blame the body when
	// only ?test=true was added.
	for _, tc := range []struct {
		desc string
		edit func(r *http.Request)
	}{
		{desc: "other body", edit: func(r *http.Request) { *r = *request("k1", `{"a":2}`) }},
		{desc: "other query", edit: func(r *http.Request) { r.URL.RawQuery = "test=true" }},
		{desc: "other media type", edit: func(r *http.Request) { r.Header.Set("Content-Type", "application/merge-patch+json") }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := request("k1", `{"a":1}`)
			tc.edit(r)
			_, err := h(r)
			e := apierror.As(err)
			if err == nil || e.Status != 422 {
				t.Fatalf("answer %v, want 422", err)
			}
			for _, part := range []string{"body", "query", "Content-Type"} {
				if !strings.Contains(e.Message, part) {
					t.Errorf("message %q does not name the %s among what may differ", e.Message, part)
				}
			}
		})
	}
	t.Run("key length", func(t *testing.T) {
		if got := statusOf(h(request(strings.Repeat("k", 256), `{}`))); got != 400 {
			t.Errorf("256-character key: status %d, want 400", got)
		}
		if got := statusOf(h(request(strings.Repeat("k", 255), `{}`))); got != 201 {
			t.Errorf("255-character key: status %d, want 201", got)
		}
		r := request("", `{}`)
		r.Header.Set(Header, "")
		if got := statusOf(h(r)); got != 400 {
			t.Errorf("empty key: status %d, want 400", got)
		}
		r = request("a", `{}`)
		r.Header.Add(Header, "b")
		if got := statusOf(h(r)); got != 400 {
			t.Errorf("two keys: status %d, want 400", got)
		}
	})
	t.Run("no key", func(t *testing.T) {
		before := calls.Load()
		h(request("", `{}`))
		h(request("", `{}`))
		if calls.Load()-before != 2 {
			t.Error("requests without a key were not both applied")
		}
	})
	// A refused or failed request leaves nothing behind, whether the
	// handler returns the error or an answer with an error status (none of
	// today's wrapped handlers does the latter, so only this test reaches
	// that branch): a retry with the same key runs the handler again.
	for _, tc := range []struct {
		desc string
		fail func() (*respond.Response, error)
		want int
	}{
		{desc: "an error is not stored", fail: func() (*respond.Response, error) { return nil, apierror.BadRequest("no", "") }, want: 400},
		{desc: "a 4xx answer is not stored", fail: func() (*respond.Response, error) {
			return &respond.Response{Status: http.StatusConflict, ContentType: "application/json", Body: []byte(`{}`), CacheControl: respond.NoStore}, nil
		}, want: 409},
		{desc: "a 5xx answer is not stored", fail: func() (*respond.Response, error) {
			return &respond.Response{Status: http.StatusServiceUnavailable, ContentType: "application/json", Body: []byte(`{}`), CacheControl: respond.NoStore}, nil
		}, want: 503},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			route, key := "fail "+tc.desc, "k2"
			fail := true
			hf := s.Wrap(Options{Route: route}, func(r *http.Request) (*respond.Response, error) {
				if fail {
					return tc.fail()
				}
				return respond.JSON("ok")
			})
			if got := statusOf(hf(request(key, `{}`))); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
			// The record's key is the one Wrap computes, client included
			// (the request's address here): a key without the client
			// would name no record, and the check would always pass.
			client, err := s.clientOf(request(key, `{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := srv.Client().Exists(context.Background(), redisKey(client, route, key)).Val(); n != 0 {
				t.Error("a refused request left an idempotency record")
			}
			fail = false
			resp, err := hf(request(key, `{}`))
			if got := statusOf(resp, err); got != 200 {
				t.Fatalf("retry after a %d: status %d, want 200", tc.want, got)
			}
			if resp.Header.Get(ReplayedHeader) != "" {
				t.Errorf("retry after a %d was replayed", tc.want)
			}
		})
	}
	t.Run("clients are separate", func(t *testing.T) {
		client := "a"
		hc := s.Wrap(Options{Route: "clients", Client: func(*http.Request) string { return client }}, created)
		first, _ := hc(request("k3", `{}`))
		client = "b"
		second, _ := hc(request("k3", `{}`))
		if second.Header.Get(ReplayedHeader) == "true" || string(first.Body) == string(second.Body) {
			t.Error("another client's request with the same key was replayed")
		}
	})
}

// TestInFlight holds the first request inside its handler while a second
// one with the same key arrives: 409, then the replay once the first is done.
func TestInFlight(t *testing.T) {
	srv := redistest.New(t)
	s := NewStore(srv.Client(), nil)
	entered, release := make(chan struct{}), make(chan struct{})
	h := s.Wrap(Options{Route: "slow"}, func(r *http.Request) (*respond.Response, error) {
		close(entered)
		<-release
		return respond.JSON("done")
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h(request("k", `{}`)) }()
	<-entered
	resp, err := h(request("k", `{}`))
	if got := statusOf(resp, err); got != 409 {
		t.Errorf("in flight: status %d, want 409", got)
	}
	if err != nil && apierror.As(err).Header.Get("Retry-After") == "" {
		t.Error("the 409 has no Retry-After")
	}
	close(release)
	wg.Wait()
	resp, err = h(request("k", `{}`))
	if err != nil || resp.Header.Get(ReplayedHeader) != "true" {
		t.Errorf("after the first finished: %v %v, want a replay", resp, err)
	}
}

// TestRecordsSurviveARedisCrash: a stored answer is replayed after Redis is
// killed (SIGKILL) and restarted: one server, or every master of a cluster,
// over which the records of different keys spread.
func TestRecordsSurviveARedisCrash(t *testing.T) {
	srv := redistest.New(t)
	s := NewStore(srv.Client(), nil)
	var calls atomic.Int32
	h := s.Wrap(Options{Route: "crash"}, func(r *http.Request) (*respond.Response, error) {
		return respond.JSON(map[string]int32{"n": calls.Add(1)})
	})
	keys := []string{"a", "b", "c", "d", "e", "f"}
	first := map[string]string{}
	for _, k := range keys {
		resp, err := h(request(k, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		first[k] = string(resp.Body)
	}
	// appendfsync everysec: wait for the fsync before the crash (docs/architecture.md).
	time.Sleep(1100 * time.Millisecond)
	srv.Restart(true)
	for _, k := range keys {
		resp, err := h(request(k, `{}`))
		if err != nil || resp.Header.Get(ReplayedHeader) != "true" || string(resp.Body) != first[k] {
			t.Errorf("key %s after the crash: %v %v, want the replay of %s", k, resp, err, first[k])
		}
	}
	if n := calls.Load(); n != int32(len(keys)) {
		t.Errorf("the handler ran %d times, want %d", n, len(keys))
	}
}

// TestScopeByLiveTokenOnly: a bearer token scopes a record only when it is
// a live access token (looked up in a real Redis); any other bearer string
// (never issued, expired) leaves the request scoped by its address, so
// clients at two addresses that send the same placeholder, key and body do
// not get each other's answer.
func TestScopeByLiveTokenOnly(t *testing.T) {
	srv := redistest.New(t)
	rdb := srv.Client()
	s := NewStore(rdb, nil)
	ctx := context.Background()
	live, _, err := token.Issue(ctx, rdb, "cli_live", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	expired, _, err := token.Issue(ctx, rdb, "cli_expired", time.Hour, time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	h := s.Wrap(Options{Route: "register"}, func(r *http.Request) (*respond.Response, error) {
		resp, err := respond.JSON(map[string]int32{"n": calls.Add(1)})
		if err != nil {
			return nil, err
		}
		resp.Status = http.StatusCreated
		return resp, nil
	})
	for i, tc := range []struct {
		desc          string
		authorization string
		first, second string // the two requests' addresses
		replayed      bool   // whether the second gets the first's answer
	}{
		{desc: "a bearer string never issued, two addresses", authorization: "Bearer undefined", first: "192.0.2.1", second: "198.51.100.1"},
		{desc: "a bearer string never issued, one address", authorization: "Bearer undefined", first: "192.0.2.1", second: "192.0.2.1", replayed: true},
		{desc: "an expired token, two addresses", authorization: "Bearer " + expired, first: "192.0.2.1", second: "198.51.100.1"},
		{desc: "a live token, two addresses", authorization: "Bearer " + live, first: "192.0.2.1", second: "198.51.100.1", replayed: true},
		{desc: "no token, two addresses", first: "192.0.2.1", second: "198.51.100.1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			key := "scope-" + strconv.Itoa(i)
			send := func(addr string) *respond.Response {
				t.Helper()
				r := request(key, `{"client_name":"a"}`)
				r.Header.Set(ClientAddressHeader, addr)
				if tc.authorization != "" {
					r.Header.Set("Authorization", tc.authorization)
				}
				resp, err := h(r)
				if err != nil || resp.Status != 201 {
					t.Fatalf("from %s: %v %v", addr, resp, err)
				}
				return resp
			}
			first, second := send(tc.first), send(tc.second)
			got := second.Header.Get(ReplayedHeader) == "true" && string(second.Body) == string(first.Body)
			if got != tc.replayed {
				t.Errorf("second request replayed the first's answer: %v; want %v", got, tc.replayed)
			}
		})
	}
}
