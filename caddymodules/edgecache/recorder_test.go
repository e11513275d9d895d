package edgecache

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
)

// TestRecorderBody checks the body a miss stores: whole, in one array of
// its length when Content-Length announced it, and copied when the buffer
// holds much more than the body (a Content-Length larger than what came).
func TestRecorderBody(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	for _, tc := range []struct {
		desc   string
		length int
		// ownArray: whether the buffer's array must be stored (1), must
		// not be (0), or may be, as its doubling happens to fit (-1).
		ownArray int
	}{
		{"announced", len(want), 1},
		{"not announced", -1, -1},
		{"announced larger", 4 * len(want), 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rc := &recorder{header: http.Header{}, maxBody: 1 << 20, storable: func(int, http.Header) bool { return true }}
			if tc.length >= 0 {
				rc.header.Set("Content-Length", strconv.Itoa(tc.length))
			}
			rc.WriteHeader(http.StatusOK)
			for b := want; len(b) > 0; b = b[min(len(b), 1000):] {
				rc.Write(b[:min(len(b), 1000)])
			}
			got := rc.body()
			if !bytes.Equal(got, want) {
				t.Fatalf("body of %d bytes, want the %d written", len(got), len(want))
			}
			if own := &got[0] == &rc.buf.Bytes()[0]; tc.ownArray >= 0 && own != (tc.ownArray == 1) {
				t.Errorf("body in the buffer's array: %v, want %v", own, tc.ownArray == 1)
			}
			if cap(got)-len(got) > len(got)/8+64 {
				t.Errorf("body of %d bytes holds an array of %d", len(got), cap(got))
			}
		})
	}
}
