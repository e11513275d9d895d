// Package ratelimitheaders provides the rate_limit_headers handler (docs/architecture.md
// docs/decisions.md (rate limit)): the outermost edge module, which counts every request against the
// client's budget, refuses it with 429 rate_limited once the budget is
// spent, and tells every client where it stands with the IETF RateLimit
// and RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-10,
// Structured Fields of RFC 9651) and the legacy RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset fields.
//
// Every request counts against its address's budget: the client IP as Caddy
// determines it through the server's trusted_proxies (IPv6 by /64). A
// request with a valid bearer token counts against its client's budget as
// well and is refused when either is spent, so a token never adds requests
// to an address (anyone can register clients and claim tokens), and one
// token used from many addresses still gets one budget. Registering a
// client (POST register_path) counts, on top, against a stricter budget of
// its address over a longer window (docs/decisions.md, "Rate-limit
// budgets"). An agent whose Web Bot Auth signature bot_auth verified
// counts against a budget of its own, under its own policy
// (docs/decisions.md, "Verified agents"), and with a valid bearer token
// against that token's client's budget too.
package ratelimitheaders

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dunglas/httpsfv"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/caddymodules/botauth"
	"github.com/invoicewire/invoicewire/caddymodules/internal/memorybudget"
	"github.com/invoicewire/invoicewire/caddymodules/internal/redisconn"
	"github.com/invoicewire/invoicewire/caddymodules/internal/tokenverifier"
	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/metrics"
	"github.com/invoicewire/invoicewire/internal/token"
)

func init() {
	caddy.RegisterModule(Handler{})
}

var (
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "rate_limit_headers",
		Name:      "decisions_total",
		Help:      "Requests counted by the edge rate limiter, each once, by decision (allowed; limited by its budget or, for a registration, the register budget) and client kind (token, ip, agent).",
	}, []string{"decision", "client"})
	syncs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "rate_limit_headers",
		Name:      "syncs_total",
		Help:      "Pushes of local counts to Redis, by result (ok, error); errors mean the edge is counting locally.",
	}, []string{"result"})
)

// The label combinations, resolved once: the hot path only increments.
var (
	allowedIP    = decisions.WithLabelValues("allowed", "ip")
	allowedToken = decisions.WithLabelValues("allowed", "token")
	limitedIP    = decisions.WithLabelValues("limited", "ip")
	limitedToken = decisions.WithLabelValues("limited", "token")
	allowedAgent = decisions.WithLabelValues("allowed", "agent")
	limitedAgent = decisions.WithLabelValues("limited", "agent")
)

var limiters = caddy.NewUsagePool()

// DefaultMaxTarget is the default MaxTarget: 8 KiB, what common servers
// accept, and more than the longest target the service answers (a /search
// query of 500 characters, each percent-encoded in up to 12 bytes).
const DefaultMaxTarget = 8 << 10

