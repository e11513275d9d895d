package httpheader

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

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

func TestMatchesStrong(t *testing.T) {
	testCases := []struct {
		desc   string
		values []string
		etag   string
		want   bool
	}{
		{desc: "the same tag", values: []string{`"abc"`}, etag: `"abc"`, want: true},
		{desc: "in a list", values: []string{`"x", "abc"`}, etag: `"abc"`, want: true},
		{desc: "in a second header line", values: []string{`"x"`, `"abc"`}, etag: `"abc"`, want: true},
		{desc: "star", values: []string{`*`}, etag: `"abc"`, want: true},
		{desc: "star without a tag", values: []string{`*`}, etag: "", want: true},
		{desc: "another tag", values: []string{`"nomatch"`}, etag: `"abc"`, want: false},
		{desc: "weak form of the same tag: the strong comparison fails", values: []string{`W/"abc"`}, etag: `"abc"`, want: false},
		{desc: "a weak representation tag matches nothing", values: []string{`W/"abc"`, `"abc"`}, etag: `W/"abc"`, want: false},
		{desc: "no tag to compare", values: []string{`"abc"`}, etag: "", want: false},
		{desc: "a coding's tag is another representation", values: []string{`"abc"`}, etag: `"abc-gzip"`, want: false},
		{desc: "the coding's own tag", values: []string{`"abc-gzip"`}, etag: `"abc-gzip"`, want: true},
		{desc: "empty members are skipped", values: []string{`, ,"abc"`}, etag: `"abc"`, want: true},
		{desc: "an empty field matches nothing", values: []string{""}, etag: `"abc"`, want: false},
		{desc: "the 64th member counts", values: []string{strings.Repeat(`"x", `, 63) + `"abc"`}, etag: `"abc"`, want: true},
		{desc: "the 65th member does not", values: []string{strings.Repeat(`"x", `, 64) + `"abc"`}, etag: `"abc"`, want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := MatchesStrong(tc.values, tc.etag); got != tc.want {
				t.Errorf("MatchesStrong(%q, %s) = %v, want %v", tc.values, tc.etag, got, tc.want)
			}
		})
	}
}

func TestPreconditionFailed(t *testing.T) {
	const etag = `"abc"`
	lastMod := time.Date(2026, 3, 4, 10, 0, 0, 500e6, time.UTC)
	at := func(d time.Duration) string { return lastMod.Truncate(time.Second).Add(d).Format(http.TimeFormat) }
	testCases := []struct {
		desc    string
		header  http.Header
		lastMod time.Time
		want    bool
	}{
		{desc: "no preconditions", header: http.Header{}, lastMod: lastMod, want: false},
		{desc: "If-Match, the current tag", header: http.Header{"If-Match": {etag}}, lastMod: lastMod, want: false},
		{desc: "If-Match, another tag", header: http.Header{"If-Match": {`"nomatch"`}}, lastMod: lastMod, want: true},
		{desc: "If-Match, star", header: http.Header{"If-Match": {"*"}}, lastMod: lastMod, want: false},
		{desc: "If-Unmodified-Since, the same second", header: http.Header{"If-Unmodified-Since": {at(0)}}, lastMod: lastMod, want: false},
		{desc: "If-Unmodified-Since, later", header: http.Header{"If-Unmodified-Since": {at(time.Hour)}}, lastMod: lastMod, want: false},
		{desc: "If-Unmodified-Since, earlier", header: http.Header{"If-Unmodified-Since": {"Thu, 01 Jan 2015 00:00:00 GMT"}}, lastMod: lastMod, want: true},
		{desc: "If-Unmodified-Since, a second earlier", header: http.Header{"If-Unmodified-Since": {at(-time.Second)}}, lastMod: lastMod, want: true},
		{desc: "If-Unmodified-Since, an obsolete format", header: http.Header{"If-Unmodified-Since": {"Thursday, 01-Jan-15 00:00:00 GMT"}}, lastMod: lastMod, want: true},
		{desc: "If-Unmodified-Since, an invalid date is ignored", header: http.Header{"If-Unmodified-Since": {"yesterday"}}, lastMod: lastMod, want: false},
		{desc: "If-Unmodified-Since, several values are ignored", header: http.Header{"If-Unmodified-Since": {at(-time.Hour), at(-time.Hour)}}, lastMod: lastMod, want: false},
		{desc: "If-Unmodified-Since without Last-Modified is ignored", header: http.Header{"If-Unmodified-Since": {at(-time.Hour)}}, want: false},
		{desc: "a matching If-Match wins over an earlier If-Unmodified-Since", header: http.Header{"If-Match": {etag}, "If-Unmodified-Since": {at(-time.Hour)}}, lastMod: lastMod, want: false},
		{desc: "a failing If-Match wins over a later If-Unmodified-Since", header: http.Header{"If-Match": {`"nomatch"`}, "If-Unmodified-Since": {at(time.Hour)}}, lastMod: lastMod, want: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := PreconditionFailed(tc.header, etag, tc.lastMod); got != tc.want {
				t.Errorf("PreconditionFailed(%v) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

// TestSetForOrigin: the field is set, and no Connection option names it
// any more, however the client spelled or listed it; the client's other
// options stay.
func TestSetForOrigin(t *testing.T) {
	testCases := []struct {
		desc       string
		connection []string // the client's Connection fields; nil for none
		want       []string // Connection after; nil for none
	}{
		{desc: "no Connection", connection: nil, want: nil},
		{desc: "other options only", connection: []string{"keep-alive, X-Other"}, want: []string{"keep-alive, X-Other"}},
		{desc: "the field alone", connection: []string{ReplayOnly}, want: nil},
		{desc: "the field in lower case", connection: []string{"x-invoicewire-replay-only"}, want: nil},
		{desc: "the field among others", connection: []string{"keep-alive,  X-INVOICEWIRE-REPLAY-ONLY ,X-Other"}, want: []string{"keep-alive, X-Other"}},
		{desc: "the field in a second Connection line", connection: []string{"keep-alive", "\tx-invoicewire-replay-only\t"}, want: []string{"keep-alive"}},
		{desc: "the field twice, with empty options", connection: []string{", x-invoicewire-replay-only,", "X-Invoicewire-Replay-Only"}, want: nil},
		{desc: "a longer name is another field", connection: []string{"X-Invoicewire-Replay-Only-Not"}, want: []string{"X-Invoicewire-Replay-Only-Not"}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := http.Header{}
			if tc.connection != nil {
				h["Connection"] = tc.connection
			}
			h.Set(ReplayOnly, "from the client")
			SetForOrigin(h, ReplayOnly, "1")
			if got := h.Values(ReplayOnly); len(got) != 1 || got[0] != "1" {
				t.Errorf("%s = %q; want [1]", ReplayOnly, got)
			}
			if got := h["Connection"]; strings.Join(got, "|") != strings.Join(tc.want, "|") || (got == nil) != (tc.want == nil) {
				t.Errorf("Connection %q; want %q", got, tc.want)
			}
		})
	}
}
