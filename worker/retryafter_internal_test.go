package worker

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryAfterCap: the 12 h cap holds for both forms of Retry-After and
// for a long step's doubling, which a test with a real receiver cannot wait
// for (docs/decisions.md, "Retries").
func TestRetryAfterCap(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	testCases := []struct {
		desc       string
		step       time.Duration
		status     int
		retryAfter string
		want       time.Duration
	}{
		{desc: "seconds far ahead are capped", step: 12 * time.Hour, status: 503, retryAfter: "999999999", want: 12 * time.Hour},
		{desc: "a date far ahead is capped", step: 12 * time.Hour, status: 503, retryAfter: "Fri, 31 Dec 2099 23:59:59 GMT", want: 12 * time.Hour},
		{desc: "a date an hour ahead lengthens a 1 h step", step: time.Hour, status: 503, retryAfter: "Wed, 01 Jan 2025 01:30:00 GMT", want: 90 * time.Minute},
		{desc: "twice an 8 h step is capped at 12 h", step: 8 * time.Hour, status: 429, retryAfter: "86400", want: 12 * time.Hour},
		{desc: "a step longer than the cap is kept", step: 24 * time.Hour, status: 503, retryAfter: "60", want: 24 * time.Hour},
		{desc: "a negative number is ignored", step: 5 * time.Second, status: 503, retryAfter: "-5", want: 5 * time.Second},
		{desc: "garbage is ignored", step: 5 * time.Second, status: 503, retryAfter: "soon", want: 5 * time.Second},
		{desc: "a 429 waits at least the floor", step: 5 * time.Second, status: 429, retryAfter: "1", want: time.Minute},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := http.Header{"Retry-After": {tc.retryAfter}}
			r := result{status: tc.status, retryAfter: parseRetryAfter(h.Get("Retry-After"), now)}
			if r.retryAfter > maxRetryAfter {
				t.Errorf("parseRetryAfter(%q) = %s, over the cap", tc.retryAfter, r.retryAfter)
			}
			if got := retryWait(tc.step, time.Minute, r); got != tc.want {
				t.Errorf("wait %s, want %s", got, tc.want)
			}
		})
	}
}
