// Package edgecache provides the edge_cache handler (DESIGN D12, D13): an
// in-memory shared HTTP cache (RFC 9111) in front of the origin, bounded by
// bytes (github.com/dgraph-io/ristretto/v2).
//
//   - Freshness is the shared-cache one: s-maxage over max-age over
//     Expires; responses without explicit freshness are not stored (no
//     heuristic freshness).
//   - Stale responses are served within stale-while-revalidate without the
//     client asking, with one background refresh per entry; concurrent
//     misses for one key are coalesced into one origin request; when the
//     origin fails, a stale entry is served within stale-if-error (the
//     response's, else the configured default). RFC 9111 §4.2.4 forbids
//     serving stale under s-maxage; the contract sends both s-maxage and
//     stale-while-revalidate, and the edge follows RFC 5861 the way CDNs do
//     (a deviation recorded in docs/decisions.md). An explicit
//     must-revalidate or proxy-revalidate still forbids stale responses.
//   - A request with Cache-Control: no-cache (or max-age beyond the
//     entry's age, or min-fresh) goes to the origin, revalidating with the
//     entry's ETag, and refreshes the entry.
//   - Conditional requests (If-None-Match, If-Modified-Since) are answered
//     from the entry with 304.
//   - The cache sits outside the encode handler: each content coding is a
//     separate entry keyed by the normalised Accept-Encoding, so a hit
//     writes stored bytes as they are. Fields Vary names beyond
//     Accept-Encoding (Accept, normalised to the preferred media type) make
//     secondary keys.
//   - Never stored: 206, 304, 429, no-store, private, no-cache, Set-Cookie,
//     Vary: *, and any request with Authorization (not even looked up).
//   - Surrogate-Key is stored and stripped; messages on iw:invalidate purge
//     by surrogate key, and each (re)subscription flushes everything when
//     the content version moved meanwhile.
//   - Age and Cache-Status (RFC 9211, cache name Invoicewire) are on every
//     response the cache touched.
package edgecache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/invoicewire/invoicewire/caddymodules/internal/negotiate"
	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/metrics"
)

func init() {
	caddy.RegisterModule(Handler{})
}

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "edge_cache",
		Name:      "requests_total",
		Help:      "Requests seen by the edge cache, by outcome: hit, stale (served while revalidating), miss, revalidated, refresh (client no-cache), stale_if_error, collapsed, bypass.",
	}, []string{"outcome"})
	purges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "edge_cache",
		Name:      "purges_total",
		Help:      "Invalidations applied, by kind: keys (surrogate keys from iw:invalidate), flush (everything).",
	}, []string{"kind"})
	refreshes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "edge_cache",
		Name:      "background_refreshes_total",
		Help:      "Background refreshes of stale entries, by result: stored, not_modified, failed.",
	}, []string{"result"})

	hitCounter  = requests.WithLabelValues("hit")
	staleCount  = requests.WithLabelValues("stale")
	missCounter = requests.WithLabelValues("miss")
)

var pool = caddy.NewUsagePool()

