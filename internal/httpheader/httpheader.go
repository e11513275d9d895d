// Package httpheader holds the header values every Invoicewire response
// shares, written once for the origin's writer and the edge's error
// responder: the CORS lists, the strong ETag of a body, the comparisons
// of the conditional fields (If-Match, If-Unmodified-Since, If-None-Match,
// If-Modified-Since) and the bytes a URI query may hold as they are.
package httpheader

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// CORS values. Every route is public and no answer depends on cookies, so
// any web page may read any answer.
const (
	// AllowOrigin is Access-Control-Allow-Origin.
	AllowOrigin = "*"
	// ExposeHeaders is Access-Control-Expose-Headers: every response header
	// a browser client may need to read, on every route (rate limits,
	// validators, deprecation, cache status, the request id, the
	// signatures directory's signature and digest, MCP's session headers,
	// and the write flow's: the 401's challenge, a created resource's
	// Location, an idempotent replay's mark, a 405's Allow). A header
	// outside the CORS-safelisted few and not listed here is hidden from
	// scripts (Fetch standard, "CORS-safelisted response-header name").
	ExposeHeaders = "RateLimit, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, " +
		"ETag, Deprecation, Sunset, Link, Cache-Status, Age, X-Request-Id, " +
		"Signature, Signature-Input, Content-Digest, Mcp-Session-Id, MCP-Protocol-Version, " +
		"WWW-Authenticate, Location, Idempotency-Replayed, Allow"
	// AllowHeaders is Access-Control-Allow-Headers of a preflight: every
	// request header some route reads.
	// The edge answers every preflight itself with this same list (each
	// Caddyfile's @preflight block; TestPreflightListsAreShared).
	AllowHeaders = "Authorization, Content-Type, Idempotency-Key, Accept, Accept-Language, Cache-Control, " +
		"If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since, X-Request-Id, " +
		"Last-Event-ID, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name"
	// MaxAge is Access-Control-Max-Age: browsers may keep a preflight's
	// answer for a day.
	MaxAge = "86400"
	// NoSniff is X-Content-Type-Options.
	NoSniff = "nosniff"
)

// ETag is the strong validator of body: the first 18 bytes of its SHA-256
// in base64url, quoted. The same bytes get the same tag on every origin, so
// edges and clients revalidate across restarts.
func ETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

