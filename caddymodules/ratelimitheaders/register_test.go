package ratelimitheaders

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dunglas/httpsfv"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

// newRegisterHandler provisions the real handler, its counts shared
// through srv, its limiters reading clock and never syncing by themselves
// (the tests call sync). maxClients tells edges apart: handlers configured
// alike share their limiters through the usage pool, as one edge process
// does, and a different max_clients gives a handler limiters of its own
// on the same Redis keys, as another edge process has.
func newRegisterHandler(t *testing.T, srv redistest.Backend, clock *testClock, quota int64, maxClients int) *Handler {
	t.Helper()
	h := Handler{
		Quota: 1000, Window: caddy.Duration(time.Minute),
		CountersRedis: srv.URL(), SyncInterval: caddy.Duration(time.Hour), MaxClients: maxClients,
		RegisterQuota: quota, RegisterWindow: caddy.Duration(time.Hour),
	}
	pc, err := PoolLimitersWithClock(h, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Release)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cleanup() })
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	if !pc.Used() {
		t.Fatal("the handler did not take the limiters with the test's clock")
	}
	return &h
}

// answer is what the handlers behind the limiter (the origin) answer a
// registration with.
type answer struct {
	status   int
	replayed bool // Idempotency-Replayed: true
	asError  bool // returned as a handler error, for handle_errors to write
	bodyOnly bool // a body without WriteHeader (net/http's implicit 200)
	// during runs before the answer is written, while the request is in
	// flight.
	during func()
}

func (a answer) handler(calls *atomic.Int64) caddyhttp.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		calls.Add(1)
		if a.during != nil {
			a.during()
		}
		if a.asError {
			return caddyhttp.Error(a.status, errors.New("upstream failed"))
		}
		w.Header().Set("Content-Type", "application/json")
		if a.replayed {
			w.Header().Set("Idempotency-Replayed", "true")
		}
		if !a.bodyOnly {
			w.WriteHeader(a.status)
		}
		_, err := w.Write([]byte(`{}`))
		return err
	}
}

// result is what the client got.
type result struct {
	status int
	// register is the register item's r in RateLimit; legacy is
	// RateLimit-Remaining.
	register, legacy string
	nextCalled       bool
	// message is the edge's own refusal's message, "" for an answer
	// written by the handlers behind it.
	message string
}