// Handler is the edge cache.
type Handler struct {
	// Name is the cache's identifier in Cache-Status. Default Invoicewire.
	Name string `json:"name,omitempty"`
	// MaxBytes bounds the memory of stored responses. Default 256 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxEntryBytes is the largest body stored. Default 8 MiB.
	MaxEntryBytes int64 `json:"max_entry_bytes,omitempty"`
	// Redis is the URL of the Redis whose iw:invalidate channel purges the
	// cache. Empty: no purging (entries live out their freshness).
	Redis string `json:"redis,omitempty"`
	// Encodings are the content codings the encode handler inside the
	// cache offers, in its order of preference. Default zstd, gzip.
	Encodings []string `json:"encodings,omitempty"`
	// AcceptTypes are the media types a Vary: Accept response is keyed by:
	// a request's Accept is normalised to the one it prefers. Default
	// text/html, text/markdown, application/json.
	AcceptTypes []string `json:"accept_types,omitempty"`
	// StaleIfError is how long past freshness a stored response may stand
	// in for a failing origin when the response sets no stale-if-error.
	// Default 24h.
	StaleIfError caddy.Duration `json:"stale_if_error,omitempty"`
	// RefreshTimeout bounds a background refresh. Default 30s.
	RefreshTimeout caddy.Duration `json:"refresh_timeout,omitempty"`

	shared     *shared
	poolKey    string
	capability string
	logger     *zap.Logger
	now        func() time.Time
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.edge_cache",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets up defaults and acquires the shared store.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	h.now = time.Now
	if h.Name == "" {
		h.Name = "Invoicewire"
	}
	h.capability = strings.ToLower(h.Name) + `="Surrogate/1.0"`
	if h.MaxBytes == 0 {
		h.MaxBytes = 256 << 20
	}
	if h.MaxEntryBytes == 0 {
		h.MaxEntryBytes = 8 << 20
	}
	if h.Encodings == nil {
		h.Encodings = []string{"zstd", "gzip"}
	}
	if h.AcceptTypes == nil {
		h.AcceptTypes = []string{"text/html", "text/markdown", "application/json"}
	}
	if h.StaleIfError == 0 {
		h.StaleIfError = caddy.Duration(24 * time.Hour)
	}
	if h.RefreshTimeout == 0 {
		h.RefreshTimeout = caddy.Duration(30 * time.Second)
	}
	if err := metrics.Register(ctx.GetMetricsRegistry(), requests, purges, refreshes); err != nil {
		return err
	}
	key := fmt.Sprintf("%s|%d|%s", h.Name, h.MaxBytes, h.Redis)
	v, _, err := pool.LoadOrNew(key, func() (caddy.Destructor, error) {
		// The invalidation follower logs through slog; zapslog carries
		// its records into Caddy's logging as this module's.
		slogger := slog.New(zapslog.NewHandler(h.logger.Core(), zapslog.WithName(h.logger.Name())))
		return newShared(h.MaxBytes, h.Redis, slogger)
	})
	if err != nil {
		return fmt.Errorf("setting up the edge cache: %w", err)
	}
	h.poolKey = key
	h.shared = v.(*shared)
	return nil
}

// Validate checks h's configuration.
func (h *Handler) Validate() error {
	switch {
	case h.MaxBytes < 1<<20:
		return errors.New("edge_cache: max_bytes must be at least 1 MiB")
	case h.MaxEntryBytes < 1 || h.MaxEntryBytes > h.MaxBytes:
		return errors.New("edge_cache: max_entry_bytes must be positive and at most max_bytes")
	case strings.ContainsAny(h.Name, ",;=\" \r\n"):
		return errors.New("edge_cache: name must be an RFC 9211 token without separators")
	}
	return nil
}

// Cleanup releases the shared store.
func (h *Handler) Cleanup() error {
	if h.poolKey != "" {
		_, _ = pool.Delete(h.poolKey)
	}
	return nil
}

// ServeHTTP answers r from the cache when it can and fills the cache
// otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return h.bypass(w, r, next, "method")
	}
	if _, ok := r.Header["Authorization"]; ok {
		// Responses to authorised requests are the client's own (RFC 9111
		// §3.5); the edge neither stores nor serves them.
		return h.bypass(w, r, next, "bypass")
	}
	var kb [256]byte
	ae := negotiate.Encoding(r.Header["Accept-Encoding"], h.Encodings)
	key := h.primaryKey(kb[:0], r, ae)
	e := h.shared.get(key)
	fwd := "uri-miss"
	primaryLen := len(key)
	if e != nil && e.marker {
		key = h.secondaryKey(key, e.vary, r)
		e = h.shared.get(key)
		fwd = "vary-miss"
	}

	var reqCC cacheControl
	ccValues := r.Header["Cache-Control"]
	if ccValues != nil {
		reqCC = parseCacheControl(ccValues)
	} else {
		reqCC = parseCacheControl(nil)
		// RFC 9111 §5.4: Pragma: no-cache means no-cache when there is
		// no Cache-Control.
		for _, p := range r.Header["Pragma"] {
			if strings.Contains(strings.ToLower(p), "no-cache") {
				reqCC.noCache = true
			}
		}
	}

	if e != nil {
		now := h.now()
		age := e.age(now)
		fresh := age < e.lifetime
		acceptable := !reqCC.noCache &&
			(reqCC.maxAge < 0 || age <= reqCC.maxAge) &&
			(reqCC.minFresh < 0 || e.lifetime-age >= reqCC.minFresh)
		switch {
		case acceptable && fresh:
			hitCounter.Inc()
			h.writeEntry(w, r, e, now, nil)
			return nil
		case acceptable && !e.mustRevalidate && (age < e.lifetime+e.swr || reqCC.maxStaleAny || (reqCC.maxStale >= 0 && age <= e.lifetime+reqCC.maxStale)):
			staleCount.Inc()
			if age < e.lifetime+e.swr {
				h.refresh(r, next, string(key), e)
			}
			h.writeEntry(w, r, e, now, nil)
			return nil
		}
		// Stale, or the client wants validation: revalidate in the
		// foreground, keeping e for stale-if-error.
		fwdReason := "stale"
		if reqCC.noCache || !acceptable {
			fwdReason = "request"
		}
		return h.fetch(w, r, next, string(key), string(key[:primaryLen]), e, fwdReason, reqCC)
	}
	if reqCC.onlyIfCached {
		e := apierror.New(http.StatusGatewayTimeout, "The response is not in the cache and the request asked for a cached one only.", "Retry without Cache-Control: only-if-cached.")
		return caddyhttp.Error(http.StatusGatewayTimeout, e)
	}
	return h.fetch(w, r, next, string(key), string(key[:primaryLen]), nil, fwd, reqCC)
}

