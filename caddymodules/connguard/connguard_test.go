package connguard

import "testing"

// TestScanMarksBothLengthFields feeds request bytes to the head scanner in
// pieces of every size, so fields split across reads are seen too.
func TestScanMarksBothLengthFields(t *testing.T) {
	testCases := []struct {
		desc string
		in   string
		want bool
	}{
		{desc: "Content-Length only", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"},
		{desc: "chunked only", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
		{desc: "both", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: true},
		{desc: "both, other case, bare LF", in: "POST / HTTP/1.1\ntransfer-encoding: chunked\nCONTENT-LENGTH: 4\n\n", want: true},
		{desc: "in two requests of one connection", in: "GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\nPOST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{desc: "second request has both", in: "GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", want: true},
		{desc: "a header merely named alike", in: "GET / HTTP/1.1\r\nX-Content-Length: 1\r\nX-Transfer-Encoding: chunked\r\n\r\n"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			for size := 1; size <= len(tc.in); size++ {
				c := &Conn{}
				for i := 0; i < len(tc.in); i += size {
					c.scan([]byte(tc.in[i:min(i+size, len(tc.in))]))
				}
				if c.FramingConflict() != tc.want {
					t.Fatalf("read %d bytes at a time: conflict %v, want %v", size, c.FramingConflict(), tc.want)
				}
			}
		})
	}
}
