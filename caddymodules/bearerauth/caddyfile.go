package bearerauth

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("bearer_auth", parseCaddyfile)
	// After rate_limit_headers (ordered after tracing), before any other
	// authentication (docs/architecture.md).
	httpcaddyfile.RegisterDirectiveOrder("bearer_auth", httpcaddyfile.Before, "basic_auth")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	bearer_auth {
//	    redis         <redis URL>
//	    site_root     <{site_root}>
//	    api_prefix    <path>
//	    protected     <path|path/*>...
//	    public_writes <path|path/*>...
//	    client_header <field name>
//	}
//
// redis is required; the rest have the defaults of docs/decisions.md (bearer tokens).
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		args := d.RemainingArgs()
		switch name {
		case "protected":
			h.Protected = append(h.Protected, args...)
			continue
		case "public_writes":
			h.PublicWrites = append(h.PublicWrites, args...)
			continue
		}
		if len(args) != 1 {
			return d.ArgErr()
		}
		switch name {
		case "redis":
			h.Redis = args[0]
		case "site_root":
			h.SiteRoot = args[0]
		case "api_prefix":
			h.APIPrefix = args[0]
		case "client_header":
			h.ClientHeader = args[0]
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