// bypass passes r through without using the cache. A successful unsafe
// request invalidates what the cache holds for its target and for the
// Location and Content-Location it names (RFC 9111 §4.4).
func (h *Handler) bypass(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, fwd string) error {
	requests.WithLabelValues("bypass").Inc()
	w.Header()["Cache-Status"] = []string{h.Name + "; fwd=" + fwd}
	sw := &stripWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	err := next.ServeHTTP(sw, r)
	if err == nil && !safeMethod(r.Method) && sw.status >= 200 && sw.status < 400 {
		tags := []string{uriTag(r.Host, requestURI(r))}
		for _, f := range []string{"Location", "Content-Location"} {
			if u, uerr := r.URL.Parse(w.Header().Get(f)); uerr == nil && w.Header().Get(f) != "" && (u.Host == "" || u.Host == r.Host) {
				tags = append(tags, uriTag(r.Host, u.RequestURI()))
			}
		}
		h.shared.drop(tags)
		purges.WithLabelValues("unsafe_method").Inc()
	}
	return err
}

// safeMethod reports whether m is safe (RFC 9110 §9.2.1); any other method,
// unknown ones included, may change the target.
func safeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// uriTag is the index tag of a request target.
func uriTag(host, uri string) string { return "\x00uri " + host + " " + uri }

// requestURI is r's target as the client sent it (after rewrites).
func requestURI(r *http.Request) string {
	if r.RequestURI != "" && r.RequestURI[0] == '/' {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// primaryKey is "host uri ae": GET and HEAD share entries.
func (h *Handler) primaryKey(b []byte, r *http.Request, ae string) []byte {
	b = append(b, r.Host...)
	b = append(b, ' ')
	b = append(b, requestURI(r)...)
	b = append(b, ' ')
	b = append(b, ae...)
	return b
}

// secondaryKey extends a primary key with the normalised values of the
// fields Vary names.
func (h *Handler) secondaryKey(primary []byte, fields []string, r *http.Request) []byte {
	b := append([]byte(nil), primary...)
	for _, f := range fields {
		b = append(b, 0)
		if f == "Accept" {
			b = append(b, negotiate.Preferred(r.Header["Accept"], h.AcceptTypes)...)
			continue
		}
		for i, v := range r.Header[f] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, strings.ToLower(strings.TrimSpace(v))...)
		}
	}
	return b
}

