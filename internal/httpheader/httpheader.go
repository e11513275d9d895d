// Package httpheader holds the header values every Invoicewire response
// shares, written once for the origin's writer and the edge's error
// responder: the CORS lists, the strong ETag of a body and the
// If-None-Match and If-Modified-Since comparisons.
package httpheader

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
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
	// signatures directory's signature and digest, MCP's session headers).
	ExposeHeaders = "RateLimit, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, " +
		"ETag, Deprecation, Sunset, Link, Cache-Status, Age, X-Request-Id, " +
		"Signature, Signature-Input, Content-Digest, Mcp-Session-Id, MCP-Protocol-Version"
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
