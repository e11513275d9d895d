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
