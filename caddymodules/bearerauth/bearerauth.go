// Package bearerauth provides the bearer_auth handler (docs/decisions.md, bearer tokens): the
// edge's early check of bearer tokens on the routes that need one. The
// origin stays authoritative; the edge spares it requests that cannot
// succeed and tells the origin who the verified client is.
//
// Rules, in order:
//   - Every request loses any inbound X-Invoicewire-Client header: only the
//     edge may assert a client.
//   - Public writes (agent-auth register, claim, revoke, and the RFC 7592
//     client configuration endpoint, which checks its own registration
//     access token) pass untouched.
//   - CORS preflights pass untouched: a browser never sends credentials
//     on one, and the edge answers it itself.
//   - Owner routes (any method; a path below them that no route has is not
//     one) and write methods (POST, PUT, PATCH, DELETE) under the API prefix
//     need a valid token: missing → 401
//     unauthorized with a Bearer challenge (RFC 6750 §3, RFC 9728 §5.1);
//     a Bearer credential that is no token ("Bearer", "Bearer a b", or
//     Authorization sent twice), or one presented but unknown, expired or
//     revoked → 401 with error="invalid_token" (RFC 6750 §3.1 counts a
//     malformed token as invalid). A valid token passes, with X-Invoicewire-Client
//     set to its client id (httpheader.SetForOrigin, so that a Connection
//     option of the client's cannot remove it on the way to the origin); a
//     write on a route without writes then gets the origin's 405.
//   - Everything else (public reads, the site) passes; Authorization is
//     ignored there, so reads never answer 401.
package bearerauth

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/caddymodules/internal/tokenverifier"
	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/internal/metrics"
	"github.com/invoicewire/invoicewire/internal/token"
)

func init() {
	caddy.RegisterModule(Handler{})
}

var outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "bearer_auth",
	Name:      "requests_total",
	Help:      "Requests that needed a bearer token, by outcome: valid, missing, invalid, unavailable (Redis unreachable).",
}, []string{"outcome"})

// Handler checks bearer tokens on write and owner routes.
type Handler struct {
	// Redis is the URL of the Redis holding iw:token:<sha256> records.
	Redis string `json:"redis,omitempty"`
	// SiteRoot is {site_root}, for the resource_metadata URL of the
	// challenge. Default http://localhost:8080 (IW_PUBLIC_URL).
	SiteRoot string `json:"site_root,omitempty"`
	// APIPrefix is the path under which write methods need a token.
	// Default /api/v1.
	APIPrefix string `json:"api_prefix,omitempty"`
	// Protected lists paths that need a token for every method; a trailing
	// "/*" stands for one more path segment, as a route's {id} does. Default
	// /api/v1/webhooks/subscriptions and /api/v1/webhooks/subscriptions/*:
	// a path deeper than those is no route, so a read of it passes on to the
	// origin's 404 rather than asking for credentials that would not help
	// (docs/decisions.md, unknown paths before credentials).
	Protected []string `json:"protected,omitempty"`
	// PublicWrites lists paths where writes need no bearer token (same
	// pattern syntax). Default the agent-auth register, claim and revoke
	// endpoints and /api/v1/agent-auth/register/*.
	PublicWrites []string `json:"public_writes,omitempty"`
	// ClientHeader is the request header that tells the origin the verified
	// client id. Default X-Invoicewire-Client.
	ClientHeader string `json:"client_header,omitempty"`

	verifier *tokenverifier.Verifier
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.bearer_auth",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets up defaults and acquires the shared token verifier.
func (h *Handler) Provision(ctx caddy.Context) error {
	if h.SiteRoot == "" {
		h.SiteRoot = "http://localhost:8080"
	}
	h.SiteRoot = strings.TrimRight(h.SiteRoot, "/")
	if h.APIPrefix == "" {
		h.APIPrefix = "/api/v1"
	}
	if h.Protected == nil {
		h.Protected = []string{h.APIPrefix + "/webhooks/subscriptions", h.APIPrefix + "/webhooks/subscriptions/*"}
	}
	if h.PublicWrites == nil {
		h.PublicWrites = []string{
			h.APIPrefix + "/agent-auth/register",
			h.APIPrefix + "/agent-auth/claim",
			h.APIPrefix + "/agent-auth/revoke",
			h.APIPrefix + "/agent-auth/register/*",
		}
	}
	if h.ClientHeader == "" {
		h.ClientHeader = "X-Invoicewire-Client"
	}
	if err := metrics.Register(ctx.GetMetricsRegistry(), outcomes); err != nil {
		return err
	}
	if h.Redis == "" {
		return errors.New("bearer_auth: redis is required")
	}
	v, err := tokenverifier.Acquire(ctx, h.Redis)
	if err != nil {
		return fmt.Errorf("setting up the token verifier: %w", err)
	}
	h.verifier = v
	return nil
}

// Validate checks h's configuration.
func (h *Handler) Validate() error {
	if !strings.HasPrefix(h.SiteRoot, "http://") && !strings.HasPrefix(h.SiteRoot, "https://") {
		return fmt.Errorf("bearer_auth: site_root must be an absolute http(s) URL, got %q", h.SiteRoot)
	}
	for _, p := range append(append([]string{h.APIPrefix}, h.Protected...), h.PublicWrites...) {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("bearer_auth: path %q must start with /", p)
		}
	}
	return nil
}

