package origin

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLastModifiedNotAheadOfDate: an entry's Last-Modified is sent, and
// compared with If-Modified-Since and If-Unmodified-Since, only once it is
// no later than the answer's time; until then the answer has none, and the
// date is never moved back to the clock (a later version could then share
// it: docs/decisions.md, "A feed's Last-Modified").
func TestLastModifiedNotAheadOfDate(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 500_000_000, time.UTC)
	date := func(d time.Duration) string { return now.Truncate(time.Second).Add(d).Format(http.TimeFormat) }
	testCases := []struct {
		desc    string
		lastMod time.Duration // from now's second
		header  http.Header
		status  int
		sent    bool
	}{
		{desc: "a past date is sent", lastMod: -time.Hour, sent: true, status: 200},
		{desc: "a date in this second is sent", lastMod: 0, sent: true, status: 200},
		{desc: "a past date answers If-Modified-Since", lastMod: -time.Hour, header: http.Header{"If-Modified-Since": {date(-time.Hour)}}, sent: true, status: 304},
		{desc: "a date a second ahead is not sent", lastMod: time.Second, sent: false, status: 200},
		{desc: "a date ahead answers no If-Modified-Since, even a later one", lastMod: time.Second, header: http.Header{"If-Modified-Since": {date(time.Hour)}}, sent: false, status: 200},
		{desc: "a date ahead fails no If-Unmodified-Since", lastMod: time.Minute, header: http.Header{"If-Unmodified-Since": {date(-time.Hour)}}, sent: false, status: 200},
		{desc: "a past date fails an earlier If-Unmodified-Since", lastMod: -time.Minute, header: http.Header{"If-Unmodified-Since": {date(-time.Hour)}}, sent: true, status: 412},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			lm := now.Truncate(time.Second).Add(tc.lastMod)
			e := &entry{status: 200, etag: `"e"`, lastMod: lm, lastModField: []string{lm.Format(http.TimeFormat)}}
			r := httptest.NewRequest("GET", "/feeds/all.xml", nil)
			for k, v := range tc.header {
				r.Header[k] = v
			}
			if got := e.precondition(r, now); got != tc.status {
				t.Errorf("status %d; want %d", got, tc.status)
			}
			got := e.modifiedAt(now)
			if sent := !got.IsZero(); sent != tc.sent {
				t.Errorf("sent %v (%v); want %v", sent, got, tc.sent)
			}
			if tc.sent && !got.Equal(lm) {
				t.Errorf("sent %v; want the entry's own %v", got, lm)
			}
		})
	}
}
