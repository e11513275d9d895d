package edgecache

import (
	"net/http"
	"testing"

	"github.com/invoicewire/invoicewire/internal/invalidation"
)

func TestOriginCurrent(t *testing.T) {
	testCases := []struct {
		desc   string
		origin []string // the field's values; nil: absent
		seen   int64
		want   bool
	}{
		{desc: "no field: another upstream", origin: nil, seen: 7, want: true},
		{desc: "origin in step", origin: []string{"7"}, seen: 7, want: true},
		{desc: "origin ahead", origin: []string{"9"}, seen: 7, want: true},
		{desc: "origin behind the edge's purges", origin: []string{"6"}, seen: 7, want: false},
		{desc: "edge has seen nothing yet", origin: []string{"6"}, seen: -1, want: true},
		{desc: "unreadable field", origin: []string{"x"}, seen: 7, want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			hdr := http.Header{"Content-Type": {"application/json"}}
			if tc.origin != nil {
				hdr[invalidation.VersionHeader] = tc.origin
			}
			if got := originCurrent(hdr, tc.seen); got != tc.want {
				t.Errorf("originCurrent = %t; want %t", got, tc.want)
			}
			if hdr[invalidation.VersionHeader] != nil {
				t.Errorf("the origin's version field is left for the client: %v", hdr)
			}
			if hdr.Get("Content-Type") != "application/json" {
				t.Errorf("other fields touched: %v", hdr)
			}
		})
	}
}
