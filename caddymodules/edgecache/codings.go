// Content codings of one stored response: the origin is asked for the
// identity body once per URL version, and each coding is compressed from
// that stored body once, by the same encode handler the Caddyfile uses
// (docs/edge-gateway.md, "Edge cache").

package edgecache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/encode"
)

// encodedCounter counts codings made from a stored identity body instead of
// asking the origin.
var encodedCounter = requests.WithLabelValues("encoded")

// CompressedTypes are the Content-Types the edge compresses, as patterns of
// Caddy's header matcher (a * at either end). Caddy's default list lacks
// the +json and +xml types this service answers with (JSON Feed,
// application/feed+json, was sent uncompressed at 177 KB), so every shipped
// Caddyfile's encode directive matches these same patterns
// (TestCompressedTypesShared in cmd/edge).
var CompressedTypes = []string{"text/*", "application/json*", "application/javascript*", "application/xml*", "*+json*", "*+xml*"}

// newEncoder provisions the encode handler the cache compresses stored
// bodies with: the codings of the encode directive inside the cache, in
// its order of preference, Caddy's minimum length and CompressedTypes, so
// an entry the cache encodes is the one the encode handler would have
// sent, ETag suffix (RFC 9110 §8.8.3.3) and Vary included.
func newEncoder(ctx caddy.Context, codings []string) (*encode.Encode, error) {
	enc := &encode.Encode{EncodingsRaw: caddy.ModuleMap{}, Prefer: codings,
		Matcher: &caddyhttp.ResponseMatcher{Headers: http.Header{"Content-Type": CompressedTypes}}}
	for _, c := range codings {
		enc.EncodingsRaw[c] = json.RawMessage("{}")
	}
	if err := enc.Provision(ctx); err != nil {
		return nil, fmt.Errorf("setting up the cache's encoders %v: %w", codings, err)
	}
	return enc, nil
}

// compressible reports whether the cache's encode handler would compress a
// response with status, header hdr and a body of n bytes (n < 0: not known,
// as for a response streamed without Content-Length) for a client that
// accepts one of its codings. head is the start of the body, which the
// encode handler sniffs a missing Content-Type from. The rules are the
// handler's own (Caddy's encode.responseWriter Write and init): a body
// longer than MinLength, no Content-Encoding, no Cache-Control:
// no-transform, and its response matcher (the content types it
// compresses).
//
// Such a response is selected by Accept-Encoding, so every variant of it,
// the identity one included, carries Vary: Accept-Encoding (RFC 9110
// §12.5.5); otherwise a shared cache downstream may store the identity
// copy as the only representation and serve it to every client. A response
// the handler never compresses (too short, another type) does not vary.
func (h *Handler) compressible(status int, hdr http.Header, n int, head []byte) bool {
	enc := h.encoder
	if enc == nil || enc.MinLength <= 0 || (n >= 0 && n <= enc.MinLength) ||
		hdr.Get("Content-Encoding") != "" || strings.Contains(hdr.Get("Cache-Control"), "no-transform") {
		return false
	}
	if enc.Matcher == nil {
		return true
	}
	if hdr.Get("Content-Type") == "" {
		if len(head) == 0 {
			// Nothing to sniff the type from (yet): the handler decides
			// on the first bytes written, which are not known here.
			return false
		}
		hdr = hdr.Clone()
		hdr.Set("Content-Type", http.DetectContentType(head))
	}
	return enc.Matcher.Match(status, hdr)
}

// identityEntry looks up the identity entry of r's target: the key (its
// primary part the first primaryLen bytes), the entry or nil, and why a
// fetch of it would go to the origin.
func (h *Handler) identityEntry(r *http.Request) (key []byte, primaryLen int, e *entry, fwd forward) {
	key = h.primaryKey(make([]byte, 0, 128), r, "")
	primaryLen = len(key)
	e = h.shared.get(key)
	fwd = fwdURIMiss
	if e != nil && e.marker {
		key = h.secondaryKey(key, e.vary, r)
		e = h.shared.get(key)
		fwd = fwdVaryMiss
	}
	return key, primaryLen, e, fwd
}

