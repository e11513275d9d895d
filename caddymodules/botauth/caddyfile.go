package botauth

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("bot_auth", parseCaddyfile)
	// Outermost: the rate limiter (right after tracing) needs the verified
	// agent. Directives may only be ordered against Caddy's own, so this
	// one goes before tracing, the first of them.
	httpcaddyfile.RegisterDirectiveOrder("bot_auth", httpcaddyfile.Before, "tracing")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	bot_auth {
//	    allow_cidrs         [<cidr>[,<cidr>...] ...]
//	    clock_skew          <duration>
//	    fetch_timeout       <duration>
//	    max_directory_bytes <int>
//	    max_fetches         <int>
//	    max_keys            <int>
//	    max_verified        <int>
//	    min_key_ttl         <duration>
//	    max_key_ttl         <duration>
//	    default_key_ttl     <duration>
//	    negative_ttl        <duration>
//	    header              <request header name>
//	}
//
// Every subdirective is optional. allow_cidrs may have no argument, so an
// empty environment variable leaves the list empty.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		if name == "allow_cidrs" {
			h.AllowCIDRs = append(h.AllowCIDRs, d.RemainingArgs()...)
			continue
		}
		if !d.NextArg() {
			return d.ArgErr()
		}
		val := d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		var err error
		switch name {
		case "clock_skew":
			err = parseDuration(val, &h.ClockSkew)
		case "fetch_timeout":
			err = parseDuration(val, &h.FetchTimeout)
		case "min_key_ttl":
			err = parseDuration(val, &h.MinKeyTTL)
		case "max_key_ttl":
			err = parseDuration(val, &h.MaxKeyTTL)
		case "default_key_ttl":
			err = parseDuration(val, &h.DefaultKeyTTL)
		case "negative_ttl":
			err = parseDuration(val, &h.NegativeTTL)
		case "max_directory_bytes":
			h.MaxDirectoryBytes, err = strconv.ParseInt(val, 10, 64)
		case "max_keys":
			h.MaxKeys, err = strconv.ParseInt(val, 10, 64)
		case "max_verified":
			h.MaxVerified, err = strconv.ParseInt(val, 10, 64)
		case "max_fetches":
			h.MaxFetches, err = strconv.Atoi(val)
		case "header":
			h.Header = val
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
		if err != nil {
			return d.Errf("%s: %v", name, err)
		}
	}
	return nil
}

func parseDuration(s string, into *caddy.Duration) error {
	d, err := caddy.ParseDuration(s)
	if err != nil {
		return err
	}
	*into = caddy.Duration(d)
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
