// Package negotiate reads the proactive-negotiation request headers the edge
// acts on: Accept (RFC 9110 §12.5.1) and Accept-Encoding (RFC 9110 §12.5.3).
//
// The parsers never fail: a malformed element is skipped, the way RFC 9110
// §5.5 lets a recipient ignore what it cannot parse, so bad input changes at
// most which representation is chosen. They do not allocate.
package negotiate

import (
	"strings"
)

// maxElements bounds the work per header: a client listing more media ranges
// than this is ignored beyond them.
const maxElements = 64

// element calls fn for each comma-separated element of the field values,
// with the element's value (before any ';') and its q-value. Elements whose
// q is malformed or out of range are skipped. fn returns false to stop.
func elements(values []string, fn func(value string, q float64) bool) {
	n := 0
	for _, v := range values {
		for v != "" {
			var el string
			el, v, _ = strings.Cut(v, ",")
			if n++; n > maxElements {
				return
			}
			name, params, _ := strings.Cut(el, ";")
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			q, ok := quality(params)
			if !ok {
				continue
			}
			if !fn(name, q) {
				return
			}
		}
	}
}

// quality finds the q parameter among params (RFC 9110 §12.4.2: weight =
// OWS ";" OWS "q=" qvalue) and reports false when it is malformed.
func quality(params string) (float64, bool) {
	q := 1.0
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		p = strings.TrimSpace(p)
		if len(p) < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=' {
			continue
		}
		v, ok := parseQ(p[2:])
		if !ok {
			return 0, false
		}
		q = v
	}
	return q, true
}

// parseQ parses qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ).
func parseQ(s string) (float64, bool) {
	if s == "" || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	if len(s) == 1 {
		return float64(s[0] - '0'), true
	}
	if s[1] != '.' {
		return 0, false
	}
	v := float64(s[0] - '0')
	scale := 0.1
	for i := 2; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v += float64(c-'0') * scale
		scale /= 10
	}
	if v > 1 {
		return 0, false
	}
	return v, true
}

// Match is how a media type fares against an Accept header.
type Match struct {
	// Q is the weight of the most specific media range that matches.
	Q float64
	// Specificity is 3 for an exact type/subtype, 2 for type/*, 1 for */*,
	// 0 when nothing matched.
	Specificity int
}

// MediaType rates mediaType ("type/subtype", lower case) against the Accept
// values. A request without Accept accepts everything (RFC 9110 §12.5.1),
// which reports Q 1 with Specificity 1.
func MediaType(accept []string, mediaType string) Match {
	if len(accept) == 0 {
		return Match{Q: 1, Specificity: 1}
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	var best Match
	elements(accept, func(v string, q float64) bool {
		rt, rs, ok := strings.Cut(v, "/")
		if !ok {
			return true
		}
		spec := 0
		switch {
		case rt == "*" && rs == "*":
			spec = 1
		case strings.EqualFold(rt, typ) && rs == "*":
			spec = 2
		case len(v) == len(mediaType) && strings.EqualFold(v, mediaType):
			spec = 3
		}
		// RFC 9110 §12.5.1: the most specific reference has precedence.
		if spec > best.Specificity {
			best = Match{Q: q, Specificity: spec}
		}
		return true
	})
	return best
}

// Preferred returns the offer (a media type) the Accept values prefer, or ""
// when none is acceptable. Higher q wins; on equal q a more specific match
// wins; then the earlier offer.
func Preferred(accept []string, offers []string) string {
	var best string
	var bm Match
	for _, o := range offers {
		m := MediaType(accept, o)
		if m.Q <= 0 {
			continue
		}
		if best == "" || m.Q > bm.Q || (m.Q == bm.Q && m.Specificity > bm.Specificity) {
			best, bm = o, m
		}
	}
	return best
}

// Encoding returns the content coding the Accept-Encoding values prefer among
// offers (lower-case coding names in the server's order of preference), or
// "" for identity. Higher q wins, then the earlier offer; "*" covers codings
// the header does not name; q=0 refuses (RFC 9110 §12.5.3). x-gzip is gzip
// (RFC 9110 §8.4.1.3).
func Encoding(acceptEncoding []string, offers []string) string {
	if len(acceptEncoding) == 0 {
		return ""
	}
	best, bestQ := "", 0.0
	for _, o := range offers {
		q, named, starQ, star := 0.0, false, 0.0, false
		elements(acceptEncoding, func(v string, eq float64) bool {
			switch {
			case strings.EqualFold(v, o) || (o == "gzip" && strings.EqualFold(v, "x-gzip")):
				if !named || eq > q {
					q = eq
				}
				named = true
			case v == "*":
				starQ, star = eq, true
			}
			return true
		})
		if !named && star {
			q = starQ
		}
		if q > bestQ {
			best, bestQ = o, q
		}
	}
	return best
}