// register sends a registration from addr through h to a.
func register(t *testing.T, h *Handler, addr string, a answer) result {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/v1/agent-auth/register", strings.NewReader(`{"client_name":"t"}`))
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: addr}))
	rec := httptest.NewRecorder()
	var calls atomic.Int64
	err := h.ServeHTTP(rec, r, a.handler(&calls))
	// The fields as sent: a recorder keeps them as they stood when the
	// status was written; after an error, as handle_errors would find
	// them.
	resp := rec.Result()
	res := result{status: resp.StatusCode, legacy: resp.Header.Get("RateLimit-Remaining"), nextCalled: calls.Load() > 0}
	if err != nil {
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) {
			t.Fatalf("error %v is no handler error", err)
		}
		res.status = he.StatusCode
		var ae *apierror.Error
		if errors.As(err, &ae) {
			res.message = ae.Message
		}
	}
	rl, perr := httpsfv.UnmarshalList(resp.Header.Values("RateLimit"))
	if perr != nil || len(rl) != 2 {
		t.Fatalf("RateLimit %q: want the default and register items (%v)", resp.Header.Values("RateLimit"), perr)
	}
	it := rl[1].(httpsfv.Item)
	rem, _ := it.Params.Get("r")
	if it.Value != "register" {
		t.Fatalf("RateLimit %q: second item is not register", resp.Header.Values("RateLimit"))
	}
	res.register = fmtInt(rem.(int64))
	return res
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// spent is the register budget's count for addr at edge h: this edge's
// own, net of refunds, and what it knows of the others'.
func spent(h *Handler, addr string) int64 {
	key := hashOf("r:ip:" + addr)
	s := &h.regLim.shards[key%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _ := s.counters.get(key)
	return c.total()
}

// step is one registration and what its answer must show.
type step struct {
	answer
	status   int
	register string // the register budget's r on the answer
	called   bool   // whether it reached the origin
}

// TestRegisterBudgetCountsClientsCreated checks that the register budget
// is spent by registrations that created a client only: replays and
// refusals give their unit back, on their own answer's fields already,
// while the edge's own 429 keeps counting as it always has.
func TestRegisterBudgetCountsClientsCreated(t *testing.T) {
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(10 * time.Second))
	const quota = 3
	h := newRegisterHandler(t, srv, clock, quota, 1000)

	created := answer{status: 201}
	replay := answer{status: 201, replayed: true}
	testCases := []struct {
		desc  string
		steps func(addr string) []step
		spent int64
	}{
		{desc: "a 201 costs one", spent: 1, steps: func(string) []step {
			return []step{{answer: created, status: 201, register: "2", called: true}}
		}},
		{desc: "three replays under one key cost one unit", spent: 1, steps: func(string) []step {
			return []step{
				{answer: created, status: 201, register: "2", called: true},
				{answer: replay, status: 201, register: "2", called: true},
				{answer: replay, status: 201, register: "2", called: true},
				{answer: replay, status: 201, register: "2", called: true},
			}
		}},
		{desc: "a 400 costs none", spent: 0, steps: func(string) []step {
			return []step{
				{answer: answer{status: 400}, status: 400, register: "3", called: true},
				{answer: answer{status: 400}, status: 400, register: "3", called: true},
			}
		}},
		{desc: "a 409 while the first request under the key runs costs none", spent: 1, steps: func(addr string) []step {
			first := created
			first.during = func() {
				// The first request holds a unit (r=2); the retry takes
				// one (r=1 when counted) and gives it back.
				if got := register(t, h, addr, answer{status: 409}); got.status != 409 || got.register != "2" {
					t.Errorf("retry while the first runs: %+v; want 409 with register r=2", got)
				}
			}
			return []step{{answer: first, status: 201, register: "2", called: true}}
		}},
		{desc: "a 422 (same key, another body) costs none", spent: 0, steps: func(string) []step {
			return []step{{answer: answer{status: 422}, status: 422, register: "3", called: true}}
		}},
		{desc: "a 5xx the handlers return as an error costs none", spent: 0, steps: func(string) []step {
			return []step{{answer: answer{status: 502, asError: true}, status: 502, register: "3", called: true}}
		}},
		{desc: "an origin's own 429 costs none", spent: 0, steps: func(string) []step {
			return []step{{answer: answer{status: 429}, status: 429, register: "3", called: true}}
		}},
		{desc: "a replay with a body only (implicit 200) costs none", spent: 1, steps: func(string) []step {
			return []step{
				{answer: created, status: 201, register: "2", called: true},
				{answer: answer{status: 200, replayed: true, bodyOnly: true}, status: 200, register: "2", called: true},
			}
		}},
		{desc: "the edge's own 429 counts, and a refund meanwhile never reopens the budget", spent: 5, steps: func(addr string) []step {
			last := answer{status: 400}
			last.during = func() {
				// Budget spent by the two clients and this request: the
				// edge refuses, and that refusal counts.
				if got := register(t, h, addr, created); got.status != 429 || got.nextCalled || got.register != "0" {
					t.Errorf("over the budget: %+v; want the edge's 429 with register r=0", got)
				}
			}
			return []step{
				{answer: created, status: 201, register: "2", called: true},
				{answer: created, status: 201, register: "1", called: true},
				// Given back, but the edge's 429 above still counts: r=0.
				{answer: last, status: 400, register: "0", called: true},
				{answer: created, status: 429, register: "0"},
				{answer: answer{status: 400}, status: 429, register: "0"},
			}
		}},
	}
	for i, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			addr := "192.0.2." + itoa(int64(i+1))
			for j, s := range tc.steps(addr) {
				got := register(t, h, addr, s.answer)
				if got.status != s.status || got.register != s.register || got.nextCalled != s.called {
					t.Errorf("request %d: status %d, register r=%s, reached the origin %v; want %d, r=%s, %v",
						j+1, got.status, got.register, got.nextCalled, s.status, s.register, s.called)
				}
				// The register budget is the tighter: the legacy fields
				// follow it, after the refund too.
				if got.legacy != got.register {
					t.Errorf("request %d: RateLimit-Remaining %s; want the register budget's %s", j+1, got.legacy, got.register)
				}
			}
			if got := spent(h, addr); got != tc.spent {
				t.Errorf("register budget spent %d; want %d", got, tc.spent)
			}
		})
	}
}

