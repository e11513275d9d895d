package edgecache

import (
	"cmp"
	"net/http"
	"strings"
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

// TestEdgeFieldsNeverSent: the origin's fields meant for the edge — its
// content version (invalidation.VersionHeader), Surrogate-Key,
// Surrogate-Control — reach no client, on any path an origin's answer
// takes: stored or not, revalidated, and passed by the cache (a token,
// another method, HEAD, a 304).
func TestEdgeFieldsNeverSent(t *testing.T) {
	edge, o := startEdge(t, "")
	big := `{"items":"` + strings.Repeat("peppol e-invoicing ", 900) + `"}`
	withEdgeFields := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(invalidation.VersionHeader, "138")
			w.Header().Set("Surrogate-Key", "list")
			if r.Method == http.MethodPost || r.Method == http.MethodDelete {
				w.Header().Set("Surrogate-Control", "no-store")
				w.WriteHeader(http.StatusCreated)
				return
			}
			h(w, r)
		}
	}
	testCases := []struct {
		desc   string
		method string
		cc     string // the origin's Cache-Control; default readCC
		before bool   // a plain GET first, so that the entry is stored
		header []string
		status int
	}{
		{desc: "stored miss", method: "GET", status: 200},
		{desc: "hit", method: "GET", before: true, status: 200},
		{desc: "revalidated", method: "GET", before: true, header: []string{"Cache-Control: no-cache"}, status: 200},
		{desc: "not stored", method: "GET", cc: "no-store", status: 200},
		{desc: "not stored, gzip", method: "GET", cc: "no-store", header: []string{"Accept-Encoding: gzip"}, status: 200},
		{desc: "token", method: "GET", header: []string{"Authorization: Bearer anything"}, status: 200},
		{desc: "token, gzip", method: "GET", header: []string{"Authorization: Bearer anything", "Accept-Encoding: gzip"}, status: 200},
		{desc: "token, HEAD", method: "HEAD", header: []string{"Authorization: Bearer anything"}, status: 200},
		{desc: "token, 304", method: "GET", header: []string{"Authorization: Bearer anything", `If-None-Match: "v1"`}, status: 304},
		{desc: "POST", method: "POST", status: 201},
		{desc: "DELETE with a token", method: "DELETE", header: []string{"Authorization: Bearer anything"}, status: 201},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			p := unique("/api/v1/articles")
			o.handle(p, withEdgeFields(static(big, `"v1"`, cmp.Or(tc.cc, readCC), "")))
			if tc.before {
				edge.Do(t, "GET", p, "")
			}
			resp, _ := edge.Do(t, tc.method, p, "", tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d; want %d (Cache-Status %q)", resp.StatusCode, tc.status, resp.Header.Get("Cache-Status"))
			}
			for _, f := range []string{invalidation.VersionHeader, "Surrogate-Key", "Surrogate-Control"} {
				if v := resp.Header.Values(f); v != nil {
					t.Errorf("%s: %q reached the client (Cache-Status %q)", f, v, resp.Header.Get("Cache-Status"))
				}
			}
		})
	}
}
