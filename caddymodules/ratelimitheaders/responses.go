package ratelimitheaders

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// responses counts every answer that passes through the limiter by status
// code, as caddy_rate_limit_headers_responses_total{code}. The limiter sits
// in front of every other handler but bot_auth (which never answers), so
// this is the edge's answers by status on every deployment, without Caddy's
// per-request metrics, which wrap every handler with histograms and cost
// far more on a cache hit (docs/decisions.md, "The edge's answers by status come from the
// limiter").
var responses = &statusCounter{desc: prometheus.NewDesc(
	"caddy_rate_limit_headers_responses_total",
	"Answers of the edge by status code (every request after bot_auth, 429s from the limiter and errors included).",
	[]string{"code"}, nil)}

// statusCounter is one atomic counter per status code: the hot path does a
// single atomic add, and a scrape reports the codes seen so far.
type statusCounter struct {
	desc   *prometheus.Desc
	counts [600]atomic.Uint64
}

// inc counts one answer with the given code; codes outside 100-599 count as 500.
func (c *statusCounter) inc(code int) {
	if code < 100 || code >= len(c.counts) {
		code = http.StatusInternalServerError
	}
	c.counts[code].Add(1)
}

// Describe implements prometheus.Collector.
func (c *statusCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *statusCounter) Collect(ch chan<- prometheus.Metric) {
	for code := range c.counts {
		if n := c.counts[code].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), strconv.Itoa(code))
		}
	}
}

// statusWriter notes the final status code written through it. Flush,
// Hijack and the rest reach the real writer through Unwrap
// (http.ResponseController), as with every Caddy wrapper.
type statusWriter struct {
	caddyhttp.ResponseWriterWrapper
	code int
}

// WriteHeader notes the first final (non-1xx) status.
func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriterWrapper.WriteHeader(code)
}

// refuse is the module's own refusal of a request (414, 429), counted
// among the answers by status as serveCounted counts those it passes on,
// and returned for json_errors to write. Every refusal goes through it,
// so none is left out of the count.
func refuse(e *apierror.Error) error {
	responses.inc(e.Status)
	return caddyhttp.Error(e.Status, e)
}

// serveCounted runs next through a statusWriter and counts the answer: the
// status written, else the status of the error returned (what handle_errors
// will write), else 200 (net/http's implicit status).
func serveCounted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// Not pooled: a handler may keep the writer it was given (a streamed
	// answer's goroutine), and one small allocation is cheap beside a hit.
	sw := &statusWriter{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	err := next.ServeHTTP(sw, r)
	code := finalStatus(sw.code, err)
	responses.inc(code)
	return err
}

// finalStatus is the status of an answer: the one written, else the
// status of the error returned, else 200.
func finalStatus(written int, err error) int {
	switch {
	case written != 0:
		return written
	case err != nil:
		code := http.StatusInternalServerError
		var he caddyhttp.HandlerError
		if errors.As(err, &he) && he.StatusCode != 0 {
			code = he.StatusCode
		}
		return code
	default:
		return http.StatusOK
	}
}

// serveRegistration is serveCounted for a registration: the answer's
// status and fields settle its unit of the register budget, before they
// are sent (registerWriter), or, when next wrote nothing, once it returns.
func serveRegistration(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, reg *registration) error {
	rw := &registerWriter{statusWriter: statusWriter{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}, reg: reg}
	err := next.ServeHTTP(rw, r)
	code := finalStatus(rw.code, err)
	reg.settle(code, w.Header())
	responses.inc(code)
	return err
}

// registerWriter settles a registration when its final status is written,
// while its header fields can still change. A body written without a
// status writes 200 first, as net/http would.
type registerWriter struct {
	statusWriter
	reg *registration
}

func (w *registerWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.reg.settle(code, w.Header())
	}
	w.statusWriter.WriteHeader(code)
}

func (w *registerWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.statusWriter.Write(b)
}

func (w *registerWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.statusWriter.ReadFrom(r)
}