// TestRegisterRefusalMessage checks that the register budget's 429 gives
// its window in seconds, as the ordinary 429 does, not as a Go duration.
func TestRegisterRefusalMessage(t *testing.T) {
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(10 * time.Second))
	h := newRegisterHandler(t, srv, clock, 1, 1000)
	const addr = "192.0.2.77"
	if got := register(t, h, addr, answer{status: 201}); got.status != 201 {
		t.Fatalf("first registration: %+v; want 201", got)
	}
	got := register(t, h, addr, answer{status: 201})
	const want = "Too many registrations from this address: 1 per 3600 seconds."
	if got.status != 429 || got.message != want {
		t.Errorf("over the budget: status %d, message %q; want 429, %q", got.status, got.message, want)
	}
}

// TestRegisterConcurrent sends 40 registrations at once against a quota of
// 20: each is counted before it is passed on, so no more than the quota
// are ever at the origin at once, and no more than the quota create a
// client.
func TestRegisterConcurrent(t *testing.T) {
	const quota, n = 20, 40
	testCases := []struct {
		desc        string
		status      int
		wantCreated int
	}{
		{desc: "40 creations at once admit the quota", status: 201, wantCreated: quota},
		{desc: "40 refusals at once never put more than the quota at the origin", status: 400},
	}
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(10 * time.Second))
	h := newRegisterHandler(t, srv, clock, quota, 1000)
	for i, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			addr := "198.51.100." + itoa(int64(i+1))
			var inFlight, most atomic.Int64
			a := answer{status: tc.status, during: func() {
				cur := inFlight.Add(1)
				for {
					m := most.Load()
					if cur <= m || most.CompareAndSwap(m, cur) {
						break
					}
				}
				time.Sleep(50 * time.Millisecond)
				inFlight.Add(-1)
			}}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var created, refused atomic.Int64
			for range n {
				wg.Go(func() {
					<-start
					switch got := register(t, h, addr, a); got.status {
					case 201:
						created.Add(1)
					case 429:
						refused.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			if got := most.Load(); got > quota {
				t.Errorf("%d registrations at the origin at once; want at most %d", got, quota)
			}
			if got := created.Load(); got != int64(tc.wantCreated) {
				t.Errorf("%d clients created; want %d", got, tc.wantCreated)
			}
			// What is left counted: the clients created and the edge's
			// own 429s, nothing the origin refused.
			if got, want := spent(h, addr), created.Load()+refused.Load(); got != want {
				t.Errorf("register budget spent %d; want %d (created + refused at the edge)", got, want)
			}
		})
	}
}

