package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Errors speak JSON, not Go (docs/decisions.md, JSON errors). The SDK
// decodes a request's params into its own Go types and, when they do not
// fit, answers with the decoder's message ("cannot unmarshal … into Go
// struct field mcp.initializeParamsV2.protocolVersion of type string"),
// for initialize even with code 0. This file turns such answers into
// JSON-RPC errors that say what the JSON lacks, with the code JSON-RPC 2.0
// §5.1 gives them: -32602 (invalid params) for params that do not fit,
// -32601 (method not found) for an unknown method.

// envelope is what the handler reads of a request before the SDK does.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// isCall reports whether the request is a call with a valid id (a string
// or a number), which JSON-RPC answers.
func (e envelope) isCall() bool {
	id := bytes.TrimSpace(e.ID)
	if len(id) == 0 {
		return false
	}
	return id[0] == '"' || id[0] == '-' || ('0' <= id[0] && id[0] <= '9')
}

// readEnvelope reads the id and method of a single JSON-RPC message; a body
// that is not one leaves them empty (the SDK then refuses it). Member names
// are matched exactly, as the SDK matches them: encoding/json would take
// "ID" for "id", and answer as a call what the SDK runs as a notification.
func readEnvelope(body []byte) envelope {
	var members map[string]json.RawMessage
	var e envelope
	if json.Unmarshal(body, &members) != nil {
		return e
	}
	if m, ok := members["method"]; ok && json.Unmarshal(m, &e.Method) != nil {
		e.Method = ""
	}
	e.ID = members["id"]
	if !e.isCall() {
		e.ID = nil
	}
	return e
}

// methodNotFound is the JSON-RPC answer to a call of a method the server
// does not have.
func methodNotFound(e envelope) []byte {
	return rpcError(e.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("Method not found: %q is not a method of this MCP server.", e.Method))
}

// rpcErrorResponse is a JSON-RPC 2.0 error response (§5, §5.1).
type rpcErrorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorObject  `json:"error"`
}

type rpcErrorObject struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func rpcError(id json.RawMessage, code int64, message string) []byte {
	b, _ := json.Marshal(rpcErrorResponse{JSONRPC: "2.0", ID: id, Error: rpcErrorObject{Code: code, Message: message}})
	return b
}

// sdkNotHandled is how the SDK's plain-text 400 names a method it does not
// have (its jsonrpc2.ErrNotHandled).
const sdkNotHandled = "JSON RPC not handled"

// rewriteRPCError returns the JSON-RPC response in b with an error that
// speaks JSON, or nil when b needs no change: not a JSON-RPC error, or one
// whose message names no Go type and whose code is set.
func rewriteRPCError(b []byte, method string) []byte {
	if !bytes.Contains(b, []byte(`"error"`)) {
		return nil
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &resp) != nil || resp.Error == nil {
		return nil
	}
	e := resp.Error
	if e.Code != 0 && !namesGoTypes(e.Message) {
		return nil
	}
	code, msg := e.Code, e.Message
	switch {
	case decodeFailure(e.Message):
		code, msg = jsonrpc.CodeInvalidParams, invalidParams(method, e.Message)
	case namesGoTypes(e.Message):
		msg = "The MCP request failed."
	}
	if code == 0 {
		code = jsonrpc.CodeInternalError
	}
	out := rpcErrorResponse{JSONRPC: "2.0", ID: resp.ID, Error: rpcErrorObject{Code: code, Message: msg}}
	if len(e.Data) > 0 && !namesGoTypes(string(e.Data)) {
		out.Error.Data = e.Data
	}
	nb, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return nb
}

// decodeFailure reports whether an SDK message is a decoder's failure to
// fit JSON into a Go value.
func decodeFailure(msg string) bool {
	return strings.Contains(msg, "cannot unmarshal") || strings.Contains(msg, "unmarshaling") || strings.Contains(msg, "invalid params")
}

