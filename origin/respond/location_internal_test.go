package respond

import (
	"net/url"
	"testing"
)

// TestQueryForLocation holds a redirect's query to RFC 3986 §3.4: what a
// query may hold is kept, anything else is percent-encoded, so a client that
// follows the Location sends the same query the server read.
func TestQueryForLocation(t *testing.T) {
	testCases := []struct {
		desc, query, want string
	}{
		{desc: "a plain query is kept", query: "page=2&utm_source=x", want: "page=2&utm_source=x"},
		{desc: "sub-delims, colon, at, slash and question mark are kept", query: "a=b;c,d:e@f/g?h!'()*+$", want: "a=b;c,d:e@f/g?h!'()*+$"},
		{desc: "escapes are kept", query: "q=%C3%A4", want: "q=%C3%A4"},
		{desc: "a raw # would end the query at the client", query: "section=mandates#x&limit=1", want: "section=mandates%23x&limit=1"},
		{desc: "brackets are gen-delims, not query characters", query: "a[0]=1", want: "a%5B0%5D=1"},
		{desc: "space, quote and UTF-8", query: "q=ä \"", want: "q=%C3%A4%20%22"},
		{desc: "a % that starts no escape", query: "x=%ZZ&z=%41%", want: "x=%25ZZ&z=%41%25"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got := queryForLocation(tc.query)
			if got != tc.want {
				t.Fatalf("queryForLocation(%q) = %q, want %q", tc.query, got, tc.want)
			}
			u, err := url.Parse("https://iw.test/x?" + got)
			if err != nil || u.Fragment != "" || u.RawQuery != got {
				t.Fatalf("%q does not read back as one query: %+v, %v", got, u, err)
			}
			// The query the client follows with is the query the server read
			// (a stray % aside, which the server reads as no escape).
			if want, err := url.ParseQuery(tc.query); err == nil {
				if back, _ := url.ParseQuery(got); want.Encode() != back.Encode() {
					t.Fatalf("reads back as %v, want %v", back, want)
				}
			}
		})
	}
}
