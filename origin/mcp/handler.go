package mcp

import (
	"net/http"
	"regexp"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Handler serves the MCP server over Streamable HTTP at /mcp, POST only:
// stateless Streamable HTTP has no GET stream and no DELETE. It goes
// through the origin's shared writer for handlers that write their own
// answer (respond.Mount: CORS, nosniff, no-store, preflight, 405) and turns
// the SDK's plain-text HTTP errors into the contract's JSON errors;
// JSON-RPC answers, errors included, pass through unchanged.
func Handler(s *Server) respond.Mount {
	srv := s.New()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless: true,
		// Every tool answers at once without progress notifications, so
		// one JSON answer per POST is simpler for clients and proxies than
		// a one-event stream.
		JSONResponse: true,
		// The origin listens on loopback behind the edge, which forwards
		// the public Host; the SDK's DNS-rebinding guard (loopback address,
		// other Host) would refuse every proxied request. The Origin check
		// below is what the transport specification asks of servers
		// against DNS rebinding instead.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBody,
		Logger:                     s.sdkLog(),
	})
	return respond.Mount{Methods: []string{http.MethodPost},
		Hint: "The MCP endpoint takes one JSON-RPC message per POST (Streamable HTTP); its card is at /mcp/server-card.",
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := s.checkOrigin(r); err != nil {
				apierror.Write(w, err)
				return
			}
			if r.ContentLength > MaxBody {
				apierror.Write(w, apierror.New(http.StatusRequestEntityTooLarge, "The request body is larger than 65536 bytes.", "Send one JSON-RPC message per POST."))
				return
			}
			body, err := refuseBatch(r)
			if err == nil {
				err = refuseInvalid(body)
			}
			if err != nil {
				apierror.Write(w, err)
				return
			}
			j := &jsonErrors{ResponseWriter: w, req: readEnvelope(body)}
			h.ServeHTTP(j, r)
			j.finish()
		})}
}

// jsonErrors rewrites the SDK's http.Error answers (status ≥ 400 with a
// text/plain body) into the contract's JSON errors with the same status,
// except an unknown method, which is a JSON-RPC error (rpcerrors.go); it
// rewrites JSON-RPC errors whose message speaks of Go into ones that speak
// JSON; and it keeps every answer out of caches (the SDK sets "no-cache" on
// its own answers; anything that is not a cacheable read is no-store).
type jsonErrors struct {
	http.ResponseWriter
	// req is the request's id and method, read before the SDK saw it.
	req         envelope
	wroteHeader bool
	// status is the error being rewritten (0: none), reason the SDK's
	// plain-text explanation of it, written as the JSON error's message
	// once the SDK is done (finish).
	status int
	reason strings.Builder
}

func (j *jsonErrors) WriteHeader(status int) {
	if j.wroteHeader {
		return
	}
	j.wroteHeader = true
	j.Header().Set("Cache-Control", respond.NoStore)
	ct := j.Header().Get("Content-Type")
	if status >= 400 && (ct == "" || strings.HasPrefix(ct, "text/plain")) {
		j.status = status
		j.Header().Del("Content-Type")
		return
	}
	j.ResponseWriter.WriteHeader(status)
}

// finish writes the JSON error the SDK's plain-text one became. Its
// message is the SDK's own reason (an unsupported protocol version, a
// missing Accept type), which says what to change; ours for the status
// when the SDK gave none.
func (j *jsonErrors) finish() {
	if j.status == 0 {
		return
	}
	reason := strings.TrimSpace(j.reason.String())
	if j.status == http.StatusBadRequest && strings.HasPrefix(reason, sdkNotHandled) && j.req.isCall() {
		// A call of a method the server lacks is a JSON-RPC error with the
		// call's id, not an HTTP one (JSON-RPC 2.0 §5.1, -32601; the
		// Streamable HTTP transport answers a request with a JSON-RPC
		// response). 2026-07-28 requests never get here: the SDK answers
		// them with 404 and -32601, as that revision asks.
		j.Header().Set("Content-Type", "application/json")
		j.ResponseWriter.WriteHeader(http.StatusOK)
		j.ResponseWriter.Write(methodNotFound(j.req))
		return
	}
	msg := messageFor(j.status)
	reason = strings.TrimPrefix(reason, http.StatusText(j.status)+": ")
	if reason != "" && len(reason) <= 300 && !namesGoTypes(reason) {
		msg = "The MCP request was refused: " + strings.TrimSuffix(reason, ".") + "."
	}
	apierror.Write(j.ResponseWriter, apierror.New(j.status, msg, "See /developers#mcp for how to call the MCP endpoint."))
}

func (j *jsonErrors) Write(b []byte) (int, error) {
	if !j.wroteHeader {
		j.WriteHeader(http.StatusOK)
	}
	if j.status != 0 {
		// The plain-text body becomes the JSON error's reason (finish);
		// a long one is cut rather than kept whole.
		if j.reason.Len() < 1024 {
			j.reason.Write(b)
		}
		return len(b), nil
	}
	// In JSON mode the SDK writes each JSON-RPC response whole, in one
	// Write; an error among them may need its words changed.
	if strings.HasPrefix(j.Header().Get("Content-Type"), "application/json") {
		if nb := rewriteRPCError(b, j.req.Method); nb != nil {
			if _, err := j.ResponseWriter.Write(nb); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return j.ResponseWriter.Write(b)
}

// Flush lets the SDK stream server-sent events through the wrapper.
func (j *jsonErrors) Flush() {
	if !j.wroteHeader {
		j.WriteHeader(http.StatusOK)
	}
	if j.status != 0 {
		return // nothing goes out before finish writes the JSON error
	}
	if f, ok := j.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// namesGoTypes reports whether an SDK reason speaks of Go's types or its
// decoder (a "cannot unmarshal … into Go value of type jsonrpc2.…", an id
// of "map[string]interface {}", "unmarshaling jsonrpc message: unexpected
// EOF"): errors speak JSON, not Go (docs/decisions.md, JSON errors), so
// such a reason gives way to ours.
func namesGoTypes(reason string) bool {
	for _, s := range []string{"Go value", "Go struct field", "interface {", "map[", "jsonrpc2.", "reflect.", "unmarshal"} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return sdkTypeName.MatchString(reason)
}

// sdkTypeName matches the name of one of the SDK's Go types
// ("*mcp.CallToolParamsRaw", "mcp.initializeParamsV2").
var sdkTypeName = regexp.MustCompile(`\bmcp\.[A-Za-z]`)

func messageFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "The MCP request is malformed: send one JSON-RPC message as JSON, with Accept: application/json, text/event-stream."
	case http.StatusUnsupportedMediaType:
		return "The MCP request body must be JSON (Content-Type: application/json)."
	case http.StatusRequestEntityTooLarge:
		return "The request body is larger than 65536 bytes."
	case http.StatusNotFound:
		return "No MCP session with this id; this server is stateless, so send requests without Mcp-Session-Id."
	case http.StatusForbidden:
		return "The MCP request was refused."
	case http.StatusMethodNotAllowed:
		return "The MCP endpoint answers POST only."
	}
	return "The MCP request failed."
}
