package edgecache

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// entry is one stored response, as read from its record (record.go): each
// lookup gets an entry of its own, whose strings and body share the one
// copy of the record the store made. It is never changed once stored — a
// revalidation stores a new entry — and a hit writes its body as it is,
// without recompressing.
type entry struct {
	key    string
	status int
	// header is the stored response header, without the fields the cache
	// computes per response (Age, Date, Cache-Status) and those it must
	// not replay (Surrogate-Key, hop-by-hop fields, Set-Cookie), packed
	// (fields.go).
	header fields
	body   []byte
	// coding is the body's content coding, "" for identity: codings are
	// made from the identity entry (codings.go).
	coding  string
	etag    string
	lastMod time.Time
	// tags are the surrogate keys, space-separated in one string of the
	// entry's own: a []string of substrings of the origin's field was a
	// pointer a tag, and kept that field alive, for the collector to mark
	// in every cycle (docs/edge-gateway.md, "Traffic").
	tags string
	// uriTag names the request target the entry answers, so that an
	// unsafe request to it invalidates every variant (RFC 9111 §4.4).
	uriTag string

	// vary lists the request fields, other than Accept-Encoding (always in
	// the key), that select this response. On a marker entry it tells how
	// to build the secondary key; marker entries have no response.
	vary   []string
	marker bool

	// Freshness (RFC 9111 §4.2): the response was received at respTime with
	// an age of initialAge; it is fresh for lifetime, then may be served
	// stale for swr while it is refreshed in the background, or for sie
	// when the origin fails.
	respTime       time.Time
	initialAge     time.Duration
	lifetime       time.Duration
	swr, sie       time.Duration
	mustRevalidate bool

	// upstreamStatus is a Cache-Status received from upstream caches, to
	// which ours is appended (RFC 9211 §2: the last member is closest to
	// the user).
	upstreamStatus string
}

type hitValues struct {
	age         []string
	cacheStatus []string
	// both backs age and cacheStatus: one allocation for the two.
	both [2]string
}

// age is the entry's current age (RFC 9111 §4.2.3).
func (e *entry) age(now time.Time) time.Duration {
	return e.initialAge + now.Sub(e.respTime)
}

// values returns Age and Cache-Status for a hit at now: two allocations
// (the values and one string holding both), not five.
func (e *entry) values(now time.Time, name string) *hitValues {
	age := e.age(now)
	ageSec := int64(age / time.Second)
	// RFC 9211 §2.2: ttl is negative once stale; round down so that a
	// response 0.1 s past freshness already reads -1.
	ttl := int64(math.Floor((e.lifetime - age).Seconds()))
	var buf [128]byte
	b := strconv.AppendInt(buf[:0], ageSec, 10)
	n := len(b)
	b = appendHitStatus(b, name, e.upstreamStatus, ttl)
	both := string(b)
	hv := &hitValues{both: [2]string{both[:n], both[n:]}}
	hv.age, hv.cacheStatus = hv.both[0:1:1], hv.both[1:2:2]
	return hv
}

