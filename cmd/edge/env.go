package main

import (
	"fmt"
	"slices"

	"github.com/caddyserver/caddy/v2"
)

// envDurations are the IW_* variables the shipped Caddyfiles hand to
// Caddy's own directives (servers timeouts, reverse_proxy's transport),
// which take a negative duration, or 0, as no timeout at all: a hung origin
// or a slow client would then hold connections (README, IW_ORIGIN_TIMEOUT).
// Invoicewire's own modules check their values in UnmarshalCaddyfile.
var envDurations = []string{"IW_ORIGIN_TIMEOUT", "IW_EDGE_READ_HEADER_TIMEOUT", "IW_EDGE_READ_BODY_TIMEOUT"}

// configCommands are the edge's subcommands that adapt a Caddyfile.
var configCommands = []string{"run", "start", "validate", "adapt", "reload"}

// checkEnv refuses, naming the variable and the value, an envDurations
// value that is not a positive duration; an empty one keeps the
// Caddyfile's default.
func checkEnv(args []string, lookup func(string) (string, bool)) error {
	if len(args) < 2 || !slices.Contains(configCommands, args[1]) {
		return nil
	}
	for _, name := range envDurations {
		v, ok := lookup(name)
		if !ok || v == "" {
			continue
		}
		if d, err := caddy.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("%s must be a positive duration such as 10s, got %q", name, v)
		}
	}
	return nil
}