// writeEntry sends e to the client. extraStatus, when set, replaces the hit
// Cache-Status (for responses served after a forward).
func (h *Handler) writeEntry(w http.ResponseWriter, r *http.Request, e *entry, now time.Time, cacheStatus []string) {
	hdr := w.Header()
	hv := e.values(now, h.Name)
	if cacheStatus == nil {
		cacheStatus = hv.cacheStatus
	}
	if id := r.Header["X-Request-Id"]; id != nil {
		hdr["X-Request-Id"] = id
	}
	if e.notModified(r) {
		for k, v := range e.header304 {
			hdr[k] = v
		}
		hdr["Age"] = hv.age
		hdr["Cache-Status"] = cacheStatus
		w.WriteHeader(http.StatusNotModified)
		return
	}
	for k, v := range e.header {
		hdr[k] = v
	}
	hdr["Age"] = hv.age
	hdr["Cache-Status"] = cacheStatus
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.body)
	}
}

// fetch forwards r to the origin (coalescing with other fetches of the same
// key), stores what may be stored and answers the client. stale, when not
// nil, is revalidated and stands in if the origin fails.
//
// key is the full key looked up; primary is its primary part, where a
// response that varies on more than Accept-Encoding leaves its marker.
func (h *Handler) fetch(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, key, primary string, stale *entry, fwd string, reqCC cacheControl) error {
	if stale == nil && fwd != "request" {
		// Coalesce concurrent misses: one request fetches, the others
		// wait for it and then look the key up again.
		for {
			h.shared.mu.Lock()
			f := h.shared.flights[key]
			if f == nil {
				f = &flight{done: make(chan struct{})}
				h.shared.flights[key] = f
				h.shared.mu.Unlock()
				defer func() {
					h.shared.mu.Lock()
					delete(h.shared.flights, key)
					h.shared.mu.Unlock()
					close(f.done)
				}()
				break
			}
			h.shared.mu.Unlock()
			select {
			case <-f.done:
			case <-r.Context().Done():
				return r.Context().Err()
			}
			if e := h.shared.get([]byte(key)); e != nil && !e.marker {
				now := h.now()
				if e.age(now) < e.lifetime {
					requests.WithLabelValues("collapsed").Inc()
					h.writeEntry(w, r, e, now, []string{h.Name + "; fwd=" + fwd + "; collapsed"})
					return nil
				}
			}
			// The leader's response was not stored (or a marker was):
			// fetch for ourselves, without waiting again.
			break
		}
	}

	gen := h.shared.generation()
	fr := h.forwardRequest(r, r.Context(), stale)
	reqTime := h.now()
	rec := &recorder{
		client:    w,
		header:    make(http.Header),
		maxBody:   h.MaxEntryBytes,
		buffer:    stale != nil, // keep the stale entry's chance to stand in
		storable:  func(status int, hdr http.Header) bool { return h.storable(status, hdr, reqCC) },
		statusFor: func(stored bool) []string { return []string{h.cacheStatus(fwd, 0, stored)} },
	}
	err := next.ServeHTTP(rec, fr)
	now := h.now()

	if err != nil || rec.status >= 500 {
		if !rec.passedThrough && stale != nil && h.staleIfErrorOK(stale, now, reqCC) {
			requests.WithLabelValues("stale_if_error").Inc()
			status := rec.status
			if err != nil || status == 0 {
				status = http.StatusBadGateway
				if he, ok := err.(caddyhttp.HandlerError); ok && he.StatusCode >= 500 {
					status = he.StatusCode
				}
			}
			h.writeEntry(w, r, stale, now, []string{h.Name + "; fwd=stale; fwd-status=" + strconv.Itoa(status) + "; detail=stale-if-error"})
			return nil
		}
		if err != nil {
			return err
		}
	}
	if rec.passedThrough {
		missCounter.Inc()
		return nil
	}
	// The origin echoes the request id it was given; keep it on the answer.
	if id := rec.header["X-Request-Id"]; id != nil {
		w.Header()["X-Request-Id"] = id
	}

	if rec.status == http.StatusNotModified && stale != nil {
		// Our validator matched: the stored body is current (RFC 9111
		// §4.3.4). Store the entry with the 304's fields and freshness.
		fresh := h.revalidated(stale, rec.header, reqTime, now)
		stored := fresh != nil && h.shared.put(fresh, gen)
		if fresh == nil {
			fresh = stale
		}
		if fwd == "request" {
			requests.WithLabelValues("refresh").Inc()
		} else {
			requests.WithLabelValues("revalidated").Inc()
		}
		h.writeEntry(w, r, fresh, now, []string{h.cacheStatus(fwd, http.StatusNotModified, stored)})
		return nil
	}

	if rec.storableResponse && !rec.overflow {
		e := h.newEntry(key, rec.status, rec.header, bytes.Clone(rec.buf.Bytes()), reqTime, now)
		if e != nil {
			e.uriTag = uriTag(r.Host, requestURI(r))
			stored := h.storeWithVary(e, primary, gen, r)
			missCounter.Inc()
			fs := 0
			if fwd != "uri-miss" && fwd != "vary-miss" {
				fs = rec.status
			}
			h.writeEntry(w, r, e, now, []string{h.cacheStatus(fwd, fs, stored)})
			return nil
		}
	}
	// Buffered but not stored: send as received.
	missCounter.Inc()
	rec.flushBuffered(h.cacheStatus(fwd, 0, false))
	return nil
}