// Handler counts requests and writes the rate-limit fields on every response.
type Handler struct {
	// Policy is the quota policy's name in RateLimit and RateLimit-Policy.
	// Default "default".
	Policy string `json:"policy,omitempty"`
	// Quota is the number of requests a client may make per window.
	// Default 1000 (IW_RATELIMIT_QUOTA).
	Quota int64 `json:"quota,omitempty"`
	// Window is the length of the fixed window, a whole number of seconds.
	// Default 60s (IW_RATELIMIT_WINDOW).
	Window caddy.Duration `json:"window,omitempty"`
	// Redis is the URL of the Redis that holds bearer tokens, and the
	// edges' shared counts unless CountersRedis is set. Empty: count
	// locally and key by IP only.
	Redis string `json:"redis,omitempty"`
	// CountersRedis is the URL of the Redis the edges share their counts
	// through (IW_RATELIMIT_REDIS_URL). Counts churn and need no
	// durability, so they belong on a Redis of their own without an
	// append-only file (docs/decisions.md, "Rate-limit state"). Default:
	// Redis.
	CountersRedis string `json:"counters_redis,omitempty"`
	// MaxClients caps the clients the edge tracks at once
	// (IW_RATELIMIT_MAX_CLIENTS). Beyond it the least recently seen make
	// room, their counts kept in a fixed-size sketch. Default 1000000.
	MaxClients int `json:"max_clients,omitempty"`
	// SyncInterval is how often local counts are pushed to Redis and the
	// shared totals read back. Default 100ms.
	SyncInterval caddy.Duration `json:"sync_interval,omitempty"`
	// KeyPrefix prefixes the counters' Redis keys. Default "iw:ratelimit".
	KeyPrefix string `json:"key_prefix,omitempty"`
	// AgentPolicy names the policy of agents whose Web Bot Auth signature
	// bot_auth verified. Default "agent".
	AgentPolicy string `json:"agent_policy,omitempty"`
	// AgentQuota is the number of requests a verified agent may make per
	// window, and the most that verified requests from one address may
	// make. Default 5000 (IW_RATELIMIT_AGENT_QUOTA).
	AgentQuota int64 `json:"agent_quota,omitempty"`
	// RegisterPath is where clients are registered (POST). Default
	// /api/v1/agent-auth/register.
	RegisterPath string `json:"register_path,omitempty"`
	// RegisterQuota is how many POSTs to RegisterPath one address may make
	// per RegisterWindow, on top of its ordinary budget. Default 20
	// (IW_RATELIMIT_REGISTER_QUOTA).
	RegisterQuota int64 `json:"register_quota,omitempty"`
	// RegisterWindow is the registration budget's window, a whole number
	// of seconds. Default 1h (IW_RATELIMIT_REGISTER_WINDOW).
	RegisterWindow caddy.Duration `json:"register_window,omitempty"`
	// MaxTarget is the longest request target, in bytes as sent (the path
	// and query of RFC 9112 §3.2), that the edge serves; a longer one is
	// answered 414 URI Too Long (RFC 9110 §15.5.15) before anything behind
	// the limiter sees it, CORS preflights excepted (docs/decisions.md,
	// "Request-target length").
	// Default 8 KiB (DefaultMaxTarget).
	MaxTarget int `json:"max_target,omitempty"`

	lim        *limiter
	poolKey    string
	regLim     *limiter
	regPoolKey string
	// The registration policy's fields, serialised once.
	regPolicy, regItemPrefix string
	verifier                 *tokenverifier.Verifier
	logger                   *zap.Logger

	anonymous, agent budget
}

// budget is one quota policy with its fields serialised once: the
// RateLimit-Policy value, the legacy limit and the start of the RateLimit
// item.
type budget struct {
	quota       int64
	policyValue []string
	limitValue  []string
	itemPrefix  string
}

// newBudget serialises a policy as Structured Fields (RFC 9651): the name
// is a String item, quoted and escaped by httpsfv; q and w are Integer
// parameters.
func newBudget(name string, quota int64, window time.Duration) (budget, error) {
	pol := httpsfv.NewItem(name)
	pol.Params.Add("q", quota)
	pol.Params.Add("w", int64(window/time.Second))
	pv, err := httpsfv.Marshal(httpsfv.List{pol})
	if err != nil {
		return budget{}, fmt.Errorf("serialising RateLimit-Policy: %w", err)
	}
	prefix, err := httpsfv.Marshal(httpsfv.NewItem(name))
	if err != nil {
		return budget{}, fmt.Errorf("serialising RateLimit: %w", err)
	}
	return budget{quota: quota, policyValue: []string{pv}, limitValue: []string{strconv.FormatInt(quota, 10)}, itemPrefix: prefix}, nil
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.rate_limit_headers",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets up the limiter, shared through a usage pool so its counts
// survive config reloads.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	h.setDefaults()
	if err := metrics.Register(ctx.GetMetricsRegistry(), decisions, syncs, responses); err != nil {
		return err
	}

	var err error
	if h.anonymous, err = newBudget(h.Policy, h.Quota, time.Duration(h.Window)); err != nil {
		return err
	}
	if h.agent, err = newBudget(h.AgentPolicy, h.AgentQuota, time.Duration(h.Window)); err != nil {
		return err
	}

	h.lim, h.poolKey, err = h.acquireLimiter(h.Policy, time.Duration(h.Window), true)
	if err != nil {
		return err
	}
	reg := httpsfv.NewItem("register")
	reg.Params.Add("q", h.RegisterQuota)
	reg.Params.Add("w", int64(time.Duration(h.RegisterWindow)/time.Second))
	if h.regPolicy, err = httpsfv.Marshal(httpsfv.List{reg}); err != nil {
		return fmt.Errorf("serialising the register policy: %w", err)
	}
	h.regItemPrefix, _ = httpsfv.Marshal(httpsfv.NewItem("register"))
	h.regLim, h.regPoolKey, err = h.acquireLimiter("register", time.Duration(h.RegisterWindow), false)
	if err != nil {
		return err
	}
	if h.Redis != "" {
		h.verifier, err = tokenverifier.Acquire(ctx, h.Redis)
		if err != nil {
			return fmt.Errorf("setting up the token verifier: %w", err)
		}
	}
	return nil
}

