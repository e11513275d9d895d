// The cache's HTTP caching policy (RFC 9111, RFC 5861, Edge Architecture
// 1.0): what may be stored, for how long, and how a stored response may
// answer a request. Nothing here does I/O or touches the shared state.

package edgecache

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// safeMethod reports whether m is safe (RFC 9110 §9.2.1); any other method,
// unknown ones included, may change the target.
func safeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
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
// may keep the response (RFC 9111 §3, docs/decisions.md (edge cache)).
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
	// Computed once here rather than on every hit: a representation the
	// encode handler would compress varies on Accept-Encoding also in
	// identity (compressible, RFC 9110 §12.5.5), and the stored field is
	// then written as it is on hits and their 304s (RFC 9110 §15.4.5).
	var vary []string
	if h.compressible(status, hdr, len(body), body) {
		vary = withVaryMember(hdr["Vary"], "Accept-Encoding")
	}
	e.header = storedHeader(hdr, strconv.Itoa(len(body)), vary)
	e.etag = hdr.Get("ETag")
	if lm := hdr.Get("Last-Modified"); lm != "" {
		e.lastMod, _ = http.ParseTime(lm)
	}
	return e
}

// revalidated is stale refreshed by a 304: its fields updated with the
// 304's (RFC 9111 §4.3.4) and its freshness recomputed from them.
func (h *Handler) revalidated(stale *entry, notModified http.Header, reqTime, respTime time.Time) *entry {
	hdr := stale.header.header(4)
	// The 304's Vary replaces the stored one, but the origin, asked for
	// identity, does not know that the edge's codings make the
	// representation vary on Accept-Encoding: the member the stored entry
	// had stays (a coding's entry has its Content-Encoding, so newEntry
	// would not add it again).
	varyCoding := hasVaryMember(hdr["Vary"], "Accept-Encoding")
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
	if varyCoding {
		hdr["Vary"] = withVaryMember(hdr["Vary"], "Accept-Encoding")
	}
	cc := h.responseCC(hdr)
	if cc.noStore || cc.private || cc.noCache {
		return nil
	}
	e := h.newEntry(stale.key, stale.status, hdr, stale.body, reqTime, respTime)
	e.coding = stale.coding
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

// use is what the cache does with a stored response.
type use uint8

const (
	// serveFresh: the response is fresh and the request accepts it.
	serveFresh use = iota + 1
	// serveStale: the response is stale but may be served so.
	serveStale
	// revalidate: the request goes to the origin, with the response's
	// validators.
	revalidate
	// onlyStored: the response may not answer the request as it stands,
	// and the request forbids going to the origin (only-if-cached): the
	// answer is the 504 (RFC 9111 §5.2.1.7).
	onlyStored
)

// decision is what decide chose.
type decision struct {
	use use
	// refresh (with serveStale): the response is within its
	// stale-while-revalidate window, so it is refreshed in the background.
	refresh bool
	// fwd (with revalidate): why the request goes to the origin.
	fwd forward
}

// decide chooses how a request with the directives reqCC is answered from
// e, stored age ago. Fresh responses are served unless the request asks
// for validation or a younger response (RFC 9111 §5.2.1: no-cache,
// max-age, min-fresh). Stale ones are served within stale-while-revalidate
// (RFC 5861 §3; see docs/edge-gateway.md on s-maxage) or the request's
// max-stale, unless must-revalidate or proxy-revalidate forbids it (RFC
// 9111 §4.2.4); otherwise the request revalidates at the origin.
//
// A request with only-if-cached takes what the other directives let the
// stored response answer, as any other request would, and never goes to
// the origin (RFC 9111 §5.2.1.7): where it would revalidate (no-cache, a
// max-age or min-fresh the response does not meet, a stale response that
// may not be served so) the answer is the 504 (docs/edge-gateway.md, "Edge
// cache"). A stale response it is served is refreshed in the background
// as for any other request: that is the cache's own request, not the
// client's.
func decide(e *entry, reqCC cacheControl, age time.Duration) decision {
	acceptable := !reqCC.noCache &&
		(reqCC.maxAge < 0 || age <= reqCC.maxAge) &&
		(reqCC.minFresh < 0 || e.lifetime-age >= reqCC.minFresh)
	if !acceptable {
		return revalidation(reqCC, fwdRequest)
	}
	if age < e.lifetime {
		return decision{use: serveFresh}
	}
	withinSWR := age < e.lifetime+e.swr
	if !e.mustRevalidate && (withinSWR || reqCC.maxStaleAny || (reqCC.maxStale >= 0 && age <= e.lifetime+reqCC.maxStale)) {
		return decision{use: serveStale, refresh: withinSWR}
	}
	return revalidation(reqCC, fwdStale)
}

// revalidation is the decision to go to the origin for the reason fwd,
// unless the request forbids it (only-if-cached).
func revalidation(reqCC cacheControl, fwd forward) decision {
	if reqCC.onlyIfCached {
		return decision{use: onlyStored}
	}
	return decision{use: revalidate, fwd: fwd}
}
