// Package jsonerrors provides the json_errors handler: the responder used
// inside handle_errors that turns every error the edge produces into the
// contract's JSON error (docs/decisions.md, JSON errors) — a refused token, a rate limit, an
// origin that is down — never an HTML page or an empty body.
package jsonerrors

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/internal/metrics"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Default CORS values: the ones the origin sends (package httpheader), so a
// browser can read the edge's errors and their rate-limit headers.
const (
	DefaultAllowOrigin   = httpheader.AllowOrigin
	DefaultExposeHeaders = httpheader.ExposeHeaders
)

var responses = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "json_errors",
	Name:      "responses_total",
	Help:      "Error responses written by the edge, by status code.",
}, []string{"code"})

// Handler writes the error in the request context as
// {"error":{"code","message","hint"}} with the matching status and the
// request id in X-Request-Id.
//
// When the error wraps an *apierror.Error (what Invoicewire's modules
// return), its code, message, hint and headers are used as they are. Any
// other error (a failed dial to the origin, a timeout, Caddy's own errors)
// gets the code for its status and a fixed message: internal error text,
// which can name upstream addresses, is never sent. Every 5xx written is
// logged at error level through Caddy's logger (the Caddyfiles have no
// access log), with the request id its hint quotes; a 4xx at debug level. A
// failed or timed-out origin (502, 504 from reverse_proxy) is answered 503
// unavailable with Retry-After.
type Handler struct {
	// AllowOrigin is the Access-Control-Allow-Origin value. Default "*".
	AllowOrigin string `json:"allow_origin,omitempty"`
	// ExposeHeaders is the Access-Control-Expose-Headers value. Default
	// the RateLimit headers, Retry-After, ETag, Deprecation, Sunset, Link,
	// Cache-Status, Age and X-Request-Id.
	ExposeHeaders string `json:"expose_headers,omitempty"`
	// RequestIDHeader names the request header that carries the request id
	// (set by the Caddyfile, passed to the origin and echoed in errors).
	// Default X-Request-Id.
	RequestIDHeader string `json:"request_id_header,omitempty"`
	// RequestIDMember adds the request id to the body as error.request_id.
	// Off by default: openapi.json's Error allows no members beyond code,
	// message and hint, so the id travels in the X-Request-Id header and,
	// for server-side failures, in the hint.
	RequestIDMember bool `json:"request_id_member,omitempty"`

	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.json_errors",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets up h's defaults and metrics.
func (h *Handler) Provision(ctx caddy.Context) error {
	if h.AllowOrigin == "" {
		h.AllowOrigin = DefaultAllowOrigin
	}
	if h.ExposeHeaders == "" {
		h.ExposeHeaders = DefaultExposeHeaders
	}
	if h.RequestIDHeader == "" {
		h.RequestIDHeader = "X-Request-Id"
	}
	h.logger = ctx.Logger()
	return metrics.Register(ctx.GetMetricsRegistry(), responses)
}

// Validate checks h's configuration.
func (h *Handler) Validate() error {
	if strings.ContainsAny(h.AllowOrigin+h.ExposeHeaders+h.RequestIDHeader, "\r\n") {
		return errors.New("json_errors: header values must not contain line breaks")
	}
	return nil
}

// representationHeaders describe a body other than ours; a handler may have
// set them before it failed (a cache replaying a stored response, a proxy
// that copied upstream headers), and they must not describe the JSON error.
var representationHeaders = []string{
	"Content-Length", "Content-Encoding", "Content-Range", "Content-Location",
	"ETag", "Last-Modified", "Expires", "Age", "Surrogate-Key", "Accept-Ranges",
	"Set-Cookie", "Vary", "Cache-Control", "Content-Type",
}

// body is the JSON error of the contract plus the request id.
type body struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Hint      string `json:"hint,omitempty"`
		RequestID string `json:"request_id,omitempty"`
	} `json:"error"`
}