// MatchesETag applies If-None-Match (its header values) to etag with the
// weak comparison RFC 9110 §13.1.2 prescribes for it; "*" matches any
// current representation.
func MatchesETag(values []string, etag string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "*" || strings.TrimPrefix(part, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// MaxListMembers bounds the entity tags read from an If-Match list: a
// client may send thousands, and each is compared. A longer list is judged
// by its first MaxListMembers members.
const MaxListMembers = 64

// ReplayOnly is the request field by which the edge tells the origin that
// a registration's register budget is spent: the origin may answer only
// with the replay of an answer stored under the request's Idempotency-Key,
// and otherwise creates nothing (docs/decisions.md, "Rate-limit budgets").
// The edge removes it from every registration a client sends, and sets it
// with SetForOrigin, so that no Connection option of the client's removes
// it in turn; sent by a client on another route, it can only deny that
// client its own request.
const ReplayOnly = "X-Invoicewire-Replay-Only"

// SetForOrigin sets the request field name to value in h, the header of a
// request the edge passes on to the origin, and removes name from the
// request's Connection options. A proxy deletes every field that
// Connection names before it forwards a request (RFC 9110 §7.6.1), and so
// does Caddy's reverse_proxy, after the handlers have run: a client that
// listed, say, ReplayOnly in Connection would otherwise remove the field
// the edge set for the origin, and the origin would act as if the edge had
// not spoken (docs/decisions.md, "Rate-limit budgets"). Fields the
// edge sets with reverse_proxy's header_up are applied after that removal
// and need no such care.
func SetForOrigin(h http.Header, name, value string) {
	h.Set(name, value)
	dropConnectionOption(h, name)
}

// dropConnectionOption removes name from the options of h's Connection
// fields, compared as Caddy's reverse_proxy compares them when it deletes
// the fields they name (trimmed, canonical key); a Connection field left
// without options is removed.
func dropConnectionOption(h http.Header, name string) {
	values := h["Connection"]
	name = http.CanonicalHeaderKey(name)
	if !connectionNames(values, name) {
		return
	}
	var kept []string
	for _, v := range values {
		var opts []string
		for opt := range strings.SplitSeq(v, ",") {
			if opt = textproto.TrimString(opt); opt != "" && http.CanonicalHeaderKey(opt) != name {
				opts = append(opts, opt)
			}
		}
		if len(opts) > 0 {
			kept = append(kept, strings.Join(opts, ", "))
		}
	}
	if len(kept) == 0 {
		delete(h, "Connection")
		return
	}
	h["Connection"] = kept
}

// connectionNames reports whether the Connection field values list name,
// a canonical key.
func connectionNames(values []string, name string) bool {
	for _, v := range values {
		for opt := range strings.SplitSeq(v, ",") {
			if http.CanonicalHeaderKey(textproto.TrimString(opt)) == name {
				return true
			}
		}
	}
	return false
}

// MatchesStrong applies If-Match (its header values) to etag, the strong
// validator of the representation that would be sent, with the strong
// comparison RFC 9110 §13.1.1 prescribes: "*" matches any current
// representation, a weak tag matches nothing, and neither does any tag
// when etag is "" or weak. Only the first MaxListMembers members count.
// False means the precondition failed: 412 (RFC 9110 §13.2.2, step 1).
func MatchesStrong(values []string, etag string) bool {
	strong := etag != "" && !strings.HasPrefix(etag, "W/")
	n := 0
	for _, v := range values {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			part = strings.TrimSpace(part)
			if part == "" {
				// An empty list element (RFC 9110 §5.6.1) is not a member.
				continue
			}
			if n++; n > MaxListMembers {
				return false
			}
			if part == "*" || (strong && part == etag) {
				return true
			}
		}
	}
	return false
}

// ModifiedSince applies If-Unmodified-Since (its header values) to a
// representation last modified at lastMod (RFC 9110 §13.1.4): true, the
// precondition failed (412), when the field holds one valid HTTP-date
// earlier than lastMod, compared in whole seconds as Last-Modified carries
// them. A zero lastMod (no Last-Modified), no field, several values or an
// invalid date are ignored: false. The caller applies it only when the
// request carries no If-Match, which takes precedence (RFC 9110 §13.2.2).
func ModifiedSince(values []string, lastMod time.Time) bool {
	if lastMod.IsZero() || len(values) != 1 {
		return false
	}
	since, err := http.ParseTime(values[0])
	if err != nil {
		return false
	}
	return lastMod.Truncate(time.Second).After(since)
}

// PreconditionFailed evaluates the first two steps of RFC 9110 §13.2.2 for
// h, the request's header, against the 2xx representation that would be
// sent (its strong etag, "" for none, and lastMod, zero for none): If-Match
// when present, else If-Unmodified-Since. True means 412 Precondition
// Failed. The origin and the edge cache both call it, so a stored answer
// and the origin's agree. The caller applies it only to responses that
// would be 2xx without the preconditions (RFC 9110 §13.2.1), before
// If-None-Match and If-Modified-Since.
func PreconditionFailed(h http.Header, etag string, lastMod time.Time) bool {
	if im := h["If-Match"]; im != nil {
		return !MatchesStrong(im, etag)
	}
	return ModifiedSince(h["If-Unmodified-Since"], lastMod)
}

// NotModifiedSince applies If-Modified-Since (its header values) to a
// representation last modified at lastMod (RFC 9110 §13.1.3): true when the
// field holds one valid HTTP-date no earlier than lastMod, compared in whole
// seconds as Last-Modified carries them. A zero lastMod, no field, several
// values or an invalid date never match: the caller answers in full. The
// caller applies it only to GET and HEAD, and only when the request carries
// no If-None-Match, which takes precedence (RFC 9110 §13.2.2).
func NotModifiedSince(values []string, lastMod time.Time) bool {
	if lastMod.IsZero() || len(values) != 1 {
		return false
	}
	since, err := http.ParseTime(values[0])
	if err != nil {
		return false
	}
	return !lastMod.Truncate(time.Second).After(since)
}

// MaxRequestIDLength bounds a client's X-Request-Id.
const MaxRequestIDLength = 128

// ValidRequestID reports whether a client's X-Request-Id is taken as the
// request's id: 1 to 128 visible ASCII characters, the ids the edge
// generates (UUIDs) and the tokens clients send. Anything else (too long,
// spaces, control or non-ASCII bytes) is replaced by a new id rather than
// echoed into answers and logs as sent. Each shipped Caddyfile's map of
// X-Request-Id applies the same rule as the regexp ^[[:graph:]]{1,128}$.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return false
		}
	}
	return true
}

// QueryByte reports whether c may stand for itself in a URI's query (RFC
// 3986 §3.4: pchar, "/" and "?"). Any other byte, a space, '"', '#', '[',
// ']' or a byte of UTF-8, is percent-encoded there; the '%' that starts an
// escape is left to the caller, which knows whether a stray one is an error.
func QueryByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
}

// IsHex reports whether c is a hex digit, as the two after a URI's '%' must
// be (RFC 3986 §2.1).
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
