// Package caddymodules compiles Invoicewire's edge modules into a Caddy
// binary: importing it runs each module package's init, which registers the
// module and its Caddyfile directive (DESIGN §6).
package caddymodules

import (
	// The edge modules; DESIGN §6 gives their order.
	_ "github.com/invoicewire/invoicewire/caddymodules/bearerauth"
	_ "github.com/invoicewire/invoicewire/caddymodules/botauth"
	_ "github.com/invoicewire/invoicewire/caddymodules/deprecation"
	_ "github.com/invoicewire/invoicewire/caddymodules/edgecache"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	_ "github.com/invoicewire/invoicewire/caddymodules/markdowntwin"
	_ "github.com/invoicewire/invoicewire/caddymodules/ratelimitheaders"
)
