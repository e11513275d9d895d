// Package ratelimitheaders provides the rate_limit_headers handler (DESIGN
// D15): the outermost edge module, which counts every request against the
// client's budget, refuses it with 429 rate_limited once the budget is
// spent, and tells every client where it stands with the IETF RateLimit
// and RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-10,
// Structured Fields of RFC 9651) and the legacy RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset fields.
//
// The client is the verified bearer client when the request carries a valid
// token (asked of the shared token verifier), else the client IP as Caddy
// determines it through the server's trusted_proxies.
package ratelimitheaders

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dunglas/httpsfv"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

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
		Help:      "Requests counted by the edge rate limiter, by decision (allowed, limited) and client kind (token, ip).",
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
)

var limiters = caddy.NewUsagePool()

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
	// Redis is the URL of the Redis that the edges share counts through and
	// that holds bearer tokens. Empty: count locally and key by IP only.
	Redis string `json:"redis,omitempty"`
	// SyncInterval is how often local counts are pushed to Redis and the
	// shared totals read back. Default 100ms.
	SyncInterval caddy.Duration `json:"sync_interval,omitempty"`
	// KeyPrefix prefixes the counters' Redis keys. Default "iw:ratelimit".
	KeyPrefix string `json:"key_prefix,omitempty"`

	lim      *limiter
	poolKey  string
	verifier *tokenverifier.Verifier
	logger   *zap.Logger

	// Serialised once: the policy field and the start of the RateLimit one.
	policyValue []string
	limitValue  []string
	itemPrefix  string
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
	if h.Policy == "" {
		h.Policy = "default"
	}
	if h.Quota == 0 {
		h.Quota = 1000
	}
	if h.Window == 0 {
		h.Window = caddy.Duration(time.Minute)
	}
	if h.SyncInterval == 0 {
		h.SyncInterval = caddy.Duration(100 * time.Millisecond)
	}
	if h.KeyPrefix == "" {
		h.KeyPrefix = "iw:ratelimit"
	}
	if err := metrics.Register(ctx.GetMetricsRegistry(), decisions, syncs); err != nil {
		return err
	}

	// Structured Fields (RFC 9651): the policy name is a String item,
	// quoted and escaped by httpsfv; q and w are Integer parameters.
	pol := httpsfv.NewItem(h.Policy)
	pol.Params.Add("q", h.Quota)
	pol.Params.Add("w", int64(time.Duration(h.Window)/time.Second))
	pv, err := httpsfv.Marshal(httpsfv.List{pol})
	if err != nil {
		return fmt.Errorf("serialising RateLimit-Policy: %w", err)
	}
	h.policyValue = []string{pv}
	h.limitValue = []string{strconv.FormatInt(h.Quota, 10)}
	prefix, err := httpsfv.Marshal(httpsfv.NewItem(h.Policy))
	if err != nil {
		return fmt.Errorf("serialising RateLimit: %w", err)
	}
	h.itemPrefix = prefix

	h.poolKey = fmt.Sprintf("%s|%s|%s|%s|%s", h.Policy, time.Duration(h.Window), time.Duration(h.SyncInterval), h.Redis, h.KeyPrefix)
	v, _, err := limiters.LoadOrNew(h.poolKey, func() (caddy.Destructor, error) {
		var lim *limiter
		if h.Redis == "" {
			lim = newLimiter(time.Duration(h.Window), 0, h.KeyPrefix, nil, h.logger)
			return &pooledLimiter{limiter: lim}, nil
		}
		rdb, err := redisconn.Acquire(h.Redis)
		if err != nil {
			return nil, err
		}
		lim = newLimiter(time.Duration(h.Window), time.Duration(h.SyncInterval), h.KeyPrefix, rdb, h.logger)
		return &pooledLimiter{limiter: lim, redisURL: h.Redis}, nil
	})
	if err != nil {
		h.poolKey = ""
		return fmt.Errorf("setting up the limiter: %w", err)
	}
	h.lim = v.(*pooledLimiter).limiter
	if h.Redis != "" {
		h.verifier, err = tokenverifier.Acquire(ctx, h.Redis)
		if err != nil {
			return fmt.Errorf("setting up the token verifier: %w", err)
		}
	}
	return nil
}

