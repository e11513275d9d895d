// Package edgecache provides the edge_cache handler (docs/decisions.md (cache headers), docs/decisions.md (edge cache)): an
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
//     entry's ETag, and refreshes the entry. With only-if-cached, a request
//     never goes to the origin: what would is answered 504 (decide).
//   - Conditional requests are answered from the entry as the origin
//     answers them (RFC 9110 §13.2.2): a false If-Match or
//     If-Unmodified-Since with the JSON 412, never stored; a matching
//     If-None-Match or If-Modified-Since with 304.
//   - The cache sits outside the encode handler: each content coding is a
//     separate entry keyed by the normalised Accept-Encoding, so a hit
//     writes stored bytes as they are. The origin is asked for the identity
//     body once per version; the cache compresses the other codings from
//     it with its own encode handler (codings.go). Fields Vary names beyond
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
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/encode"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"golang.org/x/net/http/httpguts"

	"github.com/invoicewire/invoicewire/caddymodules/internal/memorybudget"
	"github.com/invoicewire/invoicewire/caddymodules/internal/negotiate"
	"github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
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
		Help:      "Requests seen by the edge cache, by outcome: hit, stale (served while revalidating), encoded (a coding made from the stored identity body), miss, revalidated, refresh (client no-cache), stale_if_error, collapsed, bypass.",
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
	fieldSets = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "caddy",
		Subsystem: "edge_cache",
		Name:      "field_sets",
		Help:      "Sets of header fields the edge caches keep once for many stored responses (docs/edge-gateway.md, \"Fields stored once\"); past 256 a cache keeps new sets in each record.",
	})

	hitCounter  = requests.WithLabelValues("hit")
	staleCount  = requests.WithLabelValues("stale")
	missCounter = requests.WithLabelValues("miss")
)

var pool = caddy.NewUsagePool()