// storeWithVary stores e, and a marker at the primary key when e varies on
// more than Accept-Encoding.
func (h *Handler) storeWithVary(e *entry, primary string, gen uint64, r *http.Request) bool {
	if len(e.vary) == 0 {
		e.key = primary
		return h.shared.put(e, gen)
	}
	m := &entry{key: primary, marker: true, vary: e.vary, cost: int64(len(primary)) + 64}
	if !h.shared.put(m, gen) {
		return false
	}
	e.key = string(h.secondaryKey([]byte(primary), e.vary, r))
	return h.shared.put(e, gen)
}

func (h *Handler) cacheStatus(fwd string, fwdStatus int, stored bool) string {
	s := h.Name + "; fwd=" + fwd
	if fwdStatus != 0 {
		s += "; fwd-status=" + strconv.Itoa(fwdStatus)
	}
	if stored {
		s += "; stored"
	}
	return s
}

// forwardRequest is r as sent to the origin: a GET (HEAD misses fill the
// cache too) with a normalised Accept-Encoding, so the encode handler picks
// exactly the coding the key names; without the client's validators and
// Range, so a full storable response comes back; with the stale entry's
// validators instead, when revalidating.
func (h *Handler) forwardRequest(r *http.Request, ctx context.Context, stale *entry) *http.Request {
	fr := r.WithContext(ctx)
	fr.Header = r.Header.Clone()
	fr.Method = http.MethodGet
	if ae := negotiate.Encoding(r.Header["Accept-Encoding"], h.Encodings); ae != "" {
		fr.Header["Accept-Encoding"] = []string{ae}
	} else {
		fr.Header["Accept-Encoding"] = []string{"identity"}
	}
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"} {
		delete(fr.Header, k)
	}
	// Announce this cache to the origin (Edge Architecture 1.0), so that
	// Surrogate-Control can target it.
	fr.Header.Add("Surrogate-Capability", h.capability)
	if stale != nil && stale.status == http.StatusOK {
		if stale.etag != "" {
			fr.Header["If-None-Match"] = []string{stale.etag}
		} else if !stale.lastMod.IsZero() {
			fr.Header["If-Modified-Since"] = []string{stale.lastMod.UTC().Format(http.TimeFormat)}
		}
	}
	return fr
}

// responseCC is the response's caching policy for this cache: its
// Surrogate-Control, when present, instead of Cache-Control (a directive
// aimed at surrogates, as in the Edge Architecture specification and RFC
// 9213's targeted fields), else Cache-Control.
func (h *Handler) responseCC(hdr http.Header) cacheControl {
	if sc := hdr["Surrogate-Control"]; sc != nil {
		return parseCacheControl(targeted(sc, h.Name))
	}
	return parseCacheControl(hdr["Cache-Control"])
}

// targeted keeps the Surrogate-Control directives meant for every
// surrogate or for target (`max-age=60;invoicewire`), without the target.
func targeted(values []string, target string) []string {
	var out []string
	for _, v := range values {
		for v != "" {
			var d string
			d, v = nextDirective(v)
			d = strings.TrimSpace(d)
			body, t, hasTarget := strings.Cut(d, ";")
			if hasTarget && !strings.EqualFold(strings.TrimSpace(t), target) {
				continue
			}
			out = append(out, strings.TrimSpace(body))
		}
	}
	return []string{strings.Join(out, ",")}
}

