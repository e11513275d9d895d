// Package caddymodules compiles Invoicewire's edge modules into a Caddy
// binary: importing it runs each module package's init, which registers the
// module and its Caddyfile directive (docs/architecture.md).
package caddymodules

import (
	// The edge modules; docs/architecture.md gives their order.
	_ "github.com/invoicewire/invoicewire/caddymodules/bearerauth"
	_ "github.com/invoicewire/invoicewire/caddymodules/botauth"
	_ "github.com/invoicewire/invoicewire/caddymodules/boundedbody"
	_ "github.com/invoicewire/invoicewire/caddymodules/connguard"
	_ "github.com/invoicewire/invoicewire/caddymodules/deprecation"
	_ "github.com/invoicewire/invoicewire/caddymodules/edgecache"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	_ "github.com/invoicewire/invoicewire/caddymodules/markdowntwin"
	_ "github.com/invoicewire/invoicewire/caddymodules/ratelimitheaders"
)
