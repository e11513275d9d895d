package edgecache

import (
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
	for _, want := range recordEntries() {
		t.Run(want.key, func(t *testing.T) {
			got := unmarshalEntry(want.marshal(nil), false)
			if got == nil {
				t.Fatal("the record does not read back")
			}
			if diff := entryDiff(got, want); diff != "" {
				t.Errorf("read back with %s", diff)
			}
		})
	}
	if e := unmarshalEntry(append([]byte{recordVersion + 1}, recordEntries()[0].marshal(nil)[1:]...), false); e != nil {
		t.Error("a record of another version reads as an entry")
	}
}

// FuzzRecord: whatever the bytes, reading them either fails or gives an
// entry whose fields can be written, the same with its fields copied or
// shared, and which reads back the same.
func FuzzRecord(f *testing.F) {
	for _, e := range recordEntries() {
		f.Add(e.marshal(nil))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		e := unmarshalEntry(rec, false)
		if copied := unmarshalEntry(rec, true); (copied == nil) != (e == nil) {
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
		again := unmarshalEntry(e.marshal(nil), false)
		if again == nil {
			t.Fatal("a read entry does not read back")
		}
		if diff := entryDiff(again, e); diff != "" {
			t.Fatalf("read back with %s", diff)
		}
	})
}
