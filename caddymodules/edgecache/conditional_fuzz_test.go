package edgecache

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzConditional feeds If-None-Match, If-Modified-Since, If-Match and
// If-Unmodified-Since to a stored entry (RFC 9110 §13.2.2): nothing panics;
// If-Match (strong comparison, "*" matching, within the first 64 members)
// comes first and a false one is a 412 whatever else is sent; without
// If-Match, a valid If-Unmodified-Since earlier than Last-Modified is a
// 412 and an invalid one is ignored; then If-None-Match wins over
// If-Modified-Since, a list naming the entry's tag (weakly) within the
// first 64 members matches, and an unparseable date never answers 304.
func FuzzConditional(f *testing.F) {
	f.Add(`"v1"`, "", "", "")
	f.Add(`W/"v1"`, "", "", "")
	f.Add(`"a", "b" , W/"v1"`, "", "", "")
	f.Add("*", "", "", "")
	f.Add("", "Mon, 23 Nov 2026 10:00:00 GMT", "", "")
	f.Add("", "Monday, 23-Nov-26 10:00:00 GMT", "", "")
	f.Add("", "Mon Nov 23 10:00:00 2026", "", "")
	f.Add("", "yesterday", "", "")
	f.Add(`"nope"`, "Mon, 23 Nov 2026 10:00:00 GMT", "", "")
	f.Add(strings.Repeat(`"x",`, 70)+`"v1"`, "", "", "")
	f.Add(`"v1"`, "", `"nomatch"`, "")
	f.Add("", "", `"v1"`, "")
	f.Add("", "", `W/"v1"`, "")
	f.Add("", "", "*", "Thu, 01 Jan 2015 00:00:00 GMT")
	f.Add("", "", `"x", , "v1"`, "")
	f.Add("", "", strings.Repeat(`"x",`, 70)+`"v1"`, "")
	f.Add(`"v1"`, "", "", "Thu, 01 Jan 2015 00:00:00 GMT")
	f.Add("", "", "", "Mon, 23 Nov 2026 09:00:00 GMT")
	f.Add("", "", "", "Monday, 23-Nov-26 08:59:59 GMT")
	f.Add("", "", "", "not a date")
	lastMod := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, inm, ims, im, ius string) {
		e := &entry{status: http.StatusOK, etag: `"v1"`, lastMod: lastMod}
		r := &http.Request{Header: http.Header{}}
		for k, v := range map[string]string{"If-None-Match": inm, "If-Modified-Since": ims, "If-Match": im, "If-Unmodified-Since": ius} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		got := e.precondition(r)
		if im != "" {
			match, n := false, 0
			for part := range strings.SplitSeq(im, ",") {
				if part = strings.TrimSpace(part); part == "" {
					continue
				}
				if n++; n <= 64 && (part == "*" || part == `"v1"`) {
					match = true
					break
				}
			}
			if !match {
				if got != http.StatusPreconditionFailed {
					t.Fatalf("If-Match %q: %d; want 412", im, got)
				}
				return
			}
		} else if ius != "" {
			if at, err := http.ParseTime(ius); err == nil && lastMod.After(at) {
				if got != http.StatusPreconditionFailed {
					t.Fatalf("If-Unmodified-Since %q: %d; want 412", ius, got)
				}
				return
			}
		}
		if got == http.StatusPreconditionFailed {
			t.Fatalf("If-Match %q, If-Unmodified-Since %q: 412; want the preconditions to hold", im, ius)
		}
		notModified := got == http.StatusNotModified
		if inm != "" {
			want := false
			for i, part := range strings.Split(inm, ",") {
				part = strings.TrimSpace(part)
				if i < 64 && (part == "*" || strings.TrimPrefix(part, "W/") == `"v1"`) {
					want = true
					break
				}
			}
			if notModified != want {
				t.Fatalf("If-None-Match %q: notModified=%v; want %v", inm, notModified, want)
			}
			return
		}
		if ims != "" {
			at, err := http.ParseTime(ims)
			if want := err == nil && !lastMod.After(at); notModified != want {
				t.Fatalf("If-Modified-Since %q: notModified=%v; want %v", ims, notModified, want)
			}
		} else if notModified {
			t.Fatal("304 without If-None-Match or If-Modified-Since")
		}
	})
}