// TestRegisterRefundsAcrossSync runs two edges on one Redis and gives
// units back while their counts are being pushed: the shared total is
// exactly the clients created, and each edge's fields show it once synced.
func TestRegisterRefundsAcrossSync(t *testing.T) {
	ctx := context.Background()
	testCases := []struct {
		desc  string
		quota int64
		run   func(t *testing.T, a, b *Handler, sharedCount func() int64)
	}{
		{desc: "refunds of units pushed while their request ran reach the other edge", quota: 20, run: func(t *testing.T, a, b *Handler, shared func() int64) {
			syncA := func() { a.regLim.sync(ctx) }
			steps := []struct {
				answer
				register string
			}{
				{answer{status: 201, during: syncA}, "19"},
				{answer{status: 400, during: syncA}, "19"},
				{answer{status: 201, replayed: true, during: syncA}, "19"},
				{answer{status: 409}, "19"},
				{answer{status: 502, asError: true, during: syncA}, "19"},
			}
			for i, s := range steps {
				if got := register(t, a, "203.0.113.1", s.answer); got.register != s.register {
					t.Errorf("edge a, request %d: register r=%s; want %s", i+1, got.register, s.register)
				}
			}
			a.regLim.sync(ctx)
			if got := shared(); got != 1 {
				t.Errorf("shared count %d after edge a's sync; want 1 (one client created)", got)
			}
			// Edge b knows only its own request until it syncs.
			if got := register(t, b, "203.0.113.1", answer{status: 201}); got.register != "19" {
				t.Errorf("edge b before its sync: r=%s; want 19", got.register)
			}
			b.regLim.sync(ctx)
			if got := register(t, b, "203.0.113.1", answer{status: 201}); got.register != "17" {
				t.Errorf("edge b after its sync: r=%s; want 17 (a's client and its own two)", got.register)
			}
			b.regLim.sync(ctx)
			a.regLim.sync(ctx)
			// A sync while a's next request runs reads b's count back.
			if got := register(t, a, "203.0.113.1", answer{status: 400, during: syncA}); got.register != "17" {
				t.Errorf("edge a, refused after syncing: r=%s; want 17", got.register)
			}
			a.regLim.sync(ctx)
			if got := shared(); got != 3 {
				t.Errorf("shared count %d; want 3", got)
			}
		}},
		{desc: "refunds racing the sync are neither lost nor applied twice", quota: 1000, run: func(t *testing.T, a, b *Handler, shared func() int64) {
			stop := make(chan struct{})
			var loop sync.WaitGroup
			for _, e := range []*Handler{a, b} {
				loop.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
							e.regLim.sync(ctx)
						}
					}
				})
			}
			var wg sync.WaitGroup
			for i := range 200 {
				e := a
				if i%3 == 0 {
					e = b
				}
				a := answer{status: 201}
				switch i % 4 {
				case 1:
					a.status = 400
				case 2:
					a.replayed = true
				}
				// Let the sync run between counting and the answer.
				a.during = func() { time.Sleep(time.Millisecond) }
				wg.Go(func() { register(t, e, "203.0.113.1", a) })
			}
			wg.Wait()
			close(stop)
			loop.Wait()
			for range 2 {
				a.regLim.sync(ctx)
				b.regLim.sync(ctx)
			}
			if got := shared(); got != 100 {
				t.Errorf("shared count %d; want 100 (the clients created)", got)
			}
			// A request at an edge with a sync while it runs, and that
			// edge knows the whole count.
			for _, e := range []*Handler{a, b} {
				register(t, e, "203.0.113.1", answer{status: 400, during: func() { e.regLim.sync(ctx) }})
				e.regLim.sync(ctx) // its refund
				if got := spent(e, "203.0.113.1"); got != 100 {
					t.Errorf("an edge counts %d; want 100", got)
				}
			}
		}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			srv := redistest.New(t)
			clock := clockAt(windowStart.Add(10 * time.Second))
			a := newRegisterHandler(t, srv, clock, tc.quota, 1000)
			b := newRegisterHandler(t, srv, clock, tc.quota, 1001)
			if a.regLim == b.regLim {
				t.Fatal("the two edges share one limiter")
			}
			rdb := srv.Client()
			key := "iw:ratelimit:" + mustKey(a.regLim, "r:ip:203.0.113.1")
			tc.run(t, a, b, func() int64 {
				n, err := rdb.Get(ctx, key).Int64()
				if err != nil {
					t.Fatalf("reading the shared count: %v", err)
				}
				return n
			})
		})
	}
}

// TestGiveBackWhenRedisFails checks refunds while Redis fails: one given
// back during an outage the sync already saw waits and is pushed when Redis
// returns; one whose push fails and may have reached Redis (Redis hung:
// the command waits there and is applied later) is dropped, the unit
// counting again, since pushed twice it would take a charged unit off the
// shared count.
func TestGiveBackWhenRedisFails(t *testing.T) {
	ctx := context.Background()
	testCases := []struct {
		desc     string
		fail     func(l *limiter, srv *redistest.Server)
		wantOwn  int64 // this edge's count after the failed sync
		recovers bool  // Redis comes back and gets the refund
	}{
		{desc: "Redis down: the refund waits and is pushed when it returns", wantOwn: 0, recovers: true, fail: func(l *limiter, srv *redistest.Server) {
			srv.Stop()
			l.take(ctx, "ip:192.0.2.10", 20)
			l.sync(ctx) // fails: the edge knows Redis is down
		}},
		{desc: "Redis hung: the refund is dropped, never applied twice", wantOwn: 1, fail: func(l *limiter, srv *redistest.Server) {
			srv.Freeze()
		}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			srv := redistest.Start(t)
			l := newEdge(t, srv, time.Hour, time.Hour)
			h := hashOf("r:ip:192.0.2.9")
			d := l.takeHash(h, 20)
			l.sync(ctx) // pushed: 1
			tc.fail(l, srv)
			if _, ok := l.giveBack(h, d.window, 20); !ok {
				t.Fatal("nothing given back")
			}
			// The sync's own deadline, at the shortest.
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			l.sync(sctx)
			cancel()
			s := &l.shards[h%shards]
			s.mu.Lock()
			c, _ := s.counters.get(h)
			s.mu.Unlock()
			if got := c.own(); got != tc.wantOwn {
				t.Errorf("own count %d after the failed sync (%+v); want %d", got, c, tc.wantOwn)
			}
			if !tc.recovers {
				return
			}
			srv.Restart(false)
			l.sync(ctx) // Redis is back
			l.sync(ctx) // the refund goes
			if n, _ := srv.Client().Get(ctx, "iw:ratelimit:test:"+mustKey(l, "r:ip:192.0.2.9")).Int64(); n != 0 {
				t.Errorf("shared count %d once Redis returned; want 0", n)
			}
		})
	}
}

