package store_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/store"
)

// FuzzParseCursor feeds the cursor query parameter, which clients send back
// as they please: any string either fails to parse or is exactly what
// Encode writes for the cursor it names.
func FuzzParseCursor(f *testing.F) {
	f.Add(store.Cursor{PublishedAt: time.Unix(1_764_000_000, 0), Slug: "peppol-bis-3"}.Encode())
	f.Add("")
	f.Add("MTc2NDAwMDAwMDo")     // "1764000000:" without a slug
	f.Add("LTE6eA")              // "-1:x"
	f.Add("KzU6eA")              // "+5:x"
	f.Add("OTk5OTk5OTk5OTk5OnM") // far beyond 2^40 seconds
	f.Add("!!not base64!!")
	f.Add("MTc3MTg0MDgwMDo8c2NyaXB0Pg") // "1771840800:<script>"
	f.Add("MDE3NzE4NDA4MDA6eA")         // "01771840800:x"
	f.Fuzz(func(t *testing.T, s string) {
		c, err := store.ParseCursor(s)
		if err != nil {
			return
		}
		if c.Slug == "" || c.PublishedAt.Before(time.Unix(0, 0)) || c.Encode() != s {
			t.Fatalf("ParseCursor(%q) accepted %+v, which encodes as %q", s, c, c.Encode())
		}
		back, err := store.ParseCursor(c.Encode())
		if err != nil || back != c {
			t.Fatalf("cursor %+v from %q does not survive Encode: %+v, %v", c, s, back, err)
		}
	})
}

func TestParseCursorAcceptsOnlyWhatEncodeWrites(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	cases := []struct {
		desc string
		in   string
		ok   bool
	}{
		{desc: "as issued", in: b64([]byte("1771840800:peppol-bis-3")), ok: true},
		{desc: "slug with markup", in: b64([]byte("1771840800:<script>")), ok: false},
		{desc: "slug in upper case", in: b64([]byte("1771840800:Peppol")), ok: false},
		{desc: "slug with a colon", in: b64([]byte("1771840800:x:y")), ok: false},
		{desc: "leading zero", in: b64([]byte("01771840800:x")), ok: false},
		{desc: "padded", in: base64.URLEncoding.EncodeToString([]byte("1771840800:ab")), ok: false},
		{desc: "negative time", in: b64([]byte("-5:x")), ok: false},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := store.ParseCursor(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseCursor(%q): err %v, want ok %v", tc.in, err, tc.ok)
			}
		})
	}
}