var (
	// The decoder's message: the JSON value it met (quoted, with what
	// follows it) and the Go value it could not fill.
	reStructField = regexp.MustCompile(`cannot unmarshal ("(?:[^"\\]|\\.)*") into Go struct field ([\w*\[\]]+\.)?\w+\.([\w.]+) of type (\S+)`)
	reGoValue     = regexp.MustCompile(`cannot unmarshal ("(?:[^"\\]|\\.)*") into Go value of type (.+)$`)
)

// invalidParams says in JSON terms why a method's params did not decode:
// which member has which kind of value and which it needs. When the SDK's
// message cannot be read, it says only that the params do not fit.
func invalidParams(method, sdkMsg string) string {
	prefix := fmt.Sprintf("Invalid params for %q: ", method)
	if m := reStructField.FindStringSubmatch(sdkMsg); m != nil {
		got, want, member := jsonKindOf(m[1]), jsonKindOfGo(m[4]), jsonPath(m[3])
		if want != "" {
			return prefix + fmt.Sprintf("%q must be %s, not %s.", member, want, got)
		}
		return prefix + fmt.Sprintf("%q cannot be %s.", member, got)
	}
	if m := reGoValue.FindStringSubmatch(sdkMsg); m != nil {
		got, want := jsonKindOf(m[1]), jsonKindOfGo(m[2])
		if want != "" {
			return prefix + fmt.Sprintf("params must be %s, not %s.", want, got)
		}
	}
	return prefix + "they do not match the method's params in the MCP specification."
}

// jsonPath is the JSON members of a decoder's field path: the path of a
// nested member names the Go types it passes through
// ("Implementation.clientInfo.name"), which start with a capital, while
// MCP's members are camelCase.
func jsonPath(field string) string {
	var members []string
	for _, c := range strings.Split(field, ".") {
		if c != "" && !unicode.IsUpper(rune(c[0])) {
			members = append(members, c)
		}
	}
	return strings.Join(members, ".")
}

// jsonKindOf names the kind of the JSON value a quoted decoder excerpt
// starts with.
func jsonKindOf(quoted string) string {
	s, err := strconv.Unquote(quoted)
	if err != nil || s == "" {
		return "another kind of value"
	}
	switch s[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonKindOfGo names the JSON kind a Go type decodes from, or "" when the
// type's name does not tell (a named type).
func jsonKindOfGo(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"), strings.HasPrefix(goType, "mcp."), strings.HasPrefix(goType, "*mcp."):
		return "an object"
	}
	return ""
}

// checkArguments is receiving middleware that refuses a tools/call whose
// arguments are not a JSON object (the CallToolRequest schema: "arguments"
// is an object) with -32602, before the SDK's tool wrapper reports it as a
// tool result naming Go's map type. Arguments of the right shape but wrong
// values stay tool errors, which a model can correct (MCP 2025-11-25,
// server/tools, "Error Handling"); the SDK's text for those is kept unless
// it speaks of Go.
func checkArguments(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		if ctr, ok := req.(*sdk.CallToolRequest); ok && ctr.Params != nil {
			a := bytes.TrimSpace(ctr.Params.Arguments)
			if bytes.Equal(a, []byte("null")) {
				// No arguments, as if "arguments" were absent. The SDK
				// decodes null into a nil map and then fills the schema's
				// defaults into it: a panic on a handler goroutine, which
				// took the whole origin down (search_articles has one).
				ctr.Params.Arguments = json.RawMessage("{}")
				a = ctr.Params.Arguments
			}
			if len(a) > 0 && a[0] != '{' {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf(`Invalid params for "tools/call": "arguments" must be an object, not %s.`, jsonKindOf(strconv.Quote(string(a))))}
			}
		}
		res, err := next(ctx, method, req)
		if ctr, ok := res.(*sdk.CallToolResult); ok && ctr != nil && ctr.IsError {
			for _, c := range ctr.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					// The schema validator prints a JSON null as Go's
					// zero reflect.Value.
					tc.Text = strings.ReplaceAll(tc.Text, "<invalid reflect.Value>", "null")
					if namesGoTypes(tc.Text) {
						tc.Text = "the arguments do not match the tool's input schema (tools/list shows it)"
					}
				}
			}
		}
		return res, err
	}
}
