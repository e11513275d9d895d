// Package markdowntwin provides the markdown_twin handler (docs/decisions.md, markdown twin). A
// GET or HEAD of an article page, /<yyyy>/<mm>/<slug>/, whose Accept header
// prefers text/markdown over text/html (q-values respected, RFC 9110
// §12.5.1) is rewritten to the page's markdown twin, /<yyyy>/<mm>/<slug>.md,
// which the origin serves; the edge cache then holds one entry for both
// addresses. Responses on article pages, in either form, carry Vary: Accept
// so that shared caches downstream keep the two forms apart. Nothing is
// converted here: the twin is the origin's answer with all its fields, its
// Content-Signal among them.
package markdowntwin

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/caddymodules/internal/negotiate"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/metrics"
)

func init() {
	caddy.RegisterModule(Handler{})
}

var rewrites = prometheus.NewCounter(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "markdown_twin",
	Name:      "rewrites_total",
	Help:      "Article page requests answered with the markdown twin.",
})

// offers are the two forms of a page, HTML first: a client that accepts
// both equally gets the page.
var offers = []string{"text/html", "text/markdown"}

// Handler rewrites article page requests that prefer markdown.
type Handler struct{}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.markdown_twin",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision registers the metrics.
func (h *Handler) Provision(ctx caddy.Context) error {
	return metrics.Register(ctx.GetMetricsRegistry(), rewrites)
}

// ServeHTTP rewrites r when it asks for the markdown form of an article page.
// The page is recognised in the path as the client sent it (escaped): in
// the decoded r.URL.Path, "/2026/03/a%2F" and "/2026/03/%61/" read as the
// page "/2026/03/a/", and rewriting them would answer the twin at an
// address the origin answers with a 404 or a 301 (docs/decisions.md, "One
// address per resource").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	y, m, slug, ok := articlePage(r.URL.EscapedPath())
	if !ok {
		return next.ServeHTTP(w, r)
	}
	// The page depends on Accept in both forms (RFC 9110 §12.5.5).
	w = &varyWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		negotiate.Preferred(r.Header["Accept"], offers) == "text/markdown" {
		md := "/" + y + "/" + m + "/" + slug + ".md"
		r.URL.Path = md
		r.URL.RawPath = ""
		if r.URL.RawQuery != "" {
			r.RequestURI = md + "?" + r.URL.RawQuery
		} else {
			r.RequestURI = md
		}
		rewrites.Inc()
	}
	return next.ServeHTTP(w, r)
}

// articlePage splits /<yyyy>/<mm>/<slug>/ and reports whether p has that
// form with a slug of the content model ([a-z0-9]+(-[a-z0-9]+)*), so that
// nothing but a well-formed page (no "..", no encoded separators) is ever
// rewritten.
func articlePage(p string) (y, m, slug string, ok bool) {
	// "/yyyy/mm/" is 9 bytes, then the slug, then "/".
	if len(p) < 11 || p[0] != '/' || p[5] != '/' || p[8] != '/' || p[len(p)-1] != '/' {
		return "", "", "", false
	}
	y, m, slug = p[1:5], p[6:8], p[9:len(p)-1]
	if !digits(y) || !digits(m) || !content.ValidSlug(slug) {
		return "", "", "", false
	}
	return y, m, slug, true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// varyWriter makes sure the response's Vary names Accept, without adding it
// twice when the origin already did.
type varyWriter struct {
	*caddyhttp.ResponseWriterWrapper
	wroteHeader bool
}

func (vw *varyWriter) WriteHeader(status int) {
	if !vw.wroteHeader && status >= 200 {
		vw.wroteHeader = true
		addVary(vw.Header(), "Accept")
	}
	vw.ResponseWriterWrapper.WriteHeader(status)
}

func (vw *varyWriter) Write(b []byte) (int, error) {
	if !vw.wroteHeader {
		vw.WriteHeader(http.StatusOK)
	}
	return vw.ResponseWriterWrapper.Write(b)
}

// addVary adds field to Vary unless a Vary value already names it or "*".
func addVary(h http.Header, field string) {
	for _, v := range h["Vary"] {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "*" || strings.EqualFold(part, field) {
				return
			}
		}
	}
	h.Add("Vary", field)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ http.ResponseWriter         = (*varyWriter)(nil)
)
