// Requests that go to the origin: coalescing of concurrent misses
// (singleflight), the forwarded request, and what is stored and sent back.

package edgecache

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// fetch forwards r to the origin (coalescing with other fetches of the same
// key), stores what may be stored and answers the client. stale, when not
// nil, is revalidated and stands in if the origin fails.
//
// key is the full key looked up; primary is its primary part, where a
// response that varies on more than Accept-Encoding leaves its marker.
// The origin is asked for the identity body; ae is the client's coding,
// made from the stored body (codings.go).
func (h *Handler) fetch(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, key, primary string, stale *entry, fwd forward, reqCC cacheControl, ae string) error {
	if stale == nil && fwd.miss() {
		// Coalesce concurrent misses: the first request fetches (and
		// answers its own client as the response arrives); the others
		// wait for it, then look the key up again. A waiter whose client
		// leaves meanwhile still waits for the leader's fetch, which the
		// proxy's timeouts bound.
		led := false
		_, err, _ := h.shared.flight.Do(key, func() (any, error) {
			led = true
			return nil, h.fetchOrigin(w, r, next, key, primary, nil, fwd, reqCC, ae)
		})
		if led {
			return err
		}
		if err := r.Context().Err(); err != nil {
			return err
		}
		gen := h.shared.generation()
		if e := h.shared.get([]byte(key)); e != nil && !e.marker {
			now := h.now()
			if e.age(now) < e.lifetime {
				requests.WithLabelValues("collapsed").Inc()
				h.answer(w, r, e, now, []string{h.cacheStatus(forwarded{fwd: fwd, collapsed: true})}, ae, gen)
				return nil
			}
		}
		// The leader's response was not stored (or a marker was): fetch
		// for ourselves, without waiting again.
	}
	return h.fetchOrigin(w, r, next, key, primary, stale, fwd, reqCC, ae)
}

