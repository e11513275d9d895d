package apierror

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestStatusForInvertsCodeFor checks the one table both ways: every code of
// the contract maps to a status whose code is that code again.
func TestStatusForInvertsCodeFor(t *testing.T) {
	for _, code := range []string{CodeBadRequest, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeMethodNotAllowed,
		CodeConflict, CodeGone, CodePreconditionFailed, CodePayloadTooLarge, CodeUnsupportedMediaType, CodeUnprocessable, CodeRateLimited,
		CodeInternal, CodeUnavailable} {
		t.Run(code, func(t *testing.T) {
			st := StatusFor(code)
			if st == 0 || CodeFor(st) != code {
				t.Errorf("StatusFor(%q) = %d, whose code is %q", code, st, CodeFor(st))
			}
		})
	}
	if st := StatusFor("no_such_code"); st != 0 {
		t.Errorf("an unknown code has status %d", st)
	}
}

// TestCodeFor: statuses outside the table get their class's code, except
// the 5xx that answer a client's request the service does not implement.
func TestCodeFor(t *testing.T) {
	testCases := []struct {
		desc   string
		status int
		want   string
	}{
		{desc: "a status of the table", status: 404, want: CodeNotFound},
		{desc: "request target too long", status: 414, want: CodeBadRequest},
		{desc: "header fields too large", status: 431, want: CodeBadRequest},
		{desc: "an unknown transfer coding", status: 501, want: CodeBadRequest},
		{desc: "an unknown HTTP version", status: 505, want: CodeBadRequest},
		{desc: "a server fault", status: 500, want: CodeInternal},
		{desc: "another 5xx", status: 507, want: CodeInternal},
		{desc: "a gateway failure", status: 502, want: CodeUnavailable},
		{desc: "a gateway timeout", status: 504, want: CodeUnavailable},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := CodeFor(tc.status); got != tc.want {
				t.Errorf("CodeFor(%d) = %q; want %q", tc.status, got, tc.want)
			}
		})
	}
}

// TestWriteReplacesASuccessHeaders checks what Write does to headers a
// handler set before it failed: the fields that describe a success's body
// (ETag, Content-Length, Content-Encoding, Content-Type) must not describe
// the error's JSON, while the caller's other headers and the error's own stay.
// A stale ETag would let a client or cache revalidate the error as if it were
// the representation (RFC 9110 §8.8.3).
func TestWriteReplacesASuccessHeaders(t *testing.T) {
	tests := []struct {
		desc    string
		before  http.Header // set by the handler before the error
		err     *Error
		want    http.Header // present with these values
		without []string    // absent
	}{
		{
			desc:    "a success's ETag is dropped",
			before:  http.Header{"Etag": {`"v1"`}},
			err:     NotFound("gone", ""),
			without: []string{"ETag"},
		},
		{
			desc:    "a success's encoding and length are dropped",
			before:  http.Header{"Content-Encoding": {"gzip"}, "Content-Length": {"3"}},
			err:     New(http.StatusInternalServerError, "failed", ""),
			without: []string{"Content-Encoding"},
		},
		{
			desc:   "a success's type becomes JSON",
			before: http.Header{"Content-Type": {"text/markdown; charset=utf-8"}},
			err:    BadRequest("bad", "fix it"),
			want:   http.Header{"Content-Type": {"application/json"}, "X-Content-Type-Options": {"nosniff"}},
		},
		{
			desc:   "the caller's other headers stay",
			before: http.Header{"Cache-Control": {"no-store"}, "Vary": {"Accept"}, "X-Request-Id": {"r1"}, "Etag": {`"v1"`}},
			err:    PreconditionFailed(),
			want:   http.Header{"Cache-Control": {"no-store"}, "Vary": {"Accept"}, "X-Request-Id": {"r1"}},
		},
		{
			desc:   "the error's own headers are sent and win",
			before: http.Header{"Retry-After": {"1"}},
			err: &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: "slow down",
				Header: http.Header{"Retry-After": {"30"}}},
			want: http.Header{"Retry-After": {"30"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				maps.Copy(w.Header(), tt.before)
				Write(w, tt.err)
			}))
			defer srv.Close()
			// Ask for no compression, so the transport neither adds nor
			// strips a Content-Encoding of its own.
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("Accept-Encoding", "identity")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("requesting the error: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the error's body: %v", err)
			}
			if resp.StatusCode != tt.err.Status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.err.Status)
			}
			if !bytes.Equal(body, tt.err.Body()) {
				t.Errorf("body = %q, want %q", body, tt.err.Body())
			}
			for k, v := range tt.want {
				if got := resp.Header.Values(k); !slices.Equal(got, v) {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tt.without {
				if got := resp.Header.Values(k); len(got) > 0 {
					t.Errorf("%s = %q, want none", k, got)
				}
			}
		})
	}
}
