package store_test

import (
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/store"
)

// FuzzParseCursor feeds the cursor query parameter, which clients send back
// as they please: any string either fails to parse or names a cursor that
// encodes and parses back to itself.
func FuzzParseCursor(f *testing.F) {
	f.Add(store.Cursor{PublishedAt: time.Unix(1_764_000_000, 0), Slug: "peppol-bis-3"}.Encode())
	f.Add("")
	f.Add("MTc2NDAwMDAwMDo")     // "1764000000:" without a slug
	f.Add("LTE6eA")              // "-1:x"
	f.Add("KzU6eA")              // "+5:x"
	f.Add("OTk5OTk5OTk5OTk5OnM") // far beyond 2^40 seconds
	f.Add("!!not base64!!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := store.ParseCursor(s)
		if err != nil {
			return
		}
		if c.Slug == "" || c.PublishedAt.Before(time.Unix(0, 0)) {
			t.Fatalf("ParseCursor(%q) accepted %+v", s, c)
		}
		back, err := store.ParseCursor(c.Encode())
		if err != nil || back != c {
			t.Fatalf("cursor %+v from %q does not survive Encode: %+v, %v", c, s, back, err)
		}
	})
}