// fetchOrigin is fetch without the coalescing.
func (h *Handler) fetchOrigin(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, key, primary string, stale *entry, fwd forward, reqCC cacheControl, ae string) error {
	gen, seen := h.shared.generation(), h.shared.seen()
	fr := h.forwardRequest(r, r.Context(), stale)
	reqTime := h.now()
	rec := &recorder{
		client:  w,
		header:  make(http.Header),
		maxBody: h.MaxEntryBytes,
		buffer:  stale != nil, // keep the stale entry's chance to stand in
		storable: func(status int, hdr http.Header) bool {
			return originCurrent(hdr, seen) && h.storable(status, hdr, reqCC)
		},
		statusFor: func(stored bool) []string { return []string{h.cacheStatus(forwarded{fwd: fwd, stored: stored})} },
	}
	if ae == "" {
		// A client served identity; for the others the encode handler
		// around w adds Vary itself when it compresses.
		rec.compressible = h.compressible
	}
	if r.Header["If-Match"] != nil || r.Header["If-Unmodified-Since"] != nil {
		rec.precondition = h.passThroughPrecondition(r, ae)
	}
	err := next.ServeHTTP(rec, fr)
	now := h.now()

	if err != nil || rec.status >= 500 {
		if !rec.passedThrough && stale != nil && h.staleIfErrorOK(stale, now, reqCC) {
			requests.WithLabelValues("stale_if_error").Inc()
			// fwd is why the request went forward (a no-cache request
			// on a fresh entry is fwd=request, RFC 9211 §2.2), and
			// fwd-status the status the origin sent, none when it sent
			// none (§2.3); detail says the entry stood in.
			h.answer(w, r, stale, now, []string{h.cacheStatus(forwarded{fwd: fwd, status: rec.status, staleIfError: true})}, ae, gen)
			return nil
		}
		if err != nil {
			if !rec.passedThrough {
				// handle_errors (json_errors) answers on w, keeping this
				// field: the cache looked the request up, so its answer
				// says so as every other does (docs/edge-gateway.md,
				// "Edge cache").
				w.Header()["Cache-Status"] = []string{h.cacheStatus(forwarded{fwd: fwd, status: rec.status, noResponse: noResponse(err, rec.status)})}
			}
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
		if fwd == fwdRequest {
			requests.WithLabelValues("refresh").Inc()
		} else {
			requests.WithLabelValues("revalidated").Inc()
		}
		h.answer(w, r, fresh, now, []string{h.cacheStatus(forwarded{fwd: fwd, status: http.StatusNotModified, stored: stored})}, ae, gen)
		return nil
	}

	if rec.storableResponse && !rec.overflow {
		e := h.newEntry(key, rec.status, rec.header, rec.body(), reqTime, now)
		if e != nil {
			e.uriTag = uriTag(r.Host, requestURI(r))
			stored := h.storeWithVary(e, primary, gen, r)
			missCounter.Inc()
			f := forwarded{fwd: fwd, stored: stored}
			if !fwd.miss() {
				// A revalidation answered in full: say so.
				f.status = rec.status
			}
			h.answer(w, r, e, now, []string{h.cacheStatus(f)}, ae, gen)
			return nil
		}
	}
	// Buffered but not stored: send as received.
	missCounter.Inc()
	rec.flushBuffered(h.cacheStatus(forwarded{fwd: fwd}))
	return nil
}

// noResponse reports whether err, returned by the handlers behind the cache
// with status the origin's status (0: none came), means that no response
// came from the origin: reverse_proxy's own 5xx for a refused connection, a
// timeout or an unreadable answer. A 4xx error (a handle_response route
// turning the origin's answer into an error) had a response.
func noResponse(err error, status int) bool {
	var he caddyhttp.HandlerError
	return status == 0 && errors.As(err, &he) && he.StatusCode >= 500
}

// passThroughPrecondition evaluates r's If-Match and If-Unmodified-Since
// (RFC 9110 §13.2.2, steps 1 and 2) for a response sent without being
// stored, which reaches the client as the origin sent it but for the
// coding: for a client served coding ae, the encode handler around the
// client's writer compresses what it can and suffixes a strong ETag with
// the coding (RFC 9110 §8.8.3.3), so If-Match is compared with that tag.
// Answers other than a 200 ignore the preconditions (RFC 9110 §13.2.1).
// When they are false, it answers 412 on w, the client's writer, and
// reports true.
func (h *Handler) passThroughPrecondition(r *http.Request, ae string) func(http.ResponseWriter, int, http.Header, int, []byte, []string) bool {
	return func(w http.ResponseWriter, status int, hdr http.Header, n int, head []byte, cacheStatus []string) bool {
		if status != http.StatusOK {
			return false
		}
		etag := hdr.Get("ETag")
		if ae != "" && strings.HasPrefix(etag, `"`) && h.compressible(status, hdr, n, head) {
			etag = strings.TrimSuffix(etag, `"`) + "-" + ae + `"`
		}
		lastMod, _ := http.ParseTime(hdr.Get("Last-Modified"))
		if !httpheader.PreconditionFailed(r.Header, etag, lastMod) {
			return false
		}
		preconditionFailed(w, r, cacheStatus)
		return true
	}
}

// storeWithVary stores e, and a marker at the primary key when e varies on
// more than Accept-Encoding.
func (h *Handler) storeWithVary(e *entry, primary string, gen uint64, r *http.Request) bool {
	if len(e.vary) == 0 {
		e.key = primary
		return h.shared.put(e, gen)
	}
	m := &entry{key: primary, marker: true, vary: e.vary}
	if !h.shared.put(m, gen) {
		return false
	}
	e.key = string(h.secondaryKey([]byte(primary), e.vary, r))
	return h.shared.put(e, gen)
}

// forwardRequest is r as sent to the origin: a GET (HEAD misses fill the
// cache too) asking for the identity coding, which the cache stores and
// compresses itself (codings.go), so the encode handler behind the cache
// leaves it alone; without the client's validators and
// Range, so a full storable response comes back; with the stale entry's
// validators instead, when revalidating.
func (h *Handler) forwardRequest(r *http.Request, ctx context.Context, stale *entry) *http.Request {
	fr := r.WithContext(ctx)
	fr.Header = r.Header.Clone()
	fr.Method = http.MethodGet
	fr.Header["Accept-Encoding"] = []string{"identity"}
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"} {
		delete(fr.Header, k)
	}
	// Announce this cache to the origin (Edge Architecture 1.0), so that
	// Surrogate-Control can target it.
	fr.Header.Add("Surrogate-Capability", h.capability)
	if stale != nil && stale.status == http.StatusOK {
		if stale.etag != "" {
			fr.Header["If-None-Match"] = []string{identityETag(stale.etag, stale.coding)}
		} else if !stale.lastMod.IsZero() {
			fr.Header["If-Modified-Since"] = []string{stale.lastMod.UTC().Format(http.TimeFormat)}
		}
	}
	return fr
}

// identityETag is the origin's ETag of a stored coding: the encode handler
// appends "-<coding>" to a strong ETag (RFC 9110 §8.8.3.3), which the
// origin does not know; weak ETags are the same for every coding.
func identityETag(etag, coding string) string {
	if coding == "" || strings.HasPrefix(etag, "W/") {
		return etag
	}
	if before, ok := strings.CutSuffix(etag, "-"+coding+`"`); ok {
		return before + `"`
	}
	return etag
}
