package edgecache

import (
	"strings"
	"time"
)

// maxDelta is the largest delta-seconds value a cache must handle; larger
// values are taken as this one (RFC 9111 §1.2.2).
const maxDelta = 2147483648

// cacheControl is a parsed Cache-Control field (RFC 9111 §5.2). Durations
// are -1 when the directive is absent.
type cacheControl struct {
	maxAge, sMaxAge, staleWhileRevalidate, staleIfError time.Duration
	maxStale, minFresh                                  time.Duration
	noStore, noCache, private, public                   bool
	mustRevalidate, proxyRevalidate, onlyIfCached       bool
	mustUnderstand                                      bool
	// maxStaleAny is max-stale without a value: any staleness will do.
	maxStaleAny bool
}

// maxDirectives bounds the work for one field: directives beyond it are
// ignored.
const maxDirectives = 64

// parseCacheControl reads the Cache-Control field values. It never fails:
// unknown directives are ignored (RFC 9111 §5.2.3), and a malformed value
// of a known one is read in the safe direction — a malformed max-age or
// s-maxage as 0 (already stale), a malformed stale-* window as absent.
// When a directive repeats, the smaller value wins, again the safe
// direction for a cache. It does not allocate.
func parseCacheControl(values []string) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1, staleWhileRevalidate: -1, staleIfError: -1, maxStale: -1, minFresh: -1}
	n := 0
	for _, v := range values {
		for v != "" {
			var d string
			d, v = nextDirective(v)
			if n++; n > maxDirectives {
				return cc
			}
			name, arg, hasArg := strings.Cut(d, "=")
			name = strings.TrimSpace(name)
			arg = strings.TrimSpace(arg)
			if len(arg) >= 2 && arg[0] == '"' && arg[len(arg)-1] == '"' {
				arg = arg[1 : len(arg)-1]
			}
			switch strings.ToLower(name) {
			case "max-age":
				cc.maxAge = minDuration(cc.maxAge, delta(arg, 0))
			case "s-maxage":
				cc.sMaxAge = minDuration(cc.sMaxAge, delta(arg, 0))
			case "stale-while-revalidate":
				if d := delta(arg, -1); d >= 0 {
					cc.staleWhileRevalidate = minDuration(cc.staleWhileRevalidate, d)
				}
			case "stale-if-error":
				if d := delta(arg, -1); d >= 0 {
					cc.staleIfError = minDuration(cc.staleIfError, d)
				}
			case "max-stale":
				if !hasArg {
					cc.maxStaleAny = true
				} else if d := delta(arg, -1); d >= 0 {
					cc.maxStale = minDuration(cc.maxStale, d)
				}
			case "min-fresh":
				if d := delta(arg, -1); d >= 0 {
					cc.minFresh = max(cc.minFresh, d)
				}
			case "no-store":
				cc.noStore = true
			case "no-cache":
				// A qualified no-cache="field" is read as unqualified:
				// never reuse without validation.
				cc.noCache = true
			case "private":
				cc.private = true
			case "public":
				cc.public = true
			case "must-revalidate":
				cc.mustRevalidate = true
			case "proxy-revalidate":
				cc.proxyRevalidate = true
			case "only-if-cached":
				cc.onlyIfCached = true
			case "must-understand":
				cc.mustUnderstand = true
			}
		}
	}
	return cc
}

// nextDirective splits off the first directive of a field value, keeping
// commas inside a quoted-string (no-cache="a, b") in the directive.
func nextDirective(v string) (directive, rest string) {
	inQuote := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			inQuote = !inQuote
		case c == '\\' && inQuote:
			i++
		case c == ',' && !inQuote:
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}

// delta parses delta-seconds = 1*DIGIT, returning bad for anything else
// and clamping overflow to maxDelta.
func delta(s string, bad time.Duration) time.Duration {
	if s == "" {
		return bad
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return bad
		}
		if n < maxDelta {
			n = n*10 + int64(c-'0')
		}
	}
	return time.Duration(min(n, maxDelta)) * time.Second
}

// minDuration is min where -1 means unset.
func minDuration(cur, d time.Duration) time.Duration {
	if cur < 0 {
		return d
	}
	return min(cur, d)
}
