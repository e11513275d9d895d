package token

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzFromHeader feeds Authorization values: a Bearer credential comes back
// trimmed, anything else as present but empty, and nothing panics.
func FuzzFromHeader(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  abc ", "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "", " Bearer x", "BEARER\tx", "Bearer a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		raw, present := FromHeader(http.Header{"Authorization": {v}})
		if present != (v != "") {
			t.Fatalf("FromHeader(%q): present=%v", v, present)
		}
		if raw != strings.TrimSpace(raw) {
			t.Fatalf("FromHeader(%q) = %q, not trimmed", v, raw)
		}
		scheme, _, _ := strings.Cut(v, " ")
		if raw != "" && !strings.EqualFold(scheme, "Bearer") {
			t.Fatalf("FromHeader(%q) = %q for scheme %q", v, raw, scheme)
		}
	})
}
