// Package openapi holds the OpenAPI 3.1 description of the Invoicewire API,
// served at {site_root}/openapi.json for client generators (the contract).
//
// The document covers every endpoint of the contract and every
// extension docs/architecture.md adds: the owner subscription routes (docs/decisions.md, subscriptions), the RFC 7592
// client routes (docs/decisions.md, agent auth), feeds (docs/decisions.md, feeds), article pages and their markdown twins
// (docs/decisions.md, markdown twin), /ask (docs/decisions.md, ask), /mcp and the well-known documents (docs/decisions.md, agent surfaces), and the webhook
// deliveries (docs/decisions.md, delivery) as 3.1 `webhooks`. Paths without their own `servers` are
// relative to {base_url}; site surfaces carry a path-level server at
// {site_root}.
//
// Its checks live beside it: openapi_test.go validates it as OpenAPI 3.1 with
// libopenapi, generator_test.go lints it with Redocly, compiles a
// TypeScript client generated from it and vets a Go client oapi-codegen
// generates from it (the generator pinned by gocheck/go.mod), and package contract validates real
// responses against it.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
)

// Document is openapi.json as written, for DocumentRoot. Whoever adds or
// changes an endpoint changes this file and its contract test in the same
// change (docs/architecture.md).
//
//go:embed openapi.json
var Document []byte

// DocumentRoot is the {site_root} openapi.json is written for: make run's
// default IW_PUBLIC_URL.
const DocumentRoot = "http://localhost:8080"

// For returns the document as an instance at siteRoot serves it: its
// servers, links and examples on siteRoot, the root its service index,
// WWW-Authenticate and auth.md name too. A client generated from it calls
// this deployment, not make run's.
func For(siteRoot string) []byte {
	if siteRoot == DocumentRoot {
		return Document
	}
	quoted, _ := json.Marshal(siteRoot) // a string: cannot fail
	return bytes.ReplaceAll(Document, []byte(DocumentRoot), quoted[1:len(quoted)-1])
}
