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
// fields Vary names.
func (h *Handler) secondaryKey(primary []byte, fields []string, r *http.Request) []byte {
	b := append([]byte(nil), primary...)
	for _, f := range fields {
		b = append(b, 0)
		if f == "Accept" {
			b = append(b, negotiate.Preferred(r.Header["Accept"], h.AcceptTypes)...)
			continue
		}
		for i, v := range r.Header[f] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, strings.ToLower(strings.TrimSpace(v))...)
		}
	}
	return b
}
