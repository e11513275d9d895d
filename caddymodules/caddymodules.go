// Package caddymodules compiles Invoicewire's edge modules into a Caddy
// binary: importing it runs each module package's init, which registers the
// module and its Caddyfile directive (DESIGN §6).
package caddymodules