// serveCoded answers a request for coding ae that its coding's entry
// cannot answer (coded, when not nil, is that entry, stale or to be
// revalidated). From a usable identity entry the coding is made and
// stored without the origin; otherwise the identity body is fetched
// (revalidating the identity entry when there is one), stored, and the
// coding made from it, the client's answer passing through the encode
// handler so that what is not stored is still compressed.
func (h *Handler) serveCoded(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, ae string, coded *entry, codedFwd forward, reqCC cacheControl) error {
	gen := h.shared.generation()
	key, primaryLen, eid, fwd := h.identityEntry(r)
	stale := coded
	if coded != nil {
		fwd = codedFwd
	}
	if eid != nil {
		now := h.now()
		d := decide(eid, reqCC, eid.age(now))
		if h.serveFromIdentity(w, r, next, ae, key, eid, coded, d, now, gen) {
			return nil
		}
		if d.use != serveStale {
			fwd = d.fwd
		}
		stale = eid
	}
	if reqCC.onlyIfCached {
		// Neither entry may answer, and the request forbids the origin
		// (RFC 9111 §5.2.1.7, decide).
		return h.onlyIfCachedMiss(w)
	}
	// The encode handler sees only the coding: it must not strip its
	// suffix from the client's If-None-Match, which the cache compares
	// with the coded entry's ETag.
	er := &http.Request{Method: r.Method, Header: http.Header{"Accept-Encoding": {ae}}}
	return h.encoder.ServeHTTP(w, er, caddyhttp.HandlerFunc(func(ew http.ResponseWriter, _ *http.Request) error {
		return h.fetch(ew, r, next, string(key), string(key[:primaryLen]), stale, fwd, reqCC, ae)
	}))
}

// serveFromIdentity answers a request for coding ae with the coding made
// from the identity entry eid (stored under idKey, d its decision for this
// request) when eid can answer: fresh, or stale but newer than coded, the
// coding's own entry (nil when there is none), which serving would answer
// with a version the cache has already replaced. A stale eid within its
// stale-while-revalidate window is refreshed in the background. It reports
// whether it answered.
func (h *Handler) serveFromIdentity(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, ae string, idKey []byte, eid, coded *entry, d decision, now time.Time, gen uint64) bool {
	switch {
	case d.use == serveFresh:
	case d.use == serveStale && (coded == nil || eid.respTime.After(coded.respTime)):
		if d.refresh {
			h.refresh(r, next, string(idKey), eid, ae)
		}
	default:
		return false
	}
	encodedCounter.Inc()
	h.writeEntry(w, r, h.encoded(eid, ae, r, gen), now, nil)
	return true
}

// encoded returns e in coding ae: e itself when it is in that coding,
// else e compressed once by the cache's encode handler, stored beside it
// under the coding's key (unless a purge happened since gen) with e's
// freshness, tags and target.
func (h *Handler) encoded(e *entry, ae string, r *http.Request, gen uint64) *entry {
	if e.coding == ae {
		return e
	}
	// Requests waiting on one fetch (or arriving together after a purge)
	// want the same coding of the same body: compress it once.
	var kb [256]byte
	primary := string(h.primaryKey(kb[:0], r, ae))
	flightKey := "\x00encode " + primary
	if len(e.vary) > 0 {
		flightKey = "\x00encode " + string(h.secondaryKey([]byte(primary), e.vary, r))
	}
	v, _, _ := h.shared.flight.Do(flightKey, func() (any, error) {
		return h.encode(e, ae, primary, r, gen), nil
	})
	if ce := v.(*entry); ce.respTime.Equal(e.respTime) {
		return ce
	}
	// A flight for another version of the body was under way.
	return h.encode(e, ae, primary, r, gen)
}

// encode compresses e into coding ae and stores the result under primary
// (and its secondary key when e varies).
func (h *Handler) encode(e *entry, ae, primary string, r *http.Request, gen uint64) *entry {
	// The values are clipped, so the encoder's Add (Vary) copies instead
	// of writing into the stored entry's array.
	cw := &captureWriter{header: e.header.header(2)}
	cw.body.Grow(len(e.body)/3 + 64)
	er := &http.Request{Method: http.MethodGet, Header: http.Header{"Accept-Encoding": {ae}}}
	_ = h.encoder.ServeHTTP(cw, er, caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
		w.WriteHeader(e.status)
		_, err := w.Write(e.body)
		return err
	}))
	body := bytes.Clone(cw.body.Bytes())
	ce := &entry{
		status:         e.status,
		header:         packFields(cw.header, nil, http.Header{"Content-Length": {strconv.Itoa(len(body))}}),
		body:           body,
		coding:         ae,
		etag:           cw.header.Get("Etag"),
		lastMod:        e.lastMod,
		tags:           e.tags,
		uriTag:         e.uriTag,
		vary:           e.vary,
		respTime:       e.respTime,
		initialAge:     e.initialAge,
		lifetime:       e.lifetime,
		swr:            e.swr,
		sie:            e.sie,
		mustRevalidate: e.mustRevalidate,
		upstreamStatus: e.upstreamStatus,
	}
	h.storeWithVary(ce, primary, gen, r)
	return ce
}

// answer writes e to the client in coding ae (made and stored from e when
// e is the identity entry), with cacheStatus.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, e *entry, now time.Time, cacheStatus []string, ae string, gen uint64) {
	h.writeEntry(w, r, h.encoded(e, ae, r, gen), now, cacheStatus)
}

// captureWriter receives what the encode handler makes of a stored body.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captureWriter) Write(b []byte) (int, error) { return c.body.Write(b) }

// Interface guards
var _ http.ResponseWriter = (*captureWriter)(nil)
