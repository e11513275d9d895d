package deprecation

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("deprecation", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("deprecation", httpcaddyfile.After, "header")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	deprecation {
//	    prefix        <path prefix, e.g. /api/v0>
//	    deprecated    <RFC 3339 date-time>
//	    sunset        <RFC 3339 date-time, ≥ 6 months later>
//	    policy        <URL of the deprecation policy>
//	    sunset_policy <URL of the sunset policy>
//	}
//
// Use one directive per deprecated prefix. (The prefix is a subdirective,
// not an argument: a leading "/" argument would be taken for a path
// matcher, and a matcher like /api/v0* would also match /api/v01.)
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		if !d.NextArg() {
			return d.ArgErr()
		}
		val := d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		switch name {
		case "prefix":
			h.Prefix = val
		case "deprecated":
			h.Deprecated = val
		case "sunset":
			h.Sunset = val
		case "policy":
			h.Policy = val
		case "sunset_policy":
			h.SunsetPolicy = val
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
