package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// MaxResult bounds the JSON of one tool result (content and structured
// content together). The largest regular result, a full page of
// search_articles or one long article, is far below it; a result above it
// is replaced by a tool error, so no call can make the server build and
// send an unbounded answer.
const MaxResult = 256 << 10

// checkOrigin validates the Origin header against the allow-list, as the
// Streamable HTTP transport asks of every server (MCP 2025-06-18, "Security
// Warning": validate Origin against DNS rebinding, 403 when invalid). A
// request without Origin comes from a program, not a browser page, and
// passes: the endpoint is public and read-only.
func (s *Server) checkOrigin(r *http.Request) *apierror.Error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if slices.Contains(s.AllowedOrigins, "*") || slices.Contains(s.allowedOrigins(), strings.ToLower(origin)) {
		return nil
	}
	return apierror.New(http.StatusForbidden, "The MCP endpoint does not accept requests from the origin "+fmt.Sprintf("%q", origin)+".",
		"Call it from a program (no Origin header) or from one of the origins the operator allowed (IW_MCP_ALLOWED_ORIGINS).")
}

// allowedOrigins is the allow-list as serialised origins (RFC 6454 §6.2),
// lower-cased: AllowedOrigins, or the site's own origin when none is set.
func (s *Server) allowedOrigins() []string {
	list := s.AllowedOrigins
	if len(list) == 0 {
		list = []string{s.SiteRoot}
	}
	out := make([]string, 0, len(list))
	for _, o := range list {
		if u, err := url.Parse(o); err == nil && u.Scheme != "" && u.Host != "" {
			o = u.Scheme + "://" + u.Host
		}
		out = append(out, strings.ToLower(o))
	}
	return out
}

// refuseBatch answers a JSON-RPC batch (a JSON array) with 400, whatever
// MCP-Protocol-Version says. The current transport has no batches, and a
// batch is one HTTP request that runs any number of tool calls: 450
// searches in 57 KB came back as 23 MB, counted once by the rate limiter.
// The body is read here (at most MaxBody), returned, and put back for the
// SDK.
func refuseBatch(r *http.Request) ([]byte, *apierror.Error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	r.Body.Close()
	if err != nil {
		return nil, apierror.BadRequest("The request body could not be read.", "Send one JSON-RPC message per POST.")
	}
	if len(body) > MaxBody {
		return nil, apierror.New(http.StatusRequestEntityTooLarge, "The request body is larger than 65536 bytes.", "Send one JSON-RPC message per POST.")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return nil, apierror.BadRequest("JSON-RPC batches are not accepted.", "Send one JSON-RPC message per POST (MCP Streamable HTTP, 2025-06-18 and later).")
	}
	// The SDK decodes the body itself, with encoding/json, which turns
	// invalid UTF-8 into U+FFFD instead of refusing it (RFC 8259 §8.1).
	if err := respond.CheckUTF8(body); err != nil {
		return nil, apierror.As(err)
	}
	return body, nil
}

// refuseInvalid answers a JSON-RPC 2.0 message that is neither a request
// or notification (method) nor a response (result or error, exactly one)
// with 400, as refuseBatch answers a batch. The SDK takes any message
// without method for a response, and the transport answers a response
// with 202 Accepted, so {"jsonrpc":"2.0","id":7} was accepted with an empty
// body; it is an Invalid Request (JSON-RPC 2.0 §5.1, -32600), which
// Streamable HTTP answers with an HTTP error, not 202. Members are matched
// in their exact case, as the SDK matches them. A body that is not one
// JSON-RPC 2.0 object is left to the SDK, which refuses it.
func refuseInvalid(body []byte) *apierror.Error {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || string(m["jsonrpc"]) != `"2.0"` {
		return nil
	}
	_, method := m["method"]
	_, result := m["result"]
	_, rpcErr := m["error"]
	const hint = "Send one JSON-RPC 2.0 request or notification (with method), or a response (with result or error)."
	if id, ok := m["id"]; ok && !validID(id) {
		return apierror.BadRequest("Invalid Request: a JSON-RPC id is a string or an integer between -9007199254740991 and 9007199254740991, written without a fraction or exponent.", hint)
	}
	switch {
	case method && (result || rpcErr):
		return apierror.BadRequest("Invalid Request: a JSON-RPC message is a request (method) or a response (result or error), not both.", hint)
	case result && rpcErr:
		return apierror.BadRequest("Invalid Request: a JSON-RPC response has result or error, not both.", hint)
	case !method && !result && !rpcErr:
		return apierror.BadRequest("Invalid Request: the JSON-RPC message has neither method nor result or error, so it is no request, notification or response.", hint)
	}
	return nil
}

// maxID is the largest integer id, 2^53−1: the SDK reads a numeric id
// through a float64, which holds every integer up to it and no more.
const maxID = 1<<53 - 1

// validID reports whether the raw JSON id is one the SDK answers under the
// same id: a string, null (an answer to an unreadable id; the SDK refuses
// it on requests), or an integer written as one (JSON-RPC 2.0 §4: "Numbers
// SHOULD NOT contain fractional parts") within ±maxID. A float64 would turn
// 1.5 into 1, 1e2 into 100 and 9007199254740993 into 9007199254740992, an
// answer the client cannot match to its request (JSON-RPC 2.0 §5: the
// response's id is the request's), so those are an Invalid Request. Other
// shapes (true, an object) are left to the SDK, which refuses them.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return true
	}
	// raw is a JSON number (the body decoded): ParseInt refuses one with a
	// fraction or an exponent, and one beyond int64.
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && -maxID <= n && n <= maxID
}

// boundResults is receiving middleware that replaces a tool result larger
// than MaxResult with a tool error saying so.
func boundResults(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/call" {
			return res, err
		}
		ctr, ok := res.(*sdk.CallToolResult)
		if !ok || ctr == nil {
			return res, err
		}
		b, merr := json.Marshal(ctr)
		if merr != nil || len(b) <= MaxResult {
			return res, err
		}
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{
			Text: fmt.Sprintf("the result is %d bytes, more than the %d a tool may return; ask for less (a smaller limit, a narrower query)", len(b), MaxResult),
		}}}, nil
	}
}
