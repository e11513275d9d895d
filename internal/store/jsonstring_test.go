package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// FuzzAppendJSONString holds appendJSONString to encoding/json's bytes
// for any string, valid UTF-8 or not.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain text of some length", "<a href=\"x\">&amp;</a>", "tab\there\nnewline\r\x00\x1f\x7f",
		"caf\u00e9 \u2028 \u2029 \ufffd \xff\xfe", "12345678\"", "1234567\\8", "\x80abcdefgh", "abcdefg\xe2\x80\xa8",
		"ab\xe2\x80", "--------<-------", "a\b\fb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s; encoding/json gives %s", s, got, want)
		}
	})
}

// TestEncodePublishedRecord holds encodePublishedRecord to json.Marshal of
// the record, for articles with every field and with the fewest.
func TestEncodePublishedRecord(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	full := &content.Article{Slug: "s", Title: "T <b>", Kicker: "k", Dek: "d", Section: "specs", Audience: []string{"ap"},
		Countries: []string{"de"}, Tags: []string{"x"}, Specs: []string{"y"}, Locale: "en", PublishedAt: at, UpdatedAt: &at,
		Image: "/i.png", Sources: []content.Citation{{Source: "a", Name: "A", URL: "https://a.example/"}},
		Corrections: []content.Correction{{Date: at, Text: "c"}},
		Body:        "Body with \"quotes\", <html> & \u2028 and a body: of text.\n"}
	for _, a := range []*content.Article{full, {Slug: "t", PublishedAt: at}, {Slug: "u", Body: `"body":"","state":"published"}`}} {
		want, err := json.Marshal(&ArticleRecord{Article: *a, State: StatePublished})
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodePublishedRecord(a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("article %s:\n got %s\nwant %s", a.Slug, got, want)
		}
	}
}
