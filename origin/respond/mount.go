package respond

import (
	"net/http"
	"slices"
	"strings"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// Mount is a route whose handler writes its own answer: a stream (server-sent
// events) or a protocol handler (MCP) that cannot return one *Response. The
// origin never caches these. Its ServeHTTP is the writer's part for them:
// the shared headers (CORS, nosniff, the request id, no-store), the CORS
// preflight and the 405 with Allow, so the handler sees only the methods it
// takes and sets only what is its own.
type Mount struct {
	// Methods are the methods Handler takes; OPTIONS is answered here.
	Methods []string
	// Hint is the hint of a 405: how this address is meant to be called.
	Hint    string
	Handler http.Handler
}

// SharedHeaders sets the headers every origin response carries: CORS and
// nosniff. The values are shared read-only slices, so a cached answer's
// header map can hold them and setting them allocates nothing.
func SharedHeaders(h http.Header) {
	h["Access-Control-Allow-Origin"] = allowOrigin
	h["Access-Control-Expose-Headers"] = exposeHeaders
	h["X-Content-Type-Options"] = noSniff
}

// EchoRequestID sets the response's X-Request-Id to the one the client (or
// the edge) sent, so a report names the request in every log: one value,
// and only a valid id (httpheader.ValidRequestID), so nothing a client
// sends is echoed as it came.
func EchoRequestID(h http.Header, r *http.Request) {
	if id := r.Header["X-Request-Id"]; len(id) == 1 && httpheader.ValidRequestID(id[0]) {
		h["X-Request-Id"] = id
	}
}

// Preflight answers a CORS preflight (Fetch standard, "CORS protocol");
// allowMethods is the Access-Control-Allow-Methods value.
func Preflight(w http.ResponseWriter, allowMethods []string) {
	h := w.Header()
	h["Access-Control-Allow-Origin"] = allowOrigin
	h["Access-Control-Allow-Methods"] = allowMethods
	h["Access-Control-Allow-Headers"] = allowHeaders
	h["Access-Control-Max-Age"] = maxAge
	h["Access-Control-Expose-Headers"] = exposeHeaders
	h["Cache-Control"] = noStore
	w.WriteHeader(http.StatusNoContent)
}

// The header values as the slices http.Header holds, shared read-only so
// setting them allocates nothing.
var (
	allowOrigin   = []string{httpheader.AllowOrigin}
	exposeHeaders = []string{httpheader.ExposeHeaders}
	allowHeaders  = []string{httpheader.AllowHeaders}
	maxAge        = []string{httpheader.MaxAge}
	noSniff       = []string{httpheader.NoSniff}
	noStore       = []string{NoStore}
)

// Allow is the Allow header value of a resource taking methods, OPTIONS
// included.
func Allow(methods []string) string {
	return strings.Join(append(slices.Clone(methods), http.MethodOptions), ", ")
}

// ServeHTTP answers through m.Handler once the shared part is done.
func (m Mount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	SharedHeaders(h)
	EchoRequestID(h, r)
	h["Cache-Control"] = noStore
	allow := Allow(m.Methods)
	if r.Method == http.MethodOptions {
		Preflight(w, []string{allow})
		return
	}
	if !slices.Contains(m.Methods, r.Method) {
		e := apierror.New(http.StatusMethodNotAllowed, "Method "+r.Method+" is not allowed here.", m.Hint)
		e.Header = http.Header{"Allow": {allow}}
		apierror.Write(w, e)
		return
	}
	m.Handler.ServeHTTP(w, r)
}
