// Cache keys and the index tag of a request target.

package edgecache

import (
	"net/http"
	"strings"

	"github.com/invoicewire/invoicewire/caddymodules/internal/negotiate"
)

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
// fields Vary names. RFC 9111 §4.1 lets a cache normalise a value only as
// the field's own definition allows: the field lines are trimmed and
// combined (RFC 9110 §5.3), and lowercased only for the fields whose
// values are case-insensitive (caseInsensitiveValues); any other field is
// kept as sent, so requests that differ only in the case of its value
// never share a stored response.
func (h *Handler) secondaryKey(primary []byte, fields []string, r *http.Request) []byte {
	b := append([]byte(nil), primary...)
	for _, f := range fields {
		b = append(b, 0)
		if f == "Accept" {
			b = append(b, negotiate.Preferred(r.Header["Accept"], h.AcceptTypes)...)
			continue
		}
		fold := caseInsensitiveValues(f)
		for i, v := range r.Header[f] {
			if i > 0 {
				b = append(b, ',')
			}
			v = strings.TrimSpace(v)
			if fold {
				b = appendLower(b, v)
			} else {
				b = append(b, v...)
			}
		}
	}
	return b
}

// caseInsensitiveValues reports whether the values of the request field f
// (in canonical form, as varyFields gives it) are case-insensitive by the
// field's definition: charsets (RFC 9110 §8.3.2), content codings (§8.4.1)
// and language tags (RFC 5646 §2.1.1), with their "q" weights (RFC 9110
// §12.4.2). Accept has its own normalisation (negotiate.Preferred).
func caseInsensitiveValues(f string) bool {
	switch f {
	case "Accept-Charset", "Accept-Encoding", "Accept-Language":
		return true
	}
	return false
}

// appendLower appends s to b with its ASCII letters in lower case, in
// place of strings.ToLower, which allocates a string for every value with
// an upper-case letter on the hit path (docs/edge-gateway.md). The fields
// it is used for are ASCII by their syntax; other bytes are kept as sent.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