// understood are the status codes whose caching rules the cache knows
// (RFC 9111 §5.2.2.3, must-understand).
func understood(status int) bool {
	switch status {
	case 200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// storable decides, when the response header arrives, whether the cache
// may keep the response (RFC 9111 §3, DESIGN D13).
func (h *Handler) storable(status int, hdr http.Header, reqCC cacheControl) bool {
	switch {
	case reqCC.noStore:
		return false
	case status < 200 || status == http.StatusPartialContent || status == http.StatusNotModified || status == http.StatusTooManyRequests:
		return false
	case hdr["Set-Cookie"] != nil:
		return false
	}
	if cl := hdr.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n > h.MaxEntryBytes {
			return false
		}
	}
	if _, star := varyFields(hdr); star {
		return false
	}
	cc := h.responseCC(hdr)
	if cc.mustUnderstand {
		// Store only what is understood, and then despite no-store.
		if !understood(status) {
			return false
		}
		cc.noStore = false
	}
	if cc.noStore || cc.private || cc.noCache {
		return false
	}
	return cc.sMaxAge >= 0 || cc.maxAge >= 0 || hdr["Expires"] != nil
}

// newEntry builds the entry for a stored response, or nil when it turns out
// not to be storable.
func (h *Handler) newEntry(key string, status int, hdr http.Header, body []byte, reqTime, respTime time.Time) *entry {
	cc := h.responseCC(hdr)
	e := &entry{
		key:            key,
		status:         status,
		body:           body,
		tags:           surrogateKeys(hdr),
		respTime:       respTime,
		mustRevalidate: cc.mustRevalidate || cc.proxyRevalidate,
		upstreamStatus: strings.Join(hdr["Cache-Status"], ", "),
	}
	e.vary, _ = varyFields(hdr)
	e.lifetime, e.initialAge = freshness(cc, hdr, reqTime, respTime)
	e.swr = max(cc.staleWhileRevalidate, 0)
	e.sie = time.Duration(h.StaleIfError)
	if cc.staleIfError >= 0 {
		e.sie = cc.staleIfError
	}
	e.header = storedHeader(hdr)
	e.header["Content-Length"] = []string{strconv.Itoa(len(body))}
	e.etag = hdr.Get("ETag")
	if lm := hdr.Get("Last-Modified"); lm != "" {
		e.lastMod, _ = http.ParseTime(lm)
	}
	e.header304 = make(http.Header, len(e.header))
	for k, v := range e.header {
		switch k {
		case "Content-Length", "Content-Type", "Content-Encoding", "Content-Range":
		default:
			e.header304[k] = v
		}
	}
	e.cost = int64(len(body)) + int64(len(key)) + 1024
	return e
}

// revalidated is stale refreshed by a 304: its fields updated with the
// 304's (RFC 9111 §4.3.4) and its freshness recomputed from them.
func (h *Handler) revalidated(stale *entry, notModified http.Header, reqTime, respTime time.Time) *entry {
	hdr := make(http.Header, len(stale.header)+4)
	for k, v := range stale.header {
		hdr[k] = v
	}
	for k, v := range notModified {
		switch k {
		// Fields that describe the stored body itself are kept (RFC 9111
		// §3.2 and the cache-tests header list): its length, range,
		// digest, coding and validator. (The encode handler also suffixes
		// the ETag of encoded bodies, "-zstd", but not of bodiless 304s.)
		case "Content-Length", "Content-Encoding", "Content-Range", "Content-Md5", "Etag", "Transfer-Encoding":
			continue
		}
		hdr[k] = v
	}
	cc := h.responseCC(hdr)
	if cc.noStore || cc.private || cc.noCache {
		return nil
	}
	e := h.newEntry(stale.key, stale.status, hdr, stale.body, reqTime, respTime)
	e.vary = stale.vary
	e.uriTag = stale.uriTag
	if notModified["Surrogate-Key"] == nil {
		e.tags = stale.tags
	}
	return e
}

// freshness returns the freshness lifetime and corrected initial age (RFC
// 9111 §4.2.1, §4.2.3).
func freshness(cc cacheControl, hdr http.Header, reqTime, respTime time.Time) (lifetime, initialAge time.Duration) {
	var date time.Time
	if d := hdr.Get("Date"); d != "" {
		date, _ = http.ParseTime(d)
	}
	switch {
	case cc.sMaxAge >= 0:
		lifetime = cc.sMaxAge
	case cc.maxAge >= 0:
		lifetime = cc.maxAge
	case hdr["Expires"] != nil:
		// An invalid Expires, "0" included, is in the past (§5.3).
		exp, err := http.ParseTime(hdr.Get("Expires"))
		base := date
		if base.IsZero() {
			base = respTime
		}
		if err == nil {
			lifetime = max(exp.Sub(base), 0)
		}
	}
	var ageValue time.Duration
	if ages := hdr["Age"]; len(ages) > 0 {
		// One delta-seconds value (RFC 9111 §5.1). Anything else — a list,
		// a sign, a fraction, a parameter — cannot be trusted to say the
		// response is young, so it is taken as stale.
		if d := delta(strings.TrimSpace(ages[0]), -1); len(ages) == 1 && d >= 0 {
			ageValue = d
		} else {
			ageValue = maxDelta * time.Second
		}
	}
	apparent := time.Duration(0)
	if !date.IsZero() {
		apparent = max(respTime.Sub(date), 0)
	}
	corrected := ageValue + respTime.Sub(reqTime)
	return lifetime, max(apparent, corrected)
}

// staleIfErrorOK reports whether e may stand in for a failed origin.
func (h *Handler) staleIfErrorOK(e *entry, now time.Time, reqCC cacheControl) bool {
	if e.mustRevalidate || e.marker {
		return false
	}
	window := e.sie
	if reqCC.staleIfError >= 0 {
		window = reqCC.staleIfError
	}
	return e.age(now) < e.lifetime+window
}

// refresh revalidates e in the background, once at a time per entry. The
// request is rebuilt detached from the client's, which may be gone before
// the origin answers.
func (h *Handler) refresh(r *http.Request, next caddyhttp.Handler, key string, e *entry) {
	if !e.refreshing.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Duration(h.RefreshTimeout))
	fr := h.forwardRequest(r, ctx, e)
	// A fresh replacer and variables: the client's request finishes (and
	// its handlers go on using theirs) while this one runs.
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	fr = caddyhttp.PrepareRequest(fr, caddy.NewReplacer(), nil, srv)
	gen := h.shared.generation()
	go func() {
		defer cancel()
		defer e.refreshing.Store(false)
		defer func() {
			if p := recover(); p != nil {
				refreshes.WithLabelValues("failed").Inc()
				h.logger.Error("background refresh panicked", zap.Any("panic", p))
			}
		}()
		reqTime := h.now()
		rec := &recorder{header: make(http.Header), maxBody: h.MaxEntryBytes, buffer: true,
			storable: func(status int, hdr http.Header) bool { return h.storable(status, hdr, cacheControl{maxAge: -1}) }}
		err := next.ServeHTTP(rec, fr)
		now := h.now()
		switch {
		case err != nil || rec.status >= 500 || rec.status == 0:
			refreshes.WithLabelValues("failed").Inc()
		case rec.status == http.StatusNotModified:
			if fresh := h.revalidated(e, rec.header, reqTime, now); fresh != nil {
				h.shared.put(fresh, gen)
			}
			refreshes.WithLabelValues("not_modified").Inc()
		case rec.storableResponse && !rec.overflow:
			if ne := h.newEntry(key, rec.status, rec.header, bytes.Clone(rec.buf.Bytes()), reqTime, now); ne != nil {
				ne.vary = e.vary
				ne.uriTag = e.uriTag
				h.shared.put(ne, gen)
			}
			refreshes.WithLabelValues("stored").Inc()
		default:
			refreshes.WithLabelValues("failed").Inc()
		}
	}()
}