// precondition applies the request's conditional fields to the entry in
// the order of RFC 9110 §13.2.2, with the rules the origin applies
// (httpheader.PreconditionFailed), and returns the status to answer: 412
// when If-Match (the strong comparison with this entry's ETag, which for a
// coding is the coding's own, suffixed by the encode handler) or, without
// it, If-Unmodified-Since is false; 304 when If-None-Match (the weak
// comparison) matches or, without it, If-Modified-Since is no earlier than
// Last-Modified; else the entry's status. A stored answer other than a 200
// ignores them all (RFC 9110 §13.2.1): a stored 404 stays a 404.
func (e *entry) precondition(r *http.Request) int {
	if e.status != http.StatusOK {
		return e.status
	}
	if httpheader.PreconditionFailed(r.Header, e.etag, e.lastMod) {
		return http.StatusPreconditionFailed
	}
	if inm := r.Header["If-None-Match"]; len(inm) > 0 {
		if e.etag != "" && etagMatch(inm, e.etag) {
			return http.StatusNotModified
		}
		return e.status
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !e.lastMod.IsZero() {
		if t, err := http.ParseTime(ims); err == nil && !e.lastMod.After(t) {
			return http.StatusNotModified
		}
	}
	return e.status
}

// etagMatch is the weak comparison of RFC 9110 §8.8.3.2 over a list.
func etagMatch(values []string, etag string) bool {
	etag = strings.TrimPrefix(etag, "W/")
	n := 0
	for _, v := range values {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			if n++; n > 64 {
				return false
			}
			part = strings.TrimSpace(part)
			if part == "*" || strings.TrimPrefix(part, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// bodyField reports whether field k describes the body, and so is left
// out of a 304 answered from the entry (RFC 9110 §15.4.5). It is asked
// while writing rather than kept as a second header map per entry, which
// cost about a kilobyte of every stored variant.
func bodyField(k string) bool {
	switch k {
	case "Content-Length", "Content-Type", "Content-Encoding", "Content-Range":
		return true
	}
	return false
}

// dropOnStore are response fields never replayed from the cache: hop-by-hop
// fields (RFC 9110 §7.6.1), what the cache computes itself (Age, Date),
// what it strips (Surrogate-Key, docs/decisions.md (cache headers); Surrogate-Control, which
// targets this cache only) and per-request fields. Date is kept: it is the
// origin's, and Age says how old it is (RFC 9110 §6.6.1).
var dropOnStore = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Age": true, "Surrogate-Key": true, "Surrogate-Control": true,
	"Set-Cookie": true, "X-Request-Id": true, "Cache-Status": true,
}

// storedHeader packs the fields of h worth storing, with Content-Length
// set to contentLength and, when vary is not nil, Vary set to vary
// (withVaryMember).
func storedHeader(h http.Header, contentLength string, vary []string) fields {
	override := http.Header{"Content-Length": {contentLength}}
	if vary != nil {
		override["Vary"] = vary
	}
	var named []string
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			named = append(named, http.CanonicalHeaderKey(strings.TrimSpace(f)))
		}
	}
	return packFields(h, func(k string) bool {
		return dropOnStore[k] || slices.Contains(named, k)
	}, override)
}

// surrogateKeys returns the keys of h's Surrogate-Key values
// (space-separated, docs/decisions.md (cache headers)) as one new string,
// each key followed by a space.
func surrogateKeys(h http.Header) string {
	var b strings.Builder
	for _, v := range h["Surrogate-Key"] {
		for k := range strings.FieldsSeq(v) {
			b.WriteString(k)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// varyFields returns the request fields Vary names, other than
// Accept-Encoding, and whether Vary is "*" (never reusable).
func varyFields(h http.Header) (fields []string, star bool) {
	for _, v := range h["Vary"] {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			switch {
			case f == "":
			case f == "*":
				return nil, true
			case strings.EqualFold(f, "Accept-Encoding"):
			default:
				fields = append(fields, http.CanonicalHeaderKey(f))
			}
		}
	}
	return fields, false
}

// hasVaryMember reports whether the Vary field values list field (a
// case-insensitive comparison of the comma-separated members, RFC 9110
// §12.5.5).
func hasVaryMember(values []string, field string) bool {
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), field) {
				return true
			}
		}
	}
	return false
}

// withVaryMember returns the Vary field values with field among their
// members: values itself when it is there already, else a new slice of
// values and one more field line, as the encode handler adds it (the
// recipient combines the lines into one list, RFC 9110 §5.3), so that an
// existing Vary: Accept stays and no member is listed twice. values is
// never written to: it may be the origin's or a stored entry's.
func withVaryMember(values []string, field string) []string {
	if hasVaryMember(values, field) {
		return values
	}
	out := make([]string, len(values), len(values)+1)
	copy(out, values)
	return append(out, field)
}