// The refunds field costs no memory: a client's slot stays 32 bytes.
func TestSlotSize(t *testing.T) {
	if got := unsafe.Sizeof(slot{}); got != 32 {
		t.Errorf("slot is %d bytes; want 32", got)
	}
}

// countsBy reads the counters of c as a scrape does: the value of each
// value of its label the collector reports, summed over its other labels.
func countsBy(t *testing.T, c prometheus.Collector, label string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// TestRefusalsCountedByStatus: the register budget's 429, like the
// ordinary budget's, is counted once in
// caddy_rate_limit_headers_responses_total{code="429"}, the edge's answers
// by status (docs/decisions.md, "Rate-limit state"), and every request
// once in caddy_rate_limit_headers_decisions_total, as allowed or limited
// (a registration the register budget refuses is limited, not both).
// Through a real Caddy over a real Redis, each case from an address of its
// own.
func TestRefusalsCountedByStatus(t *testing.T) {
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(10 * time.Second))
	pc, err := PoolLimitersWithClock(Handler{
		Quota: 3, Window: caddy.Duration(time.Minute), Redis: srv.URL(),
		RegisterQuota: 1, RegisterWindow: caddy.Duration(time.Hour),
	}, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Release)
	edge := edgetest.Start(t, fmt.Sprintf(`
	rate_limit_headers {
		quota 3
		window 60
		register_quota 1
		register_window 3600
		redis %s
	}
	respond /api/v1/agent-auth/register 201
	respond "ok"
	handle_errors {
		json_errors
	}`, srv.URL()), edgetest.Options{Global: `servers {
		trusted_proxies static 127.0.0.1/32
		client_ip_headers X-Forwarded-For
	}`})
	if !pc.Used() {
		t.Fatal("the handler did not take the limiters with the test's clock")
	}

	const register = "POST /api/v1/agent-auth/register"
	testCases := []struct {
		desc     string
		requests []string // "METHOD path"
		statuses []int
		// want is how much each code's count grows, decisions how much
		// each decision's.
		want, decisions map[string]float64
	}{
		{desc: "a registration within the register budget", requests: []string{register},
			statuses: []int{201}, want: map[string]float64{"201": 1}, decisions: map[string]float64{"allowed": 1}},
		{desc: "the register budget's 429", requests: []string{register, register},
			statuses: []int{201, 429}, want: map[string]float64{"201": 1, "429": 1}, decisions: map[string]float64{"allowed": 1, "limited": 1}},
		{desc: "the register budget's 429, twice", requests: []string{register, register, register},
			statuses: []int{201, 429, 429}, want: map[string]float64{"201": 1, "429": 2}, decisions: map[string]float64{"allowed": 1, "limited": 2}},
		{desc: "the ordinary budget's 429", requests: []string{"GET /", "GET /", "GET /", "GET /"},
			statuses: []int{200, 200, 200, 429}, want: map[string]float64{"200": 3, "429": 1}, decisions: map[string]float64{"allowed": 3, "limited": 1}},
		{desc: "a registration over the ordinary budget", requests: []string{"GET /", "GET /", "GET /", register},
			statuses: []int{200, 200, 200, 429}, want: map[string]float64{"200": 3, "429": 1}, decisions: map[string]float64{"allowed": 3, "limited": 1}},
	}
	for i, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			addr := "X-Forwarded-For: 192.0.2." + itoa(int64(i+1))
			before, decidedBefore := countsBy(t, responses, "code"), countsBy(t, decisions, "decision")
			for j, req := range tc.requests {
				method, path, _ := strings.Cut(req, " ")
				resp, body := edge.Do(t, method, path, "", addr)
				if resp.StatusCode != tc.statuses[j] {
					t.Fatalf("%s (request %d): %d %s; want %d", req, j+1, resp.StatusCode, body, tc.statuses[j])
				}
			}
			checkGrowth(t, "responses_total", "code", before, countsBy(t, responses, "code"), tc.want)
			checkGrowth(t, "decisions_total", "decision", decidedBefore, countsBy(t, decisions, "decision"), tc.decisions)
		})
	}
}