// setDefaults fills in the fields left empty.
func (h *Handler) setDefaults() {
	if h.Policy == "" {
		h.Policy = "default"
	}
	if h.Quota == 0 {
		h.Quota = 1000
	}
	if h.Window == 0 {
		h.Window = caddy.Duration(time.Minute)
	}
	if h.CountersRedis == "" {
		h.CountersRedis = h.Redis
	}
	if h.MaxClients == 0 {
		h.MaxClients = DefaultMaxClients
	}
	if h.SyncInterval == 0 {
		h.SyncInterval = caddy.Duration(100 * time.Millisecond)
	}
	if h.KeyPrefix == "" {
		h.KeyPrefix = "iw:ratelimit"
	}
	if h.AgentPolicy == "" {
		h.AgentPolicy = "agent"
	}
	if h.AgentQuota == 0 {
		h.AgentQuota = 5000
	}
	if h.RegisterPath == "" {
		h.RegisterPath = "/api/v1/agent-auth/register"
	}
	if h.RegisterQuota == 0 {
		h.RegisterQuota = 20
	}
	if h.RegisterWindow == 0 {
		h.RegisterWindow = caddy.Duration(time.Hour)
	}
	if h.MaxTarget == 0 {
		h.MaxTarget = DefaultMaxTarget
	}
}

// acquireLimiter takes the shared limiter of a policy and window from the
// usage pool, creating it on first use. A limiter that counts every request
// (reserve) holds up to MaxClients clients, which it reserves in the edge's
// soft memory limit; the register budget's sees registrations only and
// reserves nothing (docs/edge-gateway.md, "Memory").
func (h *Handler) acquireLimiter(policy string, window time.Duration, reserve bool) (*limiter, string, error) {
	key := h.limiterKey(policy, window)
	v, _, err := limiters.LoadOrNew(key, func() (caddy.Destructor, error) {
		p, err := h.newPooledLimiter(window, time.Now)
		if err != nil || !reserve {
			return p, err
		}
		p.budget = "rate_limit " + key
		memorybudget.Reserve(p.budget, int64(h.MaxClients)*memorybudget.BytesPerClient)
		return p, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("setting up the %s limiter: %w", policy, err)
	}
	return v.(*pooledLimiter).limiter, key, nil
}

// limiterKey names the pooled limiter of a policy and window: handlers
// configured alike share one, across config reloads.
func (h *Handler) limiterKey(policy string, window time.Duration) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%d", policy, window, time.Duration(h.SyncInterval), h.CountersRedis, h.KeyPrefix, h.MaxClients)
}

// newPooledLimiter makes h's limiter over window, reading now.
func (h *Handler) newPooledLimiter(window time.Duration, now func() time.Time) (*pooledLimiter, error) {
	cfg := limiterConfig{window: window, prefix: h.KeyPrefix, maxClients: h.MaxClients, log: h.logger, now: now}
	if h.CountersRedis == "" {
		return &pooledLimiter{limiter: newLimiter(cfg)}, nil
	}
	rdb, err := redisconn.Acquire(h.CountersRedis)
	if err != nil {
		return nil, err
	}
	cfg.rdb, cfg.interval = rdb, time.Duration(h.SyncInterval)
	return &pooledLimiter{limiter: newLimiter(cfg), redisURL: h.CountersRedis}, nil
}

// pooledLimiter releases the limiter's Redis client with it.
type pooledLimiter struct {
	*limiter
	redisURL string
	// budget names the limiter's reservation in the soft memory limit;
	// empty: none.
	budget string
}

func (p *pooledLimiter) Destruct() error {
	err := p.limiter.Destruct()
	if p.budget != "" {
		memorybudget.Release(p.budget)
	}
	if p.redisURL != "" {
		redisconn.Release(p.redisURL)
	}
	return err
}

// Validate checks h's configuration.
func (h *Handler) Validate() error {
	w := time.Duration(h.Window)
	switch {
	case h.Quota < 0 || h.AgentQuota < 0 || h.RegisterQuota < 0:
		return errors.New("rate_limit_headers: quota, agent_quota and register_quota must not be negative")
	case h.MaxTarget < 0:
		return errors.New("rate_limit_headers: max_target must not be negative")
	case time.Duration(h.RegisterWindow) < time.Second || time.Duration(h.RegisterWindow)%time.Second != 0:
		return fmt.Errorf("rate_limit_headers: register_window must be a whole number of seconds, got %s", time.Duration(h.RegisterWindow))
	case h.AgentPolicy == h.Policy:
		return errors.New("rate_limit_headers: agent_policy must differ from policy")
	case w < time.Second || w%time.Second != 0:
		return fmt.Errorf("rate_limit_headers: window must be a whole number of seconds, got %s", w)
	case h.MaxClients < shards:
		return fmt.Errorf("rate_limit_headers: max_clients must be at least %d", shards)
	case time.Duration(h.SyncInterval) < 10*time.Millisecond:
		return errors.New("rate_limit_headers: sync_interval must be at least 10ms")
	}
	return nil
}

