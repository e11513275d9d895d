package edgecache

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// recordEntries are entries of each kind the cache stores.
func recordEntries() []*entry {
	at := time.Date(2026, 11, 26, 17, 30, 0, 123, time.UTC)
	full := &entry{
		key: "example.com /a gzip", status: http.StatusOK,
		header: packFields(http.Header{"Content-Type": {"application/json"}, "Link": {"</a.md>", "</b.md>"}}, nil, nil),
		body:   []byte(`{"a":1}`),
		coding: "gzip", etag: `"e-gzip"`, lastMod: at.Add(-time.Hour), tags: "article:a list ", uriTag: "uri example.com /a",
		vary:     []string{"Accept"},
		respTime: at, initialAge: 3 * time.Second, lifetime: time.Hour, swr: 24 * time.Hour, sie: 24 * time.Hour,
		mustRevalidate: true, upstreamStatus: "Upstream; hit",
	}
	return []*entry{
		full,
		{key: "example.com /b", marker: true, vary: []string{"Accept", "Accept-Language"}, respTime: at},
		{key: "example.com /c", status: http.StatusNotFound, respTime: at, header: packFields(http.Header{}, nil, nil)},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	dict := newHeaderDict()
	for _, want := range recordEntries() {
		// From the second time on, the fields that are not the
		// response's own come from the dictionary.
		for i := range 3 {
			t.Run(fmt.Sprint(want.key, " ", i), func(t *testing.T) {
				got := unmarshalEntry(want.marshal(nil, dict), false, dict)
				if got == nil {
					t.Fatal("the record does not read back")
				}
				if diff := entryDiff(got, want); diff != "" {
					t.Errorf("read back with %s", diff)
				}
			})
		}
	}
	if e := unmarshalEntry(append([]byte{recordVersion + 1}, recordEntries()[0].marshal(nil, nil)[1:]...), false, nil); e != nil {
		t.Error("a record of another version reads as an entry")
	}
}

// pageHeader is the stored fields of article page n as the origin sends
// them: security policy, CORS, cache policy and type alike on every page.
func pageHeader(n int) fields {
	return storedHeader(http.Header{
		"Access-Control-Allow-Origin":   {"*"},
		"Access-Control-Expose-Headers": {"RateLimit, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, ETag, Deprecation, Sunset, Link, Cache-Status, Age, X-Request-Id"},
		"Cache-Control":                 {"public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"},
		"Content-Security-Policy":       {"default-src 'none'; style-src 'self'; img-src 'self' https: data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
		"Content-Type":                  {"text/html; charset=utf-8"},
		"Date":                          {time.Unix(int64(n), 0).UTC().Format(http.TimeFormat)},
		"Etag":                          {fmt.Sprintf(`"page-%d"`, n)},
		"Last-Modified":                 {time.Unix(int64(n), 0).UTC().Format(http.TimeFormat)},
		"Vary":                          {"Accept"},
		"X-Content-Type-Options":        {"nosniff"},
	}, fmt.Sprint(1000+n), nil)
}

// TestDictionaryKeepsFieldsOnce: the fields many responses have alike are
// kept once, in the dictionary, from their second store on, and each
// record then only carries its own; a set that never recurs stays in its
// record and does not take a slot.
func TestDictionaryKeepsFieldsOnce(t *testing.T) {
	dict := newHeaderDict()
	page := func(n int) *entry {
		return &entry{key: fmt.Sprint("example.com /page/", n), status: http.StatusOK, header: pageHeader(n), body: []byte("<p>a page</p>")}
	}
	first, second, third := page(1).marshal(nil, dict), page(2).marshal(nil, dict), page(3).marshal(nil, dict)
	if saved := len(first) - len(second); saved < 300 {
		t.Errorf("a page's record is %d bytes with the dictionary, %d without: want at least 300 bytes fewer", len(second), len(first))
	}
	if len(third) != len(second) {
		t.Errorf("the third record is %d bytes, the second %d", len(third), len(second))
	}
	for n, rec := range [][]byte{first, second, third} {
		got := unmarshalEntry(rec, true, dict)
		if got == nil {
			t.Fatalf("record %d does not read back", n+1)
		}
		if inDict := got.header.shared != nil; inDict != (n > 0) {
			t.Errorf("record %d: fields from the dictionary %v, want %v (a set is taken on its second store)", n+1, inDict, n > 0)
		}
		if diff := entryDiff(got, page(n+1)); diff != "" {
			t.Errorf("record %d read back with %s", n+1, diff)
		}
	}
	if e := unmarshalEntry(third, false, newHeaderDict()); e != nil {
		t.Error("a record reads with a dictionary that does not hold its set")
	}

	// Responses whose common fields differ every time (a field that
	// should have been the response's own) are stored whole and leave
	// the dictionary's slots to the sets that recur.
	before := dict.used()
	for n := range 4 * maxSets {
		ph := pageHeader(n)
		h := ph.header(1)
		h["X-Trace"] = []string{fmt.Sprint("trace-", n)}
		e := &entry{key: "example.com /x", status: http.StatusOK, header: packFields(h, nil, nil)}
		if got := unmarshalEntry(e.marshal(nil, dict), false, dict); got == nil || got.header.shared != nil {
			t.Fatalf("response %d: read back %v, with fields from the dictionary", n, got)
		}
	}
	if used := dict.used(); used != before {
		t.Errorf("%d slots taken by sets that never recurred", used-before)
	}
}

// FuzzRecord: whatever the bytes, reading them either fails or gives an
// entry whose fields can be written, the same with its fields copied or
// shared, and which reads back the same.
func FuzzRecord(f *testing.F) {
	dict := newHeaderDict()
	for _, e := range recordEntries() {
		f.Add(e.marshal(nil, dict))
	}
	for n := range 3 {
		f.Add((&entry{key: "example.com /p", status: http.StatusOK, header: pageHeader(n)}).marshal(nil, dict))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		e := unmarshalEntry(rec, false, dict)
		if copied := unmarshalEntry(rec, true, dict); (copied == nil) != (e == nil) {
			t.Fatalf("read with its fields copied: %v; shared: %v", copied != nil, e != nil)
		} else if e != nil {
			if diff := entryDiff(copied, e); diff != "" {
				t.Fatalf("read with its fields copied: %s", diff)
			}
		}
		if e == nil {
			return
		}
		e.header.setInto(make(http.Header), nil)
		again := unmarshalEntry(e.marshal(nil, dict), false, dict)
		if again == nil {
			t.Fatal("a read entry does not read back")
		}
		if diff := entryDiff(again, e); diff != "" {
			t.Fatalf("read back with %s", diff)
		}
	})
}

// used is how many slots hold a set.
func (d *headerDict) used() int {
	n := 0
	for i := range d.slots {
		if d.slots[i].Load() != nil {
			n++
		}
	}
	return n
}
