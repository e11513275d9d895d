// Package boundedbody provides the bounded_body handler: it reads a request
// body whole, within a size and a time bound, before the handlers after it
// (the reverse proxy) see the request, and answers a client's mistakes
// itself with the JSON errors of json_errors:
//
//   - a body larger than max_size → 413 payload_too_large, without reading
//     it when Content-Length already says so;
//   - a body that does not arrive within timeout → 408 request_timeout;
//   - a body whose framing is broken (a bad chunk size, a body shorter
//     than its Content-Length) → 400 bad_request;
//   - a request head with both Content-Length and Transfer-Encoding, as
//     conn_guard saw it → 400 bad_request (RFC 9112 §6.1);
//   - a body in a content coding (Content-Encoding other than identity),
//     which nothing decodes → 415 unsupported_media_type with
//     Accept-Encoding: identity (RFC 7694 §3).
//
// Each of these answers closes the connection: what is left of the body
// cannot be trusted to end where the client meant, and RFC 9112 §6.1 asks
// for the close after a request with both length fields. Every other
// HTTP/1 request with a chunked body is answered as usual and its
// connection closed too, since net/http deletes Content-Length from such a
// request before any handler runs and the two cannot be told apart where
// conn_guard does not see the request in the clear.
//
// Streamed to the proxy instead, these bodies failed inside the proxy's
// transport, which answered 502 (shown as 503 unavailable), or an empty
// 200 once the upstream had answered.
package boundedbody

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler reads request bodies whole before the next handler.
type Handler struct {
	// MaxSize is the largest body accepted, in bytes. Default 65536, the
	// largest body the origin accepts.
	MaxSize int64 `json:"max_size,omitempty"`
	// Timeout bounds how long the body may take to arrive, from the moment
	// this handler starts reading it. Default 30s
	// (IW_EDGE_READ_BODY_TIMEOUT).
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.bounded_body",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision applies the defaults.
func (h *Handler) Provision(ctx caddy.Context) error {
	// Caddy no longer puts the connection in a request's context
	// (caddyhttp.ConnCtxKey is only declared), so conn_guard's mark is
	// reached through a hook of the server this handler is provisioned in.
	// Each instance adds one: a context value per connection, not per
	// request.
	if srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
		srv.RegisterConnContext(func(ctx context.Context, c net.Conn) context.Context {
			if fc, ok := c.(framingConflict); ok {
				return context.WithValue(ctx, connKey{}, fc)
			}
			return ctx
		})
	}
	if h.MaxSize == 0 {
		h.MaxSize = 64 << 10
	}
	if h.Timeout == 0 {
		h.Timeout = caddy.Duration(30 * time.Second)
	}
	return nil
}

// Validate checks h's configuration.
func (h *Handler) Validate() error {
	if h.MaxSize < 1 || h.Timeout < 0 {
		return errors.New("bounded_body: max_size must be positive and timeout must not be negative")
	}
	return nil
}

// framingConflict is implemented by conn_guard's connections.
type framingConflict interface{ FramingConflict() bool }

// connKey holds a request's connection as a framingConflict in its context.
type connKey struct{}

// ServeHTTP reads r's body, or refuses r.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.ProtoMajor == 1 {
		if c, ok := r.Context().Value(connKey{}).(framingConflict); ok && c.FramingConflict() {
			return refuse(w, apierror.BadRequest("The request has both Content-Length and Transfer-Encoding.",
				"Send one of them (RFC 9112 §6.1); this connection is closed."))
		}
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return next.ServeHTTP(w, r)
	}
	// Bodies are taken as sent: none is decoded, so a compressed one would
	// be read as its compressed bytes ("not valid JSON at byte 1"). RFC 9110
	// §15.5.16 and RFC 7694 §3: 415 naming the codings accepted.
	for _, ce := range r.Header.Values("Content-Encoding") {
		for c := range strings.SplitSeq(ce, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				e := apierror.New(http.StatusUnsupportedMediaType, "Request bodies in a content coding ("+strconv.Quote(c)+") are not accepted.",
					"Send the body uncompressed, without Content-Encoding.")
				e.Header = http.Header{"Accept-Encoding": {"identity"}}
				return refuse(w, e)
			}
		}
	}
	if r.ContentLength > h.MaxSize {
		return refuse(w, tooLarge(h.MaxSize))
	}
	rc := http.NewResponseController(w)
	if h.Timeout > 0 {
		// Errors mean the writer cannot set deadlines (HTTP/3); the
		// server's own read timeout still bounds the body there.
		_ = rc.SetReadDeadline(time.Now().Add(time.Duration(h.Timeout)))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.MaxSize+1))
	if h.Timeout > 0 && err == nil && int64(len(body)) <= h.MaxSize {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var ne net.Error
	switch {
	case err == nil && int64(len(body)) > h.MaxSize:
		return refuse(w, tooLarge(h.MaxSize))
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return refuse(w, apierror.New(http.StatusRequestTimeout,
			"The request body did not arrive within "+time.Duration(h.Timeout).String()+".",
			"Send the whole body at once, right after the headers."))
	case err != nil:
		return refuse(w, apierror.BadRequest("The request body could not be read: its framing is malformed.",
			"Send the body with a correct Content-Length, or as well-formed chunks (RFC 9112 §7.1)."))
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return next.ServeHTTP(w, r)
}

func tooLarge(max int64) *apierror.Error {
	return apierror.New(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("The request body is larger than %d bytes.", max),
		"Send a smaller body; no endpoint takes more than 64 KiB, and some less (openapi.json gives each limit).")
}

// refuse answers e and closes the connection after the answer (RFC 9112
// §9.6: the server closes after a response with close).
//
// The close lingers, for at most lingerFor: after the handler returns,
// net/http reads and discards what is left of the body, up to 256 KiB,
// before it closes. A client usually sends its whole body before it reads
// the answer; closed with its body unread, the connection is reset, the
// client's next write fails, and Go's transport, among others, reports
// that failure instead of the 413 it had received. The deadline bounds
// how long a client that stopped sending holds the connection. Beyond
// 256 KiB net/http sends its FIN and waits half a second instead
// (conn_guard passes CloseWrite on).
func refuse(w http.ResponseWriter, e *apierror.Error) error {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(lingerFor))
	return caddyhttp.Error(e.Status, e)
}

// lingerFor is how long a refused request's connection may take to send
// the rest of its body before it is closed (refuse).
const lingerFor = 2 * time.Second

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
