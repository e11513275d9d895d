package token

import (
	"net/http"
	"testing"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// TestUnauthorizedHeader checks that the 401s keep their challenge under
// the canonical key, where http.Header's Get, Set and Del (and so every
// middleware that edits headers with them) find it, once.
func TestUnauthorizedHeader(t *testing.T) {
	const root = "https://iw.test"
	testCases := []struct {
		desc string
		err  *apierror.Error
		want string
	}{
		{desc: "no token", err: Unauthorized(root, "POST", false), want: Challenge(root, false)},
		{desc: "an invalid token", err: Unauthorized(root, "POST", true), want: Challenge(root, true)},
		{desc: "a malformed token", err: MalformedToken(root), want: Challenge(root, true)},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := tc.err.Header.Get("WWW-Authenticate"); got != tc.want {
				t.Errorf("Header.Get(WWW-Authenticate) = %q; want %q", got, tc.want)
			}
			for k, v := range tc.err.Header {
				if k != http.CanonicalHeaderKey(k) || len(v) != 1 {
					t.Errorf("header %q: %q; want each key canonical with one value", k, v)
				}
			}
		})
	}
}
