package connguard

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// UnmarshalCaddyfile sets up the wrapper from Caddyfile tokens, inside a
// server's listener_wrappers. Syntax:
//
//	conn_guard {
//	    per_address <connections>
//	    exempt      <cidr|private_ranges>...
//	}
//
// Values usually come from the environment; an empty value keeps the
// default.
func (w *Wrapper) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume wrapper name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "per_address":
			args := d.RemainingArgs()
			if len(args) > 1 {
				return d.ArgErr()
			}
			if len(args) == 0 || args[0] == "" {
				continue
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return d.Errf("per_address must be a positive integer, got %q", args[0])
			}
			w.PerAddress = n
		case "exempt":
			w.Exempt = append(w.Exempt, d.RemainingArgs()...)
		default:
			return d.Errf("unrecognized subdirective %q", d.Val())
		}
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Wrapper)(nil)
