package apierror

import "testing"

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
