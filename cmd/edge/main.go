// Command edge is Invoicewire's edge gateway (DESIGN §1, §6): the Caddy v2
// server with its standard modules and Invoicewire's own handler modules
// compiled in. It is configured by caddyfile/Caddyfile.
//
// Run it as any Caddy binary:
//
//	edge run --config caddyfile/Caddyfile --adapter caddyfile
package main

import (
	_ "time/tzdata"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/invoicewire/invoicewire/caddymodules"
)

func main() {
	caddycmd.Main()
}
