package origin

import (
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/origin/respond"
)

// TestCappedCacheControl holds an expiring answer's freshness, and the
// time it may be served stale, to what is left until it expires.
func TestCappedCacheControl(t *testing.T) {
	testCases := []struct {
		desc string
		cc   string
		left time.Duration
		want string
	}{
		{desc: "a day away: only stale-while-revalidate shrinks", cc: respond.CacheRead, left: 24 * time.Hour, want: "public, max-age=300, s-maxage=3600, stale-while-revalidate=82800"},
		{desc: "two hours away", cc: respond.CacheRead, left: 2 * time.Hour, want: "public, max-age=300, s-maxage=3600, stale-while-revalidate=3600"},
		{desc: "half an hour away: the edge keeps it until then, never stale", cc: respond.CacheRead, left: 30 * time.Minute, want: "public, max-age=300, s-maxage=1800"},
		{desc: "seconds away", cc: respond.CacheRead, left: 42*time.Second + 600*time.Millisecond, want: "public, max-age=42, s-maxage=42"},
		{desc: "already past", cc: respond.CacheRead, left: -time.Second, want: "public, max-age=0, s-maxage=0"},
		{desc: "no-store is kept", cc: respond.NoStore, left: time.Minute, want: "no-store"},
		{desc: "other directives are kept", cc: "public, max-age=60, must-revalidate", left: 10 * time.Second, want: "public, max-age=10, must-revalidate"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := cappedCacheControl(tc.cc, tc.left); got != tc.want {
				t.Errorf("cappedCacheControl(%q, %s) = %q, want %q", tc.cc, tc.left, got, tc.want)
			}
		})
	}
}
