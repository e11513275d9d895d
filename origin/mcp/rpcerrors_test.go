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
