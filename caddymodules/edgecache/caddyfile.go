package edgecache

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("edge_cache", parseCaddyfile)
	// Before encode, and so before reverse_proxy: the cache wraps
	// compression and stores each coding's bytes (docs/architecture.md, docs/decisions.md (edge cache)).
	httpcaddyfile.RegisterDirectiveOrder("edge_cache", httpcaddyfile.Before, "encode")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	edge_cache {
//	    name            <Cache-Status name>
//	    max_bytes       <size, e.g. 256MiB>
//	    max_entry_bytes <size>
//	    redis           <redis URL>
//	    encodings       <coding>...
//	    accept_types    <media type>...
//	    stale_if_error  <duration>
//	    refresh_timeout <duration>
//	}
//
// encodings must list the encode directive's codings in its order.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		args := d.RemainingArgs()
		switch name {
		case "encodings":
			h.Encodings = args
			continue
		case "accept_types":
			h.AcceptTypes = args
			continue
		}
		if len(args) != 1 {
			return d.ArgErr()
		}
		val := args[0]
		switch name {
		case "name":
			h.Name = val
		case "redis":
			h.Redis = val
		case "max_bytes", "max_entry_bytes":
			// 0 would silently mean the default, and a negative size no
			// cache worth the name: both are refused with the value.
			n, err := parseSize(val)
			if err != nil || n <= 0 {
				return d.Errf("%s must be a positive size such as 256MiB, got %q", name, val)
			}
			if name == "max_bytes" {
				h.MaxBytes = n
			} else {
				h.MaxEntryBytes = n
			}
		case "stale_if_error", "refresh_timeout":
			// refresh_timeout 0 would silently be the default; neither
			// has a meaning below 0.
			dur, err := caddy.ParseDuration(val)
			if err != nil || dur < 0 || (dur == 0 && name == "refresh_timeout") {
				return d.Errf("%s must be a positive duration such as 30s, got %q", name, val)
			}
			if name == "stale_if_error" {
				h.StaleIfError = caddy.Duration(dur)
			} else {
				h.RefreshTimeout = caddy.Duration(dur)
			}
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
	}
	return nil
}

// parseSize reads a byte count: a plain integer or a humanised size
// ("256MiB", "64MB").
func parseSize(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	n, err := humanize.ParseBytes(s)
	return int64(n), err
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