// Cleanup releases the shared limiter and verifier.
func (h *Handler) Cleanup() error {
	for _, k := range []string{h.poolKey, h.regPoolKey} {
		if k != "" {
			_, _ = limiters.Delete(k)
		}
	}
	if h.verifier != nil {
		tokenverifier.Release(h.Redis)
	}
	return nil
}

// ServeHTTP counts r, sets the rate-limit fields and refuses r when the
// client's budget is spent, or with 414 when its target is longer than
// MaxTarget.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	b, d, kind := h.decide(r)

	// Seconds until the window resets, rounded up so a client waiting that
	// long always finds a fresh budget.
	t := int64((d.reset + time.Second - 1) / time.Second)
	// One string holds every value: the RateLimit item, whose r and t
	// parameters are also the legacy fields' values (one allocation, not
	// three, on every request).
	var buf [64]byte
	bs := append(buf[:0], b.itemPrefix...)
	bs = append(bs, ";r="...)
	r0 := len(bs)
	bs = strconv.AppendInt(bs, d.remaining, 10)
	r1 := len(bs)
	bs = append(bs, ";t="...)
	t0 := len(bs)
	bs = strconv.AppendInt(bs, t, 10)
	item := string(bs)

	vals := make([]string, 3)
	vals[0] = item
	vals[1] = item[r0:r1]
	vals[2] = item[t0:]
	hdr := w.Header()
	hdr["Ratelimit-Policy"] = b.policyValue
	hdr["Ratelimit"] = vals[0:1:1]
	hdr["Ratelimit-Limit"] = b.limitValue
	hdr["Ratelimit-Remaining"] = vals[1:2:2]
	hdr["Ratelimit-Reset"] = vals[2:3:3]

	// A CORS preflight over the budget, or of a target over MaxTarget, is
	// let through (the Caddyfile answers it at the edge, for nothing):
	// refused, the browser would report a CORS failure and hide from the
	// page the 429 and Retry-After, or the 414, its real request then gets
	// (Fetch standard, CORS-preflight fetch).
	preflight := isPreflight(r)
	limited := !d.allowed && !preflight
	tooLong := len(r.RequestURI) > h.MaxTarget && !preflight
	// A registration the ordinary budget allows takes a unit of the
	// register budget too; refused there, it is one limited request in
	// decisions_total, not an allowed one as well. One passed on for its
	// replay only is counted once its answer shows which it is
	// (serveReplayOnly).
	var reg *registration
	var regRefused error
	if !limited && !tooLong && r.Method == http.MethodPost && strings.TrimSuffix(path.Clean(r.URL.Path), "/") == h.RegisterPath {
		reg, regRefused = h.countRegistration(w, r, b, addressKey(r))
	}
	if reg != nil && reg.refusal != nil {
		return serveReplayOnly(w, r, next, reg, kind)
	}
	countDecision(kind, limited || regRefused != nil)
	// A request target over MaxTarget is answered 414 before anything
	// else: the refusal below, the register budget, the edge cache and the
	// origin never see it. It counted against its budget above, as every
	// request does, and carries the fields written above
	// (docs/decisions.md, "Request-target length").
	if tooLong {
		return refuse(apierror.New(http.StatusRequestURITooLong,
			"The request target (path and query) is too long: at most "+strconv.Itoa(h.MaxTarget)+" bytes.",
			"Send a shorter URL (RFC 9110 §15.5.15)."))
	}
	if limited {
		e := apierror.New(http.StatusTooManyRequests,
			"Rate limit exceeded: "+b.limitValue[0]+" requests per "+strconv.FormatInt(int64(time.Duration(h.Window)/time.Second), 10)+" seconds.",
			"Wait for Retry-After seconds; the RateLimit headers tell how much budget is left.")
		// RFC 9110 §10.2.3 delay-seconds; never earlier than the reset
		// (ratelimit-headers-10 §4).
		e.Header = http.Header{"Retry-After": {vals[2]}}
		return refuse(e)
	}
	if regRefused != nil {
		return regRefused
	}
	if reg != nil {
		return serveRegistration(w, r, next, reg)
	}
	return serveCounted(w, r, next)
}

