package api

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
)

func TestParseListQuery(t *testing.T) {
	cases := []struct {
		desc   string
		query  string
		ok     bool
		limit  int
		offset int
		// hint, when set, must be part of the refusal's hint.
		hint string
	}{
		{desc: "defaults", query: "", ok: true, limit: 25},
		{desc: "bounds inclusive", query: "limit=100&offset=10000", ok: true, limit: 100, offset: 10000},
		{desc: "limit 1", query: "limit=1", ok: true, limit: 1},
		{desc: "leading zeros are digits", query: "limit=007", ok: true, limit: 7},
		{desc: "unknown parameter ignored", query: "foo=bar&limit=3", ok: true, limit: 3},
		{desc: "empty limit", query: "limit=", ok: false},
		{desc: "limit 0", query: "limit=0", ok: false},
		{desc: "limit 101", query: "limit=101", ok: false},
		{desc: "huge limit", query: "limit=99999999999999999999", ok: false},
		{desc: "float limit", query: "limit=2.5", ok: false},
		{desc: "hex limit", query: "limit=0x10", ok: false},
		{desc: "negative offset", query: "offset=-1", ok: false},
		{desc: "offset 10001 names the cursor", query: "offset=10001", ok: false, hint: "cursor"},
		{desc: "offset 999999 names the cursor", query: "offset=999999", ok: false, hint: "cursor"},
		{desc: "offset of eight digits names the cursor", query: "offset=12345678", ok: false, hint: "cursor"},
		{desc: "offset of twenty digits names the cursor", query: "offset=99999999999999999999", ok: false, hint: "cursor"},
		{desc: "leading zeros do not count as length", query: "limit=0000010&offset=0000000", ok: true, limit: 10},
		{desc: "many leading zeros before an offset in range", query: "offset=000000000000010000", ok: true, limit: 25, offset: 10000},
		{desc: "zeros alone are zero", query: "offset=00000000000000000000000", ok: true, limit: 25},
		{desc: "limit below range does not name the cursor", query: "limit=000", ok: false, hint: "from 1 to 100."},
		{desc: "section", query: "section=specs", ok: true, limit: 25},
		{desc: "section in capitals", query: "section=SPECS", ok: false},
		{desc: "audience", query: "audience=ap", ok: true, limit: 25},
		{desc: "country", query: "country=fr", ok: true, limit: 25},
		{desc: "country with digit", query: "country=f1", ok: false},
		{desc: "country non-ASCII", query: "country=%C3%A9s", ok: false},
		{desc: "duplicate section", query: "section=specs&section=specs", ok: false},
		{desc: "bad cursor", query: "cursor=xyz", ok: false},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			lq, err := ParseListQuery(q)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				var ae *apierror.Error
				if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "bad_request" || ae.Hint == "" {
					t.Fatalf("err = %#v, want a 400 bad_request with a hint", err)
				}
				if !strings.Contains(ae.Hint, tc.hint) {
					t.Fatalf("hint %q does not name %q", ae.Hint, tc.hint)
				}
				return
			}
			if lq.Limit != tc.limit || lq.Offset != tc.offset {
				t.Fatalf("limit %d offset %d, want %d %d", lq.Limit, lq.Offset, tc.limit, tc.offset)
			}
		})
	}
}

// FuzzParseListQuery: whatever the query, the parser either accepts values
// inside the contract's bounds or refuses with a 400 — never a panic, never
// another status.
func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=5", "section=mandates&audience=biz&country=de&limit=100&offset=10000", "limit=-1", "cursor=MTc5MzAwNTIwMDphcnRpY2xlLTAwMDI1", "country=DE", "offset=1e3", "limit=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := ParseListQuery(q)
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status != 400 {
				t.Fatalf("%q: err %v is not a 400", raw, err)
			}
			return
		}
		f := lq.Filter
		switch {
		case lq.Limit < 1 || lq.Limit > MaxLimit, lq.Offset < 0 || lq.Offset > MaxOffset:
			t.Fatalf("%q: accepted limit %d offset %d", raw, lq.Limit, lq.Offset)
		case f.Section != "" && !slices.Contains(content.Sections, f.Section),
			f.Audience != "" && !slices.Contains(content.Audiences, f.Audience),
			f.Country != "" && !IsCountryCode(f.Country):
			t.Fatalf("%q: accepted filter %+v", raw, f)
		}
	})
}
