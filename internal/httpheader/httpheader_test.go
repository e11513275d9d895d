package httpheader

import "testing"

func TestMatchesETag(t *testing.T) {
	const etag = `"abc"`
	testCases := []struct {
		desc   string
		values []string
		want   bool
	}{
		{desc: "absent", values: nil, want: false},
		{desc: "the same tag", values: []string{`"abc"`}, want: true},
		{desc: "weak form of the same tag", values: []string{`W/"abc"`}, want: true},
		{desc: "in a list", values: []string{`"x", "abc"`}, want: true},
		{desc: "in a second header line", values: []string{`"x"`, `"abc"`}, want: true},
		{desc: "star", values: []string{`*`}, want: true},
		{desc: "another tag", values: []string{`"abd"`}, want: false},
		{desc: "unquoted", values: []string{`abc`}, want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := MatchesETag(tc.values, etag); got != tc.want {
				t.Errorf("MatchesETag(%q) = %v, want %v", tc.values, got, tc.want)
			}
		})
	}
}

func TestETag(t *testing.T) {
	a, b := ETag([]byte("one")), ETag([]byte("two"))
	if a == b || a != ETag([]byte("one")) || len(a) != 26 || a[0] != '"' || a[len(a)-1] != '"' {
		t.Errorf("ETag: %s, %s", a, b)
	}
}
