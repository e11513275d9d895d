// Package openapi holds the OpenAPI 3.1 description of the Invoicewire API,
// served at {site_root}/openapi.json.
package openapi

import _ "embed"

// Document is openapi.json as served.
//
//go:embed openapi.json
var Document []byte
