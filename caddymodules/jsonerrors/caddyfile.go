package jsonerrors

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("json_errors", parseCaddyfile)
	// A responder: inside handle_errors it runs after header and the
	// other middleware, like respond.
	httpcaddyfile.RegisterDirectiveOrder("json_errors", httpcaddyfile.Before, "respond")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	json_errors {
//	    allow_origin      <origin>
//	    expose_headers    <header list>
//	    request_id_header <field name>
//	}
//
// All subdirectives are optional; the block may be omitted.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		var dst *string
		switch d.Val() {
		case "allow_origin":
			dst = &h.AllowOrigin
		case "expose_headers":
			dst = &h.ExposeHeaders
		case "request_id_header":
			dst = &h.RequestIDHeader
		default:
			return d.Errf("unrecognized subdirective %q", d.Val())
		}
		if !d.NextArg() {
			return d.ArgErr()
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