// checkGrowth checks that each value of label of the counter name grew
// from before to after by what want gives (nothing when it gives none).
func checkGrowth(t *testing.T, name, label string, before, after, want map[string]float64) {
	t.Helper()
	for v, n := range after {
		if got := n - before[v]; got != want[v] {
			t.Errorf("%s{%s=%q} grew by %v; want %v", name, label, v, got, want[v])
		}
	}
	for v, n := range want {
		if _, ok := after[v]; !ok && n != 0 {
			t.Errorf("%s{%s=%q} is not reported; want it grown by %v", name, label, v, n)
		}
	}
}

// TestRegisterReplayOverBudget: over the register budget, a registration
// with an Idempotency-Key is passed on marked replay-only, and its answer
// reaches the client only when it is a replay of a stored one; any other
// answer becomes the register budget's 429, as a registration without a
// key gets without reaching the origin. Each is counted once in
// decisions_total, as allowed when replayed and limited when refused. A
// client never sets the mark itself.
func TestRegisterReplayOverBudget(t *testing.T) {
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(10 * time.Second))
	h := newRegisterHandler(t, srv, clock, 1, 1000)
	const addr = "192.0.2.90"
	send := func(key, mark string, a answer) (status int, marked, called bool, body string, hdr http.Header) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/api/v1/agent-auth/register", strings.NewReader(`{"client_name":"t"}`))
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: addr}))
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		if mark != "" {
			r.Header.Set(httpheader.ReplayOnly, mark)
		}
		rec := httptest.NewRecorder()
		var calls atomic.Int64
		next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			marked = r.Header.Get(httpheader.ReplayOnly) != ""
			w.Header().Set("X-From-Origin", "yes")
			return a.handler(&calls).ServeHTTP(w, r)
		})
		err := h.ServeHTTP(rec, r, next)
		status = rec.Code
		if err != nil {
			var he caddyhttp.HandlerError
			if !errors.As(err, &he) {
				t.Fatalf("error %v is no handler error", err)
			}
			status = he.StatusCode
		}
		return status, marked, calls.Load() > 0, rec.Body.String(), rec.Header()
	}
	// The budget's one unit, spent by a client created; a mark the
	// client sent is removed.
	if status, marked, _, _, _ := send("k1", "1", answer{status: 201}); status != 201 || marked {
		t.Fatalf("first registration: %d, marked replay-only %v; want 201 unmarked", status, marked)
	}
	for _, tc := range []struct {
		desc   string
		key    string
		answer answer
		status int
		called bool // whether it reached the origin
	}{
		{desc: "a replay of a stored answer is passed", key: "k1", answer: answer{status: 201, replayed: true}, status: 201, called: true},
		{desc: "a replay with a body only (implicit 200) is passed", key: "k1", answer: answer{status: 200, replayed: true, bodyOnly: true}, status: 200, called: true},
		{desc: "an answer that is no replay becomes the 429", key: "k2", answer: answer{status: 201}, status: 429, called: true},
		{desc: "the origin's refusal becomes the 429", key: "k2", answer: answer{status: 429}, status: 429, called: true},
		{desc: "a 422 (same key, another body) becomes the 429", key: "k1", answer: answer{status: 422}, status: 429, called: true},
		{desc: "an origin's error becomes the 429", key: "k1", answer: answer{status: 502, asError: true}, status: 429, called: true},
		{desc: "no key: the 429, without reaching the origin", answer: answer{status: 201}, status: 429},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			decidedBefore := countsBy(t, decisions, "decision")
			status, marked, called, body, hdr := send(tc.key, "", tc.answer)
			// Counted once, as what the client got.
			want := map[string]float64{"allowed": 1}
			if tc.status == 429 {
				want = map[string]float64{"limited": 1}
			}
			checkGrowth(t, "decisions_total", "decision", decidedBefore, countsBy(t, decisions, "decision"), want)
			if status != tc.status || called != tc.called || called && !marked {
				t.Errorf("status %d, reached the origin %v (marked replay-only %v); want %d, %v, marked", status, called, marked, tc.status, tc.called)
			}
			if status == 429 && (body != "" || hdr.Get("X-From-Origin") != "" || hdr.Get("Content-Type") != "") {
				t.Errorf("the 429 carries the origin's answer: %q %v", body, hdr)
			}
			if status != 429 && hdr.Get("X-From-Origin") == "" {
				t.Errorf("the replay lost the origin's fields: %v", hdr)
			}
		})
	}
	if got := spent(h, addr); got < 1 {
		t.Errorf("register budget spent %d; want the client created counted", got)
	}
}