// countDecision counts a request of the client kind in decisions_total,
// as limited (refused) or allowed.
func countDecision(kind string, limited bool) {
	switch {
	case kind == "token" && limited:
		limitedToken.Inc()
	case kind == "token":
		allowedToken.Inc()
	case kind == "agent" && limited:
		limitedAgent.Inc()
	case kind == "agent":
		allowedAgent.Inc()
	case limited:
		limitedIP.Inc()
	default:
		allowedIP.Inc()
	}
}

// decide counts r against its budget. A verified agent counts against its
// own budget and, with the same quota, against its address's budget for
// verified requests: an address that signs with many identities (anyone
// can publish keys) gets no more than one agent's budget (docs/decisions.md,
// "Verified agents"). The tighter of the two is reported.
func (h *Handler) decide(r *http.Request) (*budget, decision, string) {
	if id, _ := caddyhttp.GetVar(r.Context(), botauth.VarAgent).(string); id != "" {
		byAgent := h.lim.take(r.Context(), "a:"+id, h.agent.quota)
		byAddress := h.lim.take(r.Context(), "aa:"+addressKey(r), h.agent.quota)
		if byAddress.remaining < byAgent.remaining || !byAddress.allowed {
			byAgent.remaining = byAddress.remaining
			byAgent.allowed = byAgent.allowed && byAddress.allowed
			byAgent.reset = max(byAgent.reset, byAddress.reset)
		}
		// A valid token still spends its client's budget: a signature
		// must not let a token escape a budget it spent unsigned
		// (docs/decisions.md, "Rate-limit budgets"). When the token's
		// budget is the tighter, the answer names its policy.
		if client := h.tokenClient(r); client != "" {
			byToken := h.lim.take(r.Context(), "t:"+client, h.Quota)
			if !byToken.allowed && byAgent.allowed || byToken.remaining < byAgent.remaining {
				return &h.anonymous, tighter(byAgent, byToken), "token"
			}
		}
		return &h.agent, byAgent, "agent"
	}
	// Every other request counts against its address; a valid token adds
	// its client's budget, and the tighter of the two decides
	// (docs/decisions.md, "Rate-limit budgets").
	var kb [64]byte
	d := h.lim.takeHash(hashOfBytes(appendAddressKey(kb[:0], r)), h.Quota)
	if client := h.tokenClient(r); client != "" {
		return &h.anonymous, tighter(d, h.lim.take(r.Context(), "t:"+client, h.Quota)), "token"
	}
	return &h.anonymous, d, "ip"
}

// tokenClient is the client of r's bearer token when it is valid, else "".
func (h *Handler) tokenClient(r *http.Request) string {
	if h.verifier == nil {
		return ""
	}
	raw, present := token.FromHeader(r.Header)
	if !present || raw == "" {
		return ""
	}
	rec, err := h.verifier.Verify(r.Context(), raw)
	if err != nil {
		return ""
	}
	return rec.ClientID
}

// tighter is the decision of two budgets a request counts against: refused
// if either refuses, with the fewer remaining requests and, when both
// refuse, the later reset.
func tighter(a, b decision) decision {
	if !b.allowed && a.allowed || b.remaining < a.remaining {
		a, b = b, a
	}
	a.allowed = a.allowed && b.allowed
	if !a.allowed && !b.allowed {
		a.reset = max(a.reset, b.reset)
	}
	return a
}

// addressKey is "ip:<address>" for the client IP, with IPv6 grouped by
// /64, since one host commonly holds a whole /64.
func addressKey(r *http.Request) string {
	var b [64]byte
	return string(appendAddressKey(b[:0], r))
}

// appendAddressKey appends r's addressKey to b. Every request is counted
// by it: made in a buffer on the caller's stack and hashed there, the key
// costs no allocation (under make bench-traffic every request is a new
// client, docs/edge-gateway.md, "Traffic").
func appendAddressKey(b []byte, r *http.Request) []byte {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	if ip == "" {
		ip = r.RemoteAddr
	}
	b = append(b, "ip:"...)
	if addr, err := netip.ParseAddr(ip); err == nil && addr.Is6() && !addr.Is4In6() {
		if p, err := addr.Prefix(64); err == nil {
			return p.AppendTo(b)
		}
	}
	return append(b, ip...)
}

// isPreflight reports whether r is a CORS preflight: OPTIONS with Origin
// and Access-Control-Request-Method (Fetch standard, CORS protocol).
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