// Handler is the edge cache.
type Handler struct {
	// Name is the cache's identifier in Cache-Status. Default Invoicewire.
	Name string `json:"name,omitempty"`
	// MaxBytes bounds the memory of stored responses: the size of the
	// rings records are stored in, allocated once. Default 192 MiB, the
	// split with the collector's room that served make bench-traffic best
	// within the edge's memory limit (docs/edge-gateway.md, "Memory").
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

	shared *shared
	// encoder compresses stored identity bodies into the other codings.
	encoder    *encode.Encode
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
		h.MaxBytes = 192 << 20
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
	if err := metrics.Register(ctx.GetMetricsRegistry(), requests, purges, refreshes, fieldSets); err != nil {
		return err
	}
	enc, err := newEncoder(ctx, h.Encodings)
	if err != nil {
		return err
	}
	h.encoder = enc
	key := fmt.Sprintf("%s|%d|%s", h.Name, h.MaxBytes, h.Redis)
	v, _, err := pool.LoadOrNew(key, func() (caddy.Destructor, error) {
		// The invalidation follower logs through slog; zapslog carries
		// its records into Caddy's logging as this module's.
		slogger := slog.New(zapslog.NewHandler(h.logger.Core(), zapslog.WithName(h.logger.Name())))
		s, err := newShared(h.MaxBytes, h.Redis, slogger)
		if err != nil {
			return nil, err
		}
		// The cache's bytes count towards the edge's soft memory limit
		// while this cache exists (docs/edge-gateway.md, "Memory").
		s.budget = "edge_cache " + key
		memorybudget.Reserve(s.budget, reservedBytes(h.MaxBytes))
		return s, nil
	})
	if err != nil {
		return fmt.Errorf("edge_cache: setting up the cache: %w", err)
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
		return h.bypass(w, r, next, fwdMethod)
	}
	if _, ok := r.Header["Authorization"]; ok {
		// Responses to authorised requests are the client's own (RFC 9111
		// §3.5); the edge neither stores nor serves them.
		return h.bypass(w, r, next, fwdBypass)
	}
	var kb [256]byte
	ae := negotiate.Encoding(r.Header["Accept-Encoding"], h.Encodings)
	key := h.primaryKey(kb[:0], r, ae)
	buf := hitBuffers.Get().(*[]byte)
	defer releaseBuffer(buf)
	e := h.shared.lookup(key, buf)
	fwd := fwdURIMiss
	primaryLen := len(key)
	if e != nil && e.marker {
		key = h.secondaryKey(key, e.vary, r)
		e = h.shared.lookup(key, buf)
		fwd = fwdVaryMiss
	}

	var reqCC cacheControl
	ccValues := r.Header["Cache-Control"]
	if ccValues != nil {
		reqCC = parseCacheControl(ccValues)
	} else {
		reqCC = parseCacheControl(nil)
		// RFC 9111 §5.4: Pragma: no-cache means no-cache when there is
		// no Cache-Control. The token is matched as a list element
		// (case-insensitively), not as a substring.
		reqCC.noCache = httpguts.HeaderValuesContainsToken(r.Header["Pragma"], "no-cache")
	}

	if e != nil {
		now := h.now()
		switch d := decide(e, reqCC, e.age(now)); d.use {
		case serveFresh:
			hitCounter.Inc()
			h.writeEntry(w, r, e, now, nil)
			return nil
		case serveStale:
			// A stale entry may be refreshed in the background, a
			// coding made from it: its body must outlive buf.
			e.own()
			refreshKey, refreshed := string(key), e
			if ae != "" && d.refresh {
				// A coding is refreshed through the identity body,
				// which may have been refreshed since this coding was
				// made. Then the coding is made from it, fresh or
				// stale: serving the older coding would answer with a
				// version the cache has already replaced.
				gen := h.shared.generation()
				idKey, _, eid, _ := h.identityEntry(r)
				if eid != nil && eid.respTime.After(e.respTime) &&
					h.serveFromIdentity(w, r, next, ae, idKey, eid, e, decide(eid, reqCC, eid.age(now)), now, gen) {
					return nil
				}
				refreshKey = string(idKey)
				if eid != nil {
					refreshed = eid
				}
			}
			staleCount.Inc()
			if d.refresh {
				h.refresh(r, next, refreshKey, refreshed, ae)
			}
			h.writeEntry(w, r, e, now, nil)
			return nil
		default:
			if d.use == onlyStored && ae == "" {
				return h.onlyIfCachedMiss(w)
			}
			// Revalidated or standing in for a failing origin, e may
			// be stored again: its body must outlive buf.
			e.own()
			if ae != "" {
				// The identity entry may still answer (only-if-cached
				// included); serveCoded decides.
				return h.serveCoded(w, r, next, ae, e, d.fwd, reqCC)
			}
			// Revalidate in the foreground, keeping e for
			// stale-if-error.
			return h.fetch(w, r, next, string(key), string(key[:primaryLen]), e, d.fwd, reqCC, "")
		}
	}
	if ae != "" {
		return h.serveCoded(w, r, next, ae, nil, fwd, reqCC)
	}
	if reqCC.onlyIfCached {
		return h.onlyIfCachedMiss(w)
	}
	return h.fetch(w, r, next, string(key), string(key[:primaryLen]), nil, fwd, reqCC, "")
}

// onlyIfCachedMiss is the answer to only-if-cached when nothing stored may
// answer the request: nothing is, or what is may not answer the request's
// other directives without the origin (RFC 9111 §5.2.1.7, decide). Its
// Cache-Status has neither hit nor fwd, since nothing was served from the
// cache or forwarded; detail says why (RFC 9211 §2.8). json_errors writes
// the answer on w and keeps the field.
func (h *Handler) onlyIfCachedMiss(w http.ResponseWriter) error {
	w.Header()["Cache-Status"] = []string{h.Name + "; detail=only-if-cached"}
	e := apierror.New(http.StatusGatewayTimeout, "No stored response may answer this request, and it asked for a stored one only.", "Retry without Cache-Control: only-if-cached, or without the directives (no-cache, max-age, min-fresh) the stored response does not meet.")
	return caddyhttp.Error(http.StatusGatewayTimeout, e)
}

// bypass passes r through without using the cache; its answer gets the
// fields the cache's own answers get, and loses those meant for the edge
// (stripWriter). A successful unsafe request invalidates what the cache
// holds for its target and for the Location and Content-Location it names
// (RFC 9111 §4.4).
func (h *Handler) bypass(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, fwd forward) error {
	requests.WithLabelValues("bypass").Inc()
	w.Header()["Cache-Status"] = []string{h.cacheStatus(forwarded{fwd: fwd})}
	sw := &stripWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, compressible: h.compressible}
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