// TestReplayOnlyMarkReachesTheOrigin: the replay-only mark of a
// registration over the register budget reaches the origin through a real
// Caddy's reverse_proxy, whatever the client lists in Connection. The
// proxy deletes the fields Connection names (RFC 9110 §7.6.1) after the
// handlers ran, and `Connection: X-Invoicewire-Replay-Only` took the mark
// off: the origin created a client over the budget, whose stored answer a
// plain retry under the key then got as a replay.
func TestReplayOnlyMarkReachesTheOrigin(t *testing.T) {
	srv := redistest.New(t)
	clock := clockAt(windowStart.Add(10 * time.Second))
	pc, err := PoolLimitersWithClock(Handler{
		Quota: 1000, Window: caddy.Duration(time.Minute), Redis: srv.URL(),
		RegisterQuota: 1, RegisterWindow: caddy.Duration(time.Hour),
	}, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Release)
	// The origin answers every registration as created, and tells which
	// came marked.
	var mu sync.Mutex
	var marks []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		marks = append(marks, r.Header.Get(httpheader.ReplayOnly))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(up.Close)
	edge := edgetest.Start(t, fmt.Sprintf(`
	rate_limit_headers {
		quota 1000
		window 60
		register_quota 1
		register_window 3600
		redis %s
	}
	reverse_proxy %s
	handle_errors {
		json_errors
	}`, srv.URL(), strings.TrimPrefix(up.URL, "http://")))
	if !pc.Used() {
		t.Fatal("the handler did not take the limiters with the test's clock")
	}
	lastMark := func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(marks) == 0 {
			return "", false
		}
		m := marks[len(marks)-1]
		marks = marks[:0]
		return m, true
	}
	const path = "/api/v1/agent-auth/register"
	// The budget's one unit, spent; naming the mark in Connection within
	// the budget changes nothing.
	if resp, body := edge.Do(t, "POST", path, "", "Connection: X-Invoicewire-Replay-Only"); resp.StatusCode != 201 {
		t.Fatalf("first registration: %d %s", resp.StatusCode, body)
	}
	if m, _ := lastMark(); m != "" {
		t.Fatalf("the registration within the budget reached the origin marked %q", m)
	}
	testCases := []struct {
		desc       string
		connection string // the client's Connection field; "" for none
	}{
		{desc: "no Connection field"},
		{desc: "Connection naming the mark", connection: "X-Invoicewire-Replay-Only"},
		{desc: "Connection naming the mark in lower case among other options", connection: "keep-alive, x-invoicewire-replay-only, X-Other"},
	}
	for i, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			header := []string{"Idempotency-Key: key-" + itoa(int64(i))}
			if tc.connection != "" {
				header = append(header, "Connection: "+tc.connection)
			}
			resp, body := edge.Do(t, "POST", path, `{"client_name":"n"}`, header...)
			m, reached := lastMark()
			if !reached || m != "1" {
				t.Errorf("the registration over the budget reached the origin %v, marked %q; want it marked 1", reached, m)
			}
			if resp.StatusCode != 429 {
				t.Errorf("%d %s; want the register budget's 429 for an answer that is no replay", resp.StatusCode, body)
			}
		})
	}
}
