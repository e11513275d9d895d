// Package gocheck pins the Go client generator the OpenAPI document is
// checked with (oapi-codegen, a tool of this module) and the runtime its
// generated code imports, in a module of their own so that the main
// module's go.mod carries neither. generator_test.go (package openapi) runs
// the tool with oapi-codegen.yaml and vets what it generates against this
// go.mod.
package gocheck

import _ "github.com/oapi-codegen/runtime" // imported by the generated client