// pooledLimiter releases the limiter's Redis client with it.
type pooledLimiter struct {
	*limiter
	redisURL string
}

func (p *pooledLimiter) Destruct() error {
	err := p.limiter.Destruct()
	if p.redisURL != "" {
		redisconn.Release(p.redisURL)
	}
	return err
}

// Validate checks h's configuration.
func (h *Handler) Validate() error {
	w := time.Duration(h.Window)
	switch {
	case h.Quota < 0:
		return errors.New("rate_limit_headers: quota must not be negative")
	case w < time.Second || w%time.Second != 0:
		return fmt.Errorf("rate_limit_headers: window must be a whole number of seconds, got %s", w)
	case time.Duration(h.SyncInterval) < 10*time.Millisecond:
		return errors.New("rate_limit_headers: sync_interval must be at least 10ms")
	}
	return nil
}

// Cleanup releases the shared limiter and verifier.
func (h *Handler) Cleanup() error {
	if h.poolKey != "" {
		_, _ = limiters.Delete(h.poolKey)
	}
	if h.verifier != nil {
		tokenverifier.Release(h.Redis)
	}
	return nil
}

// ServeHTTP counts r, sets the rate-limit fields and refuses r when the
// client's budget is spent.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	client, kind := h.clientKey(r)
	d := h.lim.take(r.Context(), client, h.Quota)

	// Seconds until the window resets, rounded up so a client waiting that
	// long always finds a fresh budget.
	t := int64((d.reset + time.Second - 1) / time.Second)
	// One string holds every value: the RateLimit item, whose r and t
	// parameters are also the legacy fields' values (one allocation, not
	// three, on every request).
	var buf [64]byte
	b := append(buf[:0], h.itemPrefix...)
	b = append(b, ";r="...)
	r0 := len(b)
	b = strconv.AppendInt(b, d.remaining, 10)
	r1 := len(b)
	b = append(b, ";t="...)
	t0 := len(b)
	b = strconv.AppendInt(b, t, 10)
	item := string(b)

	vals := make([]string, 3)
	vals[0] = item
	vals[1] = item[r0:r1]
	vals[2] = item[t0:]
	hdr := w.Header()
	hdr["Ratelimit-Policy"] = h.policyValue
	hdr["Ratelimit"] = vals[0:1:1]
	hdr["Ratelimit-Limit"] = h.limitValue
	hdr["Ratelimit-Remaining"] = vals[1:2:2]
	hdr["Ratelimit-Reset"] = vals[2:3:3]

	if !d.allowed {
		if kind == "token" {
			limitedToken.Inc()
		} else {
			limitedIP.Inc()
		}
		e := apierror.New(http.StatusTooManyRequests,
			"Rate limit exceeded: "+h.limitValue[0]+" requests per "+strconv.FormatInt(int64(time.Duration(h.Window)/time.Second), 10)+" seconds.",
			"Wait for Retry-After seconds; the RateLimit headers tell how much budget is left.")
		// RFC 9110 §10.2.3 delay-seconds; never earlier than the reset
		// (ratelimit-headers-10 §4).
		e.Header = http.Header{"Retry-After": {vals[2]}}
		return caddyhttp.Error(http.StatusTooManyRequests, e)
	}
	if kind == "token" {
		allowedToken.Inc()
	} else {
		allowedIP.Inc()
	}
	return next.ServeHTTP(w, r)
}

// clientKey names the budget r counts against: "t:<client id>" for a valid
// bearer token, else "ip:<address>" with IPv6 grouped by /64, since one
// host commonly holds a whole /64.
func (h *Handler) clientKey(r *http.Request) (key, kind string) {
	if h.verifier != nil {
		if raw, present := token.FromHeader(r.Header); present && raw != "" {
			if rec, err := h.verifier.Verify(r.Context(), raw); err == nil {
				return "t:" + rec.ClientID, "token"
			}
		}
	}
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	if ip == "" {
		ip = r.RemoteAddr
	}
	if addr, err := netip.ParseAddr(ip); err == nil && addr.Is6() && !addr.Is4In6() {
		if p, err := addr.Prefix(64); err == nil {
			return "ip:" + p.String(), "ip"
		}
	}
	return "ip:" + ip, "ip"
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
