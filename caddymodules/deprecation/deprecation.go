// Package deprecation provides the deprecation handler (docs/decisions.md, versioning): for a
// configured path prefix, every response announces that the API version is
// deprecated and when it goes away, with
//
//	Deprecation: @<epoch seconds>                  (RFC 9745, an SF Date)
//	Sunset: <IMF-fixdate>                          (RFC 8594)
//	Link: <policy>; rel="deprecation"; type="text/html"
//	Link: <sunset policy>; rel="sunset"
//
// The contract promises that a retired version keeps serving for at least six
// months, so the configuration is refused when the sunset comes earlier
// than six months after the deprecation.
package deprecation

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dunglas/httpsfv"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/metrics"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// MinimumNoticeMonths is the shortest time, in months, between deprecation and sunset: the
// contract promises that a retired version keeps serving "for at least six months" before it
// is removed.
const MinimumNoticeMonths = 6

var served = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "deprecation",
	Name:      "requests_total",
	Help:      "Requests to deprecated API versions, by configured prefix.",
}, []string{"prefix"})

// Handler adds the deprecation fields to responses under Prefix.
type Handler struct {
	// Prefix is the deprecated path prefix, e.g. /api/v0. It matches the
	// prefix itself and everything below it, not /api/v01.
	Prefix string `json:"prefix,omitempty"`
	// Deprecated is when the version was (or will be) deprecated, RFC 3339.
	Deprecated string `json:"deprecated,omitempty"`
	// Sunset is when the version stops answering, RFC 3339; at least six
	// months after Deprecated.
	Sunset string `json:"sunset,omitempty"`
	// Policy is the URL of the deprecation policy or migration guide
	// (Link rel="deprecation", RFC 9745 §3).
	Policy string `json:"policy,omitempty"`
	// SunsetPolicy is the URL of the sunset policy (Link rel="sunset", RFC
	// 8594 §6). Optional.
	SunsetPolicy string `json:"sunset_policy,omitempty"`

	deprecated, sunset time.Time
	// Header values serialised once in Provision.
	deprecationValue, sunsetValue, linkValue []string
	counter                                  prometheus.Counter
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.deprecation",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision parses the dates and serialises the header values.
func (h *Handler) Provision(ctx caddy.Context) error {
	if err := metrics.Register(ctx.GetMetricsRegistry(), served); err != nil {
		return err
	}
	var err error
	if h.deprecated, err = time.Parse(time.RFC3339, h.Deprecated); err != nil {
		return fmt.Errorf("deprecation: deprecated must be an RFC 3339 date-time: %w", err)
	}
	if h.sunset, err = time.Parse(time.RFC3339, h.Sunset); err != nil {
		return fmt.Errorf("deprecation: sunset must be an RFC 3339 date-time: %w", err)
	}
	// RFC 9745 §2.1: an Item whose value is an SF Date (RFC 9651 §3.3.7).
	dv, err := httpsfv.Marshal(httpsfv.NewItem(time.Unix(h.deprecated.Unix(), 0)))
	if err != nil {
		return fmt.Errorf("deprecation: serialising Deprecation: %w", err)
	}
	h.deprecationValue = []string{dv}
	// RFC 8594 §3: an HTTP-date, whose only generated form is IMF-fixdate
	// with "GMT" (RFC 9110 §5.6.7).
	h.sunsetValue = []string{h.sunset.UTC().Format(http.TimeFormat)}
	var links []string
	if h.Policy != "" {
		links = append(links, "<"+h.Policy+`>; rel="deprecation"; type="text/html"`)
	}
	if h.SunsetPolicy != "" {
		links = append(links, "<"+h.SunsetPolicy+`>; rel="sunset"`)
	}
	h.linkValue = links
	h.counter = served.WithLabelValues(h.Prefix)
	return nil
}

// Validate enforces the six months of notice and sane values.
func (h *Handler) Validate() error {
	switch {
	case !strings.HasPrefix(h.Prefix, "/") || strings.HasSuffix(h.Prefix, "/") && h.Prefix != "/":
		return fmt.Errorf("deprecation: prefix must start with / and not end with one, got %q", h.Prefix)
	case h.sunset.Before(h.deprecated.AddDate(0, MinimumNoticeMonths, 0)):
		return fmt.Errorf("deprecation: sunset %s is earlier than six months after deprecation %s; the contract promises a retired version keeps serving at least six months",
			h.sunset.Format(time.RFC3339), h.deprecated.Format(time.RFC3339))
	case h.Policy == "":
		return errors.New("deprecation: policy (the link to the deprecation policy or migration guide) is required")
	}
	for _, u := range []string{h.Policy, h.SunsetPolicy} {
		if strings.ContainsAny(u, "<>\r\n\" ") {
			return fmt.Errorf("deprecation: link %q contains characters not allowed in a URI reference", u)
		}
	}
	return nil
}

// ServeHTTP adds the fields before the response is produced, so errors
// carry them too.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	p := r.URL.Path
	if p == h.Prefix || strings.HasPrefix(p, h.Prefix) && len(p) > len(h.Prefix) && p[len(h.Prefix)] == '/' {
		hdr := w.Header()
		hdr["Deprecation"] = h.deprecationValue
		hdr["Sunset"] = h.sunsetValue
		for _, l := range h.linkValue {
			hdr.Add("Link", l)
		}
		h.counter.Inc()
	}
	return next.ServeHTTP(w, r)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