// recorder receives the origin's response on a miss. It buffers responses
// it may store (or must keep, for stale-if-error) and streams everything
// else to the client as it arrives (event streams, no-store bodies, bodies
// over the size bound).
type recorder struct {
	client    http.ResponseWriter // nil for background refreshes
	header    http.Header
	maxBody   int64
	buffer    bool // buffer even what will not be stored
	storable  func(int, http.Header) bool
	statusFor func(stored bool) []string

	status           int
	wroteHeader      bool
	storableResponse bool
	buffering        bool
	passedThrough    bool
	overflow         bool
	buf              bytes.Buffer
}

func (rc *recorder) Header() http.Header { return rc.header }

func (rc *recorder) WriteHeader(status int) {
	if rc.wroteHeader {
		return
	}
	if status < 200 {
		// Interim responses go straight through (103 Early Hints).
		if rc.client != nil && status != http.StatusSwitchingProtocols {
			copyHeader(rc.client.Header(), rc.header)
			rc.client.WriteHeader(status)
		}
		return
	}
	rc.wroteHeader = true
	rc.status = status
	rc.storableResponse = rc.storable(status, rc.header)
	rc.buffering = rc.storableResponse || rc.buffer
	if !rc.buffering {
		rc.passThrough()
	}
}

// passThrough starts sending the response to the client as it comes.
func (rc *recorder) passThrough() {
	rc.buffering = false
	rc.passedThrough = true
	if rc.client == nil {
		return
	}
	hdr := rc.client.Header()
	copyHeader(hdr, rc.header)
	delete(hdr, "Surrogate-Key")
	delete(hdr, "Surrogate-Control")
	if rc.statusFor != nil {
		hdr["Cache-Status"] = rc.statusFor(false)
	}
	rc.client.WriteHeader(rc.status)
}

