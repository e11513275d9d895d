package boundedbody

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("bounded_body", parseCaddyfile)
	// After bearer_auth (which goes before basic_auth), so a request refused
	// for its token is never read; before the cache and the proxy.
	httpcaddyfile.RegisterDirectiveOrder("bounded_body", httpcaddyfile.After, "basic_auth")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	bounded_body {
//	    max_size <bytes, e.g. 64KiB>
//	    timeout  <duration>
//	}
//
// An empty value keeps the default.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		args := d.RemainingArgs()
		if len(args) > 1 {
			return d.ArgErr()
		}
		if len(args) == 0 || args[0] == "" {
			continue
		}
		switch name {
		case "max_size":
			n, err := humanize.ParseBytes(args[0])
			if err != nil || n == 0 || n > 1<<40 {
				return d.Errf("max_size must be a positive size such as 64KiB, got %q", args[0])
			}
			h.MaxSize = int64(n)
		case "timeout":
			dur, err := caddy.ParseDuration(args[0])
			if err != nil || dur <= 0 {
				return d.Errf("timeout must be a positive duration such as 30s, got %q", args[0])
			}
			h.Timeout = caddy.Duration(dur)
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