// ServeHTTP writes the JSON error. It never calls next: it is a responder.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	err, _ := r.Context().Value(caddyhttp.ErrorCtxKey).(error)
	ae := toAPIError(err)
	if ae.Status == http.StatusBadRequest && r.Host == "" && r.ProtoAtLeast(1, 1) {
		// Caddy refuses it before any handler (RFC 9112 §3.2); its own
		// error text is not for clients, so say here what is wrong.
		ae = apierror.BadRequest("The request's Host field is empty.", "An HTTP/1.1 request names the host it is for in Host (RFC 9112 §3.2).")
	}

	hdr := w.Header()
	for _, k := range representationHeaders {
		hdr.Del(k)
	}
	for k, v := range ae.Header {
		hdr[k] = v
	}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("X-Content-Type-Options", httpheader.NoSniff)
	// Edge errors depend on this request only (a token, a quota): no cache
	// may keep them (RFC 6585 §4 forbids storing 429 outright).
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Access-Control-Allow-Origin", h.AllowOrigin)
	hdr.Set("Access-Control-Expose-Headers", h.ExposeHeaders)

	var b body
	b.Error.Code, b.Error.Message, b.Error.Hint = ae.Code, ae.Message, ae.Hint
	// The fixed hints of server-side failures name the request id, so a
	// report can quote it; it is in the X-Request-Id header too.
	id := h.requestID(r)
	b.Error.Hint = strings.ReplaceAll(b.Error.Hint, "{request_id}", id)
	if id != "" {
		hdr.Set(h.RequestIDHeader, id)
		if h.RequestIDMember {
			b.Error.RequestID = id
		}
	}
	// No HTML escaping: the body is JSON, never embedded in a page, and
	// hints keep their "<token>" and "&" readable (as the origin's do).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return err
	}
	out := buf.Bytes()
	h.log(r, id, ae.Status, err)
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	responses.WithLabelValues(strconv.Itoa(ae.Status)).Inc()
	w.WriteHeader(ae.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(out)
	}
	return nil
}

// log records an error response: a 5xx at error level, since it is the
// service failing and the request id in its hint is what a user reports; a
// 4xx, the client's mistake, at debug level only. The path is logged
// without its query, which may carry secrets; the underlying error is the
// detail the body hides (an upstream's address, a dial error).
func (h *Handler) log(r *http.Request, id string, status int, err error) {
	if h.logger == nil {
		return
	}
	level := zapcore.DebugLevel
	if status >= 500 {
		level = zapcore.ErrorLevel
	}
	ce := h.logger.Check(level, "error response")
	if ce == nil {
		return
	}
	ce.Write(
		zap.String("request_id", id),
		zap.String("method", r.Method),
		zap.String("path", r.URL.Path),
		zap.Int("status", status),
		zap.Error(err),
	)
}

// requestID is r's id as RequestID makes it from h.RequestIDHeader.
func (h *Handler) requestID(r *http.Request) string { return RequestID(r, h.RequestIDHeader) }

// RequestID is the id of request r that an answer the edge makes itself
// carries in field (X-Request-Id): the client's id in that field when it is
// safe to echo, else the request's UUID, which Caddy keeps per request: the
// Caddyfile sends the same {http.request.uuid} to the origin, and the
// access log names it too. Modules that answer with an error of their own
// instead of returning it to json_errors (the edge cache's 412) use it, so
// that every error of the edge names the same id (docs/edge-gateway.md,
// "Errors").
func RequestID(r *http.Request, field string) string {
	if id := r.Header.Get(field); httpheader.ValidRequestID(id) {
		return id
	}
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		id, _ := repl.GetString("http.request.uuid")
		return id
	}
	return ""
}

// toAPIError finds the client-facing error in err.
func toAPIError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	status := http.StatusInternalServerError
	var he caddyhttp.HandlerError
	if errors.As(err, &he) && he.StatusCode >= 400 && he.StatusCode <= 599 {
		status = he.StatusCode
	}
	var header http.Header
	if status == http.StatusBadGateway || status == http.StatusGatewayTimeout {
		// The origin is down or slow. docs/decisions.md (JSON errors) pairs the code unavailable with
		// 503, and 503 (with Retry-After, RFC 9110 §15.6.4) is what the
		// contract documents for every operation; 502 and 504 are not.
		status = http.StatusServiceUnavailable
		header = http.Header{"Retry-After": {"5"}}
	}
	msg, hint := messageFor(status)
	return &apierror.Error{Status: status, Code: apierror.CodeFor(status), Message: msg, Hint: hint, Header: header}
}

// messageFor is the fixed text for errors that carry none of their own.
func messageFor(status int) (message, hint string) {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "The service is temporarily unavailable.", "Try again in a few seconds; if it persists, report it with request id {request_id}."
	case http.StatusNotFound:
		return "Nothing is published at this address.", "The API starts at /api/v1/ and is described at /openapi.json."
	case http.StatusMethodNotAllowed:
		return "This method is not allowed here.", ""
	case http.StatusRequestHeaderFieldsTooLarge:
		return "The request's header fields are too large.", "Send smaller headers."
	case http.StatusRequestEntityTooLarge:
		return "The request body is too large.", ""
	}
	if status >= 500 {
		return "The server failed to answer this request.", "Try again later; if it persists, report it with request id {request_id}."
	}
	return "The request was not understood.", "See /openapi.json for what each endpoint accepts."
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
