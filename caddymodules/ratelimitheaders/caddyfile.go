package ratelimitheaders

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("rate_limit_headers", parseCaddyfile)
	// Outermost but for bot_auth (ordered before tracing), whose verified
	// agent it budgets: every response, the errors and 401s of the modules
	// after it included, carries the rate-limit fields.
	httpcaddyfile.RegisterDirectiveOrder("rate_limit_headers", httpcaddyfile.After, "tracing")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	rate_limit_headers {
//	    policy        <name>
//	    quota         <requests per window>
//	    agent_policy  <name>
//	    agent_quota   <requests per window of a verified agent>
//	    window        <seconds or duration>
//	    redis         <redis URL>
//	    counters_redis <redis URL for the shared counts; default: redis>
//	    max_clients   <clients tracked at once>
//	    sync_interval <duration>
//	    key_prefix    <redis key prefix>
//	    register_path   <path where clients register>
//	    register_quota  <registrations per register_window and address>
//	    register_window <seconds or duration>
//	    max_target      <size of the longest request target, e.g. 8KiB>
//	}
//
// Values usually come from the environment, e.g.
// `quota {$IW_RATELIMIT_QUOTA:1000}`; an empty value keeps the default.
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
		val := ""
		if len(args) == 1 {
			val = args[0]
		}
		switch name {
		case "policy":
			h.Policy = val
		case "agent_policy":
			h.AgentPolicy = val
		case "redis":
			h.Redis = val
		case "counters_redis":
			h.CountersRedis = val
		case "max_clients":
			if val == "" {
				continue
			}
			// 0 in the JSON configuration means the default; written
			// here it is a mistake, refused rather than read so.
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return d.Errf("max_clients must be a positive integer, got %q", val)
			}
			h.MaxClients = n
		case "key_prefix":
			h.KeyPrefix = val
		case "register_path":
			h.RegisterPath = val
		case "quota", "agent_quota", "register_quota":
			if val == "" {
				continue
			}
			// As max_clients: 0 would silently be the default budget.
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n <= 0 {
				return d.Errf("%s must be a positive integer, got %q", name, val)
			}
			switch name {
			case "quota":
				h.Quota = n
			case "agent_quota":
				h.AgentQuota = n
			default:
				h.RegisterQuota = n
			}
		case "max_target":
			if val == "" {
				continue
			}
			n, err := humanize.ParseBytes(val)
			if err != nil || n > 1<<30 {
				return d.Errf("max_target must be a size such as 8KiB, got %q", val)
			}
			h.MaxTarget = int(n)
		case "window", "sync_interval", "register_window":
			if val == "" {
				continue
			}
			// 0 would silently be the default, a negative one no window.
			dur, err := parseSecondsOrDuration(val)
			if err != nil || dur <= 0 {
				return d.Errf("%s must be a positive number of seconds or a duration such as 1m, got %q", name, val)
			}
			switch name {
			case "window":
				h.Window = dur
			case "register_window":
				h.RegisterWindow = dur
			default:
				h.SyncInterval = dur
			}
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
	}
	return nil
}

// parseSecondsOrDuration reads "60" as 60 seconds and anything else as a
// Caddy duration ("1m", "100ms").
func parseSecondsOrDuration(s string) (caddy.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return caddy.Duration(time.Duration(n) * time.Second), nil
	}
	dur, err := caddy.ParseDuration(s)
	return caddy.Duration(dur), err
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