func (rc *recorder) Write(b []byte) (int, error) {
	if !rc.wroteHeader {
		rc.WriteHeader(http.StatusOK)
	}
	if rc.buffering {
		if int64(rc.buf.Len()+len(b)) <= rc.maxBody {
			return rc.buf.Write(b)
		}
		// Too big to store: send what we have and stream the rest.
		rc.overflow = true
		rc.storableResponse = false
		if rc.client == nil {
			rc.buffering = false
			rc.passedThrough = true
			return len(b), nil
		}
		rc.passThrough()
		if _, err := rc.client.Write(rc.buf.Bytes()); err != nil {
			return 0, err
		}
		rc.buf.Reset()
	}
	if rc.client == nil {
		return len(b), nil
	}
	return rc.client.Write(b)
}

// FlushError passes flushes through once the response streams, so event
// streams reach the client event by event.
func (rc *recorder) FlushError() error {
	if rc.passedThrough && rc.client != nil {
		return http.NewResponseController(rc.client).Flush()
	}
	return nil
}

// Flush implements http.Flusher.
func (rc *recorder) Flush() { _ = rc.FlushError() }

// flushBuffered sends a buffered response that is not stored.
func (rc *recorder) flushBuffered(cacheStatus string) {
	if rc.client == nil {
		return
	}
	hdr := rc.client.Header()
	copyHeader(hdr, rc.header)
	delete(hdr, "Surrogate-Key")
	delete(hdr, "Surrogate-Control")
	hdr["Cache-Status"] = []string{cacheStatus}
	status := rc.status
	if status == 0 {
		status = http.StatusOK
	}
	rc.client.WriteHeader(status)
	_, _ = rc.client.Write(rc.buf.Bytes())
}

// copyHeader sets (not adds) every field of src on dst: fields that outer
// handlers set before the response (Vary, say) are replaced by the
// origin's, never doubled.
func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// stripWriter removes Surrogate-Key from responses that bypass the cache.
// It records the final status for invalidation.
type stripWriter struct {
	*caddyhttp.ResponseWriterWrapper
	once   sync.Once
	status int
}

func (sw *stripWriter) WriteHeader(status int) {
	if status >= 200 {
		sw.once.Do(func() {
			sw.status = status
			delete(sw.Header(), "Surrogate-Key")
			delete(sw.Header(), "Surrogate-Control")
		})
	}
	sw.ResponseWriterWrapper.WriteHeader(status)
}

func (sw *stripWriter) Write(b []byte) (int, error) {
	sw.once.Do(func() {
		sw.status = http.StatusOK
		delete(sw.Header(), "Surrogate-Key")
		delete(sw.Header(), "Surrogate-Control")
	})
	return sw.ResponseWriterWrapper.Write(b)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ http.Flusher                = (*recorder)(nil)
)