// Cleanup releases the token verifier.
func (h *Handler) Cleanup() error {
	if h.verifier != nil {
		tokenverifier.Release(h.Redis)
	}
	return nil
}

// ServeHTTP applies the rules of the package documentation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if _, ok := r.Header[http.CanonicalHeaderKey(h.ClientHeader)]; ok {
		r.Header.Del(h.ClientHeader)
	}
	if !h.needsToken(r) {
		return next.ServeHTTP(w, r)
	}
	raw, kind := bearer(r.Header)
	if kind == credentialsNone {
		outcomes.WithLabelValues("missing").Inc()
		e := apierror.New(http.StatusUnauthorized,
			"A bearer token is required for "+r.Method+" requests to this resource.",
			"Register at "+h.SiteRoot+h.APIPrefix+"/agent-auth/register, claim a token and send it as Authorization: Bearer <token>; see "+h.SiteRoot+"/auth.md.")
		e.Header = http.Header{"Www-Authenticate": {token.Challenge(h.SiteRoot, false)}}
		return caddyhttp.Error(http.StatusUnauthorized, e)
	}
	if kind == credentialsMalformed {
		outcomes.WithLabelValues("malformed").Inc()
		return caddyhttp.Error(http.StatusUnauthorized, token.MalformedToken(h.SiteRoot))
	}
	rec, err := h.verifier.Verify(r.Context(), raw)
	switch {
	case errors.Is(err, tokenverifier.ErrInvalid):
		outcomes.WithLabelValues("invalid").Inc()
		e := apierror.New(http.StatusUnauthorized,
			"The bearer token is invalid, expired or revoked.",
			"Claim a new token at "+h.SiteRoot+h.APIPrefix+"/agent-auth/claim.")
		e.Header = http.Header{"Www-Authenticate": {token.Challenge(h.SiteRoot, true)}}
		return caddyhttp.Error(http.StatusUnauthorized, e)
	case err != nil:
		outcomes.WithLabelValues("unavailable").Inc()
		e := apierror.New(http.StatusServiceUnavailable, "Tokens cannot be checked right now.", "Try again in a few seconds.")
		e.Header = http.Header{"Retry-After": {"5"}}
		return caddyhttp.Error(http.StatusServiceUnavailable, e)
	}
	outcomes.WithLabelValues("valid").Inc()
	httpheader.SetForOrigin(r.Header, h.ClientHeader, rec.ClientID)
	return next.ServeHTTP(w, r)
}

// needsToken reports whether r must carry a valid token at the edge.
func (h *Handler) needsToken(r *http.Request) bool {
	// Match on the cleaned path, so "/register/../../webhooks" is judged
	// as the /webhooks it names (RFC 3986 §5.2.4). Clean allocates only
	// when the path was not clean.
	p := path.Clean(r.URL.Path)
	if p != h.APIPrefix && !strings.HasPrefix(p, h.APIPrefix+"/") {
		return false
	}
	// A CORS preflight never carries credentials (Fetch standard,
	// CORS-preflight fetch): refused, the browser could never send the
	// real request, owner routes included. The edge answers it itself
	// (docs/decisions.md, "One CORS list for every route").
	if isPreflight(r) {
		return false
	}
	if matchAny(h.Protected, p) {
		return true
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return !matchAny(h.PublicWrites, p)
	}
	return false
}

// isPreflight reports whether r is a CORS preflight: OPTIONS with Origin
// and Access-Control-Request-Method, as the rate limiter tells one.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// matchAny reports whether p (cleaned, without a trailing slash) matches one
// of the patterns: an exact path, or "prefix/*" for one segment below
// prefix.
func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if prefix, ok := strings.CutSuffix(pat, "/*"); ok {
			if rest, below := strings.CutPrefix(p, prefix+"/"); below && rest != "" && !strings.Contains(rest, "/") {
				return true
			}
			continue
		}
		if p == pat {
			return true
		}
	}
	return false
}

type credentials int

const (
	credentialsNone credentials = iota
	credentialsBearer
	// credentialsMalformed is a Bearer credential that is no token.
	credentialsMalformed
)

// bearer extracts a bearer token (RFC 6750 §2.1; the scheme is
// case-insensitive). Another scheme counts as no credentials: RFC 6750
// §3.1 sends no error code to a client that used an unsupported method. A
// credential token.Malformed refuses (no token, or Authorization sent
// twice) is malformed, as at the origin; one longer than any token issued
// is a presented, invalid token.
func bearer(h http.Header) (string, credentials) {
	if token.Malformed(h) {
		return "", credentialsMalformed
	}
	cred, present := token.FromHeader(h)
	if !present || cred == "" {
		return "", credentialsNone
	}
	if len(cred) > token.MaxLength {
		return "", credentialsBearer
	}
	return cred, credentialsBearer
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
