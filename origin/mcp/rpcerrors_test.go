package mcp

import (
	"encoding/json"
	"testing"
)

func TestRewriteRPCError(t *testing.T) {
	testCases := []struct {
		desc, in string
		code     int64  // 0: unchanged
		message  string // of the rewritten error
	}{
		{desc: "a result", in: `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		{desc: "an error in JSON's words", in: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"unknown tool \"x\""}}`},
		{desc: "a decoder's error with code 0", in: `{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"handling 'initialize': unmarshaling \"{}\" into a *mcp.initializeParamsV2: json: cannot unmarshal \"5}\" into Go struct field mcp.initializeParamsV2.protocolVersion of type string"}}`,
			code: -32602, message: `Invalid params for "initialize": "protocolVersion" must be a string, not a number.`},
		{desc: "a Go value", in: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"handling 'tools/list': invalid params: unmarshaling \"[]\" into a *mcp.ListToolsParams: json: cannot unmarshal \"[]\" into Go value of type mcp.ListToolsParams"}}`,
			code: -32602, message: `Invalid params for "initialize": params must be an object, not an array.`},
		{desc: "code 0, not a decoder's error", in: `{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"duplicate \"initialize\" received"}}`,
			code: -32603, message: `duplicate "initialize" received`},
		{desc: "another error naming Go", in: `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"bad *mcp.ServerSession state"}}`,
			code: -32603, message: "The MCP request failed."},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			out := rewriteRPCError([]byte(tc.in), "initialize")
			if tc.code == 0 {
				if out != nil {
					t.Errorf("rewritten: %s", out)
				}
				return
			}
			var resp struct {
				ID    int `json:"id"`
				Error struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &resp); err != nil || resp.ID != 1 || resp.Error.Code != tc.code || resp.Error.Message != tc.message {
				t.Errorf("%s, want code %d and %q", out, tc.code, tc.message)
			}
		})
	}
}

// readEnvelope reads what the SDK reads: member names in their exact case,
// so a message the SDK runs as a notification is never answered as a call.
func TestReadEnvelope(t *testing.T) {
	testCases := []struct {
		desc, in   string
		id, method string // id "" means none: not a call
	}{
		{desc: "a call", in: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, id: "9", method: "tools/list"},
		{desc: "a string id", in: `{"jsonrpc":"2.0","id":"a","method":"x"}`, id: `"a"`, method: "x"},
		{desc: "a notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized"},
		{desc: "id in capitals is no id", in: `{"jsonrpc":"2.0","ID":9,"method":"bogus"}`, method: "bogus"},
		{desc: "method in capitals is no method", in: `{"jsonrpc":"2.0","id":9,"Method":"bogus"}`, id: "9"},
		{desc: "an object as id", in: `{"jsonrpc":"2.0","id":{},"method":"x"}`, method: "x"},
		{desc: "a method that is not a string", in: `{"jsonrpc":"2.0","id":9,"method":5}`, id: "9"},
		{desc: "not an object", in: `[1]`},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			e := readEnvelope([]byte(tc.in))
			if string(e.ID) != tc.id || e.Method != tc.method {
				t.Errorf("id %q, method %q; want %q, %q", e.ID, e.Method, tc.id, tc.method)
			}
		})
	}
}
