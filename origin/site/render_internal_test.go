package site

import "testing"

// TestSpecVersion holds the article page's spec list to one statement of
// each version: what the name already says is not said again.
func TestSpecVersion(t *testing.T) {
	testCases := []struct {
		desc, name, version, want string
	}{
		{desc: "the name ends with the version's number", name: "Peppol BIS Billing 3.0", version: "3.0 (May 2026 release)", want: "May 2026 release"},
		{desc: "a version with parentheses of its own", name: "PINT-SG (Singapore)", version: "1.4.1 (draft)", want: "1.4.1 (draft)"},
		{desc: "a plain version", name: "XRechnung", version: "3.0.2", want: "3.0.2"},
		{desc: "a version starting like the name's number", name: "Peppol BIS Billing 3.0", version: "3.0.20", want: "3.0.20"},
		{desc: "the name contains the version", name: "KSeF FA(3)", version: "FA(3)", want: ""},
		{desc: "the name ends with the version in parentheses", name: "Peppol PKI (G3)", version: "G3", want: ""},
		{desc: "no version", name: "PINT-MY (Malaysia)", version: "", want: ""},
		{desc: "two parenthesised parts are kept whole", name: "Spec 2.0", version: "2.0 (a) (b)", want: "(a) (b)"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := specVersion(tc.name, tc.version); got != tc.want {
				t.Errorf("specVersion(%q, %q) = %q, want %q", tc.name, tc.version, got, tc.want)
			}
		})
	}
}
