// Package apierror is the one JSON error shape of Invoicewire (the contract,
// docs/decisions.md (JSON errors)), shared by the origin and the edge so both write the same bytes.
package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Codes and the statuses they go with (the contract and docs/decisions.md (JSON errors)).
const (
	CodeBadRequest           = "bad_request"
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeRequestTimeout       = "request_timeout"
	CodeConflict             = "conflict"
	CodeGone                 = "gone"
	CodePreconditionFailed   = "precondition_failed"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnprocessable        = "unprocessable"
	CodeRateLimited          = "rate_limited"
	CodeInternal             = "internal"
	CodeUnavailable          = "unavailable"
)

var statusCodes = map[int]string{
	http.StatusBadRequest:            CodeBadRequest,
	http.StatusUnauthorized:          CodeUnauthorized,
	http.StatusForbidden:             CodeForbidden,
	http.StatusNotFound:              CodeNotFound,
	http.StatusMethodNotAllowed:      CodeMethodNotAllowed,
	http.StatusRequestTimeout:        CodeRequestTimeout,
	http.StatusConflict:              CodeConflict,
	http.StatusGone:                  CodeGone,
	http.StatusPreconditionFailed:    CodePreconditionFailed,
	http.StatusRequestEntityTooLarge: CodePayloadTooLarge,
	http.StatusUnsupportedMediaType:  CodeUnsupportedMediaType,
	http.StatusUnprocessableEntity:   CodeUnprocessable,
	http.StatusTooManyRequests:       CodeRateLimited,
	http.StatusInternalServerError:   CodeInternal,
	http.StatusServiceUnavailable:    CodeUnavailable,
}

// StatusFor returns the HTTP status of a contract error code, or 0 for a code
// the contract does not define. It is the inverse of the table CodeFor
// reads, so the developer portal's error table cannot disagree with the
// errors the service sends.
func StatusFor(code string) int {
	for status, c := range statusCodes {
		if c == code {
			return status
		}
	}
	return 0
}

// CodeFor returns the error code for an HTTP status: the contract's code when
// there is one, else the nearest class (4xx bad_request, 5xx internal or, for
// gateway failures, unavailable). 501 and 505 are bad_request: they answer
// a transfer coding or an HTTP version the request used that the service
// does not implement (RFC 9112 §6.1, RFC 9110 §15.6.6), which the client
// must change and no server fault explains; internal (the contract's
// "server fault") would send it looking for an outage.
func CodeFor(status int) string {
	if c, ok := statusCodes[status]; ok {
		return c
	}
	switch {
	case status == http.StatusNotImplemented || status == http.StatusHTTPVersionNotSupported:
		return CodeBadRequest
	case status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		return CodeUnavailable
	case status >= 500:
		return CodeInternal
	default:
		return CodeBadRequest
	}
}

// Error is an error a client is told about. Handlers return it; one writer
// turns it into the response.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Header holds headers that belong with the error (Allow on 405,
	// WWW-Authenticate on 401, Retry-After on 429).
	Header http.Header `json:"-"`
	// SurrogateKeys names the content the error depends on, so a cache can
	// drop a stored 404 the moment that content appears (docs/decisions.md, cache headers).
	SurrogateKeys []string `json:"-"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// New returns an Error for status with the status's code.
func New(status int, message, hint string) *Error {
	return &Error{Status: status, Code: CodeFor(status), Message: message, Hint: hint}
}

// BadRequest is a 400 bad_request.
func BadRequest(message, hint string) *Error { return New(http.StatusBadRequest, message, hint) }

// NotFound is a 404 not_found.
func NotFound(message, hint string) *Error { return New(http.StatusNotFound, message, hint) }

// NoSuchAddress is the 404 of a path that names nothing the service
// publishes (neither an API resource nor a page): it points at the API's
// root and its description, where every address is listed.
func NoSuchAddress(siteRoot string) *Error {
	return NotFound("Nothing is published at this address.", "The API starts at "+siteRoot+"/api/v1/ and is described at "+siteRoot+"/openapi.json.")
}

// PreconditionFailed is the 412 of a read whose If-Match or
// If-Unmodified-Since is false for the current representation (RFC 9110
// §13.1.1, §13.1.4, §15.5.13). The origin and the edge cache send the same
// one.
func PreconditionFailed() *Error {
	return New(http.StatusPreconditionFailed, "The resource does not match the request's If-Match or If-Unmodified-Since.",
		"The resource changed since you read it, or the validator names another representation: read it again without the precondition to get its current ETag and Last-Modified.")
}

// As returns err as an *Error; anything else becomes a 500 internal whose
// message reveals nothing of the cause (the cause is logged, not sent).
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return New(http.StatusInternalServerError, "The server failed to answer this request.", "Try again later; if it persists, report it with the X-Request-Id of this response.")
}

// Body is the JSON body of e: {"error":{"code","message","hint"?}}.
func (e *Error) Body() []byte {
	b, err := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	if err != nil {
		// Only strings are marshalled; this cannot fail.
		panic(err)
	}
	return append(b, '\n')
}

// Write sends e as the response, with Content-Type application/json and the
// error's own headers. The caller sets any other headers first.
func Write(w http.ResponseWriter, e *Error) {
	h := w.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	body := e.Body()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	h.Del("ETag")
	h.Del("Content-Encoding")
	w.WriteHeader(e.Status)
	w.Write(body)
}