// writeEntry sends e to the client. extraStatus, when set, replaces the hit
// Cache-Status (for responses served after a forward).
func (h *Handler) writeEntry(w http.ResponseWriter, r *http.Request, e *entry, now time.Time, cacheStatus []string) {
	hdr := w.Header()
	hv := e.values(now, h.Name)
	if cacheStatus == nil {
		cacheStatus = hv.cacheStatus
	}
	// The client's id, as the origin would echo it (respond.EchoRequestID).
	// A stored error (a 404, a 410) is an error the edge answers, so it
	// names an id even when the client sent none, for the client to quote
	// (docs/edge-gateway.md, errors); a success names only the client's,
	// so hits never pay for making one.
	if e.status >= 400 {
		if id := jsonerrors.RequestID(r, "X-Request-Id"); id != "" {
			hdr["X-Request-Id"] = []string{id}
		}
	} else if id := r.Header["X-Request-Id"]; len(id) == 1 && httpheader.ValidRequestID(id[0]) {
		hdr["X-Request-Id"] = id
	}
	switch e.precondition(r) {
	case http.StatusNotModified:
		e.header.setInto(hdr, bodyField)
		hdr["Age"] = hv.age
		hdr["Cache-Status"] = cacheStatus
		w.WriteHeader(http.StatusNotModified)
		return
	case http.StatusPreconditionFailed:
		preconditionFailed(w, r, cacheStatus)
		return
	}
	e.header.setInto(hdr, nil)
	hdr["Age"] = hv.age
	hdr["Cache-Status"] = cacheStatus
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.body)
	}
}

// preconditionFailed answers 412 where the origin would (RFC 9110
// §13.2.2, docs/edge-gateway.md, "Edge cache"): the JSON error the origin
// sends, with the fields json_errors gives every error of the edge — the
// request id made as it makes it, which a hit would otherwise not name —
// and Cache-Status, and none of the stored response's fields. Like every
// edge error it is no-store: it depends on the request's fields, and the
// cache never keeps it either (it is written to the client, never
// recorded). A HEAD gets the fields a GET gets, Content-Length included
// (RFC 9110 §9.3.2).
func preconditionFailed(w http.ResponseWriter, r *http.Request, cacheStatus []string) {
	hdr := w.Header()
	hdr["Cache-Control"] = noStore
	hdr["Access-Control-Allow-Origin"] = allowOrigin
	hdr["Access-Control-Expose-Headers"] = exposeHeaders
	if cacheStatus != nil {
		hdr["Cache-Status"] = cacheStatus
	}
	if id := jsonerrors.RequestID(r, "X-Request-Id"); id != "" {
		hdr["X-Request-Id"] = []string{id}
	}
	delete(hdr, "Etag")
	delete(hdr, "Content-Encoding")
	hdr["Content-Type"] = jsonType
	hdr["X-Content-Type-Options"] = noSniff
	hdr["Content-Length"] = preconditionFailedLength
	w.WriteHeader(http.StatusPreconditionFailed)
	if r.Method != http.MethodHead {
		_, _ = w.Write(preconditionFailedBody)
	}
}

var (
	preconditionFailedBody   = apierror.PreconditionFailed().Body()
	preconditionFailedLength = []string{strconv.Itoa(len(preconditionFailedBody))}
	jsonType                 = []string{"application/json"}
	noSniff                  = []string{httpheader.NoSniff}
)

var (
	noStore       = []string{"no-store"}
	allowOrigin   = []string{httpheader.AllowOrigin}
	exposeHeaders = []string{httpheader.ExposeHeaders}
)

// reservedBytes is the memory a cache of maxBytes holds: its rings, its
// indexes, 16 bytes an entry grown by doubling, at most a 32nd of the
// rings for entries of 1 KiB or more, and its dictionary of fields
// (headerdict.go).
func reservedBytes(maxBytes int64) int64 { return maxBytes + maxBytes/32 + dictBytes }

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
