package connguard

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// net/http answers a request it cannot parse before any handler runs, so
// json_errors never sees it: a malformed request line or target (a '%' not
// followed by two hex digits), an invalid header field, a missing or
// malformed Host, header fields over max_header_size, an unknown transfer
// coding or HTTP version, an Expect other than 100-continue, and plain HTTP
// sent to a TLS port. It writes those answers in plain text, or with no body
// at all (the 417), straight to the connection. Every error of the service
// is JSON (docs/decisions.md, JSON errors), so the connection rewrites them
// as they are written.
//
// They are recognised by net/http's fixed bytes, which no handler's response
// has: the plain-text errors are the status line, then exactly
// "Content-Type: text/plain; charset=utf-8" and "Connection: close" in that
// order, then the blank line. A handler's fields are written sorted
// (Connection before Content-Type) and followed by the Date net/http adds.
// The 417 is the only 417 (no handler answers one), and the TLS answer is
// an exact string. net/http writes each of them with a single Write, the
// first of its answer, so only a write that starts with a status line is
// looked at.

// plainErrorFields follow the status line of net/http's plain-text errors
// (net/http/server.go, conn.serve).
const plainErrorFields = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// httpToTLSPort is net/http's whole answer to plain HTTP on a TLS port.
const httpToTLSPort = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"

// expectationFailedPrefix starts net/http's answer to an Expect field it does
// not support (response.sendExpectationFailed): a 417 with no body. No
// handler of the service answers 417.
const expectationFailedPrefix = "HTTP/1.1 417 Expectation Failed\r\n"

// rewriteRawError returns the JSON answer that replaces p when p is one of
// net/http's own error answers, and false for anything else. It looks at the
// first bytes only, so the cost on every other write is a comparison or two.
// A 431 becomes 414 when requestLine reports that net/http gave up in the
// request line: the request target alone was too long (RFC 9110 §15.5.15,
// docs/decisions.md "Request-target length").
func rewriteRawError(p []byte, now time.Time, requestLine func() bool) ([]byte, bool) {
	const prefix = "HTTP/1."
	if len(p) < len(prefix)+6 || string(p[:len(prefix)]) != prefix || (p[9] != '4' && p[9] != '5') {
		return nil, false
	}
	switch {
	case string(p) == httpToTLSPort:
		return jsonAnswer(apierror.BadRequest("This port speaks HTTPS.",
			"Send the request over TLS (an https:// address)."), now), true
	case bytes.HasPrefix(p, []byte(expectationFailedPrefix)):
		return jsonAnswer(apierror.New(http.StatusExpectationFailed, "This expectation cannot be met.",
			"Send no Expect field, or Expect: 100-continue (RFC 9110 §10.1.1)."), now), true
	}
	line := bytes.IndexByte(p, '\r')
	if line < 0 || !bytes.HasPrefix(p[line:], []byte(plainErrorFields)) || string(p[:9]) != "HTTP/1.1 " {
		return nil, false
	}
	status, err := strconv.Atoi(string(p[9:12]))
	if err != nil {
		return nil, false
	}
	if status == http.StatusRequestHeaderFieldsTooLarge && requestLine() {
		status = http.StatusRequestURITooLong
	}
	// The status line is "HTTP/1.1 400 Bad Request: missing required Host
	// header" where net/http has a reason; its reasons are fixed texts that
	// never echo the request.
	var reason string
	if i := bytes.Index(p[:line], []byte(": ")); i >= 0 {
		reason = string(p[i+2 : line])
	}
	return jsonAnswer(rawErrorFor(status, reason), now), true
}

// rawErrorFor is the JSON error for one of net/http's plain-text answers.
func rawErrorFor(status int, reason string) *apierror.Error {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return apierror.New(status, "The request's header fields are too large.",
			"Send shorter header fields and a shorter request target.")
	case http.StatusRequestURITooLong:
		return apierror.New(status, "The request target (path and query) is too long.",
			"Send a shorter URL (RFC 9110 §15.5.15).")
	case http.StatusNotImplemented:
		return apierror.New(status, "This transfer coding is not supported.",
			"Send a body with Content-Length or Transfer-Encoding: chunked (RFC 9112 §6).")
	case http.StatusHTTPVersionNotSupported:
		return apierror.New(status, "This HTTP version is not supported.", "Send HTTP/1.1 or HTTP/2.")
	}
	if reason != "" {
		return apierror.New(status, "The request could not be parsed: "+reason+".",
			"Send one Host field (RFC 9112 §3.2) and header fields of visible ASCII (RFC 9110 §5.5).")
	}
	return apierror.New(status, "The request could not be parsed as HTTP/1.1.",
		"Check the request line and the header fields; a '%' in the request target must start a two-digit hex escape (RFC 3986 §2.1).")
}

// jsonAnswer is the whole HTTP/1.1 answer carrying e, with the fields
// json_errors gives every error. The connection closes after it, as net/http
// closes it after its own.
func jsonAnswer(e *apierror.Error, now time.Time) []byte {
	body := e.Body()
	b := make([]byte, 0, 320+len(body))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(e.Status)...)
	b = append(b, "\r\nAccess-Control-Allow-Origin: *\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nContent-Type: application/json\r\nDate: "...)
	b = now.UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\nX-Content-Type-Options: nosniff\r\n\r\n"...)
	return append(b, body...)
}
