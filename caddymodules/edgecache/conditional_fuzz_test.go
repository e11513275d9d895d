package edgecache

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzConditional feeds If-None-Match and If-Modified-Since to a stored
// entry (RFC 9110 §13.2.2): nothing panics, If-None-Match wins over
// If-Modified-Since, a list naming the entry's tag (weakly) within the first
// 64 members matches, and an unparseable date never answers 304.
func FuzzConditional(f *testing.F) {
	f.Add(`"v1"`, "")
	f.Add(`W/"v1"`, "")
	f.Add(`"a", "b" , W/"v1"`, "")
	f.Add("*", "")
	f.Add("", "Mon, 23 Nov 2026 10:00:00 GMT")
	f.Add("", "Monday, 23-Nov-26 10:00:00 GMT")
	f.Add("", "Mon Nov 23 10:00:00 2026")
	f.Add("", "yesterday")
	f.Add(`"nope"`, "Mon, 23 Nov 2026 10:00:00 GMT")
	f.Add(strings.Repeat(`"x",`, 70)+`"v1"`, "")
	lastMod := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, inm, ims string) {
		e := &entry{status: http.StatusOK, etag: `"v1"`, lastMod: lastMod}
		r := &http.Request{Header: http.Header{}}
		if inm != "" {
			r.Header["If-None-Match"] = []string{inm}
		}
		if ims != "" {
			r.Header["If-Modified-Since"] = []string{ims}
		}
		got := e.notModified(r)
		if inm != "" {
			want := false
			for i, part := range strings.Split(inm, ",") {
				part = strings.TrimSpace(part)
				if i < 64 && (part == "*" || strings.TrimPrefix(part, "W/") == `"v1"`) {
					want = true
					break
				}
			}
			if got != want {
				t.Fatalf("If-None-Match %q: notModified=%v; want %v", inm, got, want)
			}
			return
		}
		if ims != "" {
			at, err := http.ParseTime(ims)
			if want := err == nil && !lastMod.After(at); got != want {
				t.Fatalf("If-Modified-Since %q: notModified=%v; want %v", ims, got, want)
			}
		}
	})
}
