// Package openapi holds the OpenAPI 3.1 description of the Invoicewire API,
// served at {site_root}/openapi.json for client generators (spec §1, §9).
//
// The document covers every endpoint of the contract (spec §4) and every
// extension DESIGN.md adds: the owner subscription routes (D20), the RFC 7592
// client routes (D18), feeds (D8), article pages and their markdown twins
// (D11), /ask (D22), /mcp and the well-known documents (D23), and the webhook
// deliveries (D21) as 3.1 `webhooks`. Paths without their own `servers` are
// relative to {base_url}; site surfaces carry a path-level server at
// {site_root}.
//
// Its checks live beside it: openapi_test.go validates it as OpenAPI 3.1 with
// libopenapi, generator_test.go lints it with Redocly and compiles a
// TypeScript client generated from it, and package contract validates real
// responses against it.
package openapi

import _ "embed"

// Document is openapi.json exactly as served. Whoever adds or changes an
// endpoint changes this file and its contract test in the same change
// (DESIGN §8).
//
//go:embed openapi.json
var Document []byte
