package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// storedRecords are records as the store holds them: every article of the
// real corpus (non-ASCII text, corrections, images) published, one of them
// retracted, and a few odd ones.
func storedRecords(t testing.TB) [][]byte {
	t.Helper()
	corpus, err := content.Load("../../content")
	if err != nil {
		t.Fatalf("loading the corpus: %v", err)
	}
	var out [][]byte
	for _, a := range corpus.Articles {
		doc, err := encodePublishedRecord(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc)
	}
	at := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	retracted, err := json.Marshal(&ArticleRecord{Article: *corpus.Articles[0], State: StateRetracted, RetractedAt: &at, RetractionReason: "Wrong date « 2027 »."})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, retracted,
		[]byte(`{"slug":"s","title":null,"audience":null,"countries":[],"published_at":"2026-01-02T03:04:05Z","updated_at":null,"body":"x","state":"published"}`),
		[]byte(`{"slug":"s","body":{"not":"a string"},"state":"published"}`),
		[]byte(`{"slug":"first","slug":"second","body":"b","state":"published"}`),
	)
}

func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for _, raw := range storedRecords(t) {
		var want ArticleRecord
		wantErr := json.Unmarshal(raw, &want)
		var got ArticleRecord
		err := decodeRecord(raw, &got)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeRecord(%.80s) error %v, encoding/json %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(&got, &want) {
			t.Errorf("decodeRecord(%.80s) =\n%+v\nencoding/json:\n%+v", raw, got, want)
		}

		// The head is the record without its body, whatever the body
		// holds.
		var head ArticleRecord
		if err := decodeRecordHead(raw, &head); err != nil {
			if wantErr == nil || string(raw) != `{"slug":"s","body":{"not":"a string"},"state":"published"}` {
				t.Fatalf("decodeRecordHead(%.80s): %v", raw, err)
			}
			continue
		}
		want.Body = ""
		if !reflect.DeepEqual(&head, &want) {
			t.Errorf("decodeRecordHead(%.80s) =\n%+v\nwant:\n%+v", raw, head, want)
		}
	}
}

func TestDecodeRecordKeepsInvalidUTF8Readable(t *testing.T) {
	raw := []byte("{\"slug\":\"s\",\"title\":\"caf\xe9\",\"body\":\"\xff\",\"state\":\"published\"}")
	var rec ArticleRecord
	if err := decodeRecord(raw, &rec); err != nil || rec.Slug != "s" || rec.Body == "" {
		t.Fatalf("decodeRecord = %+v, %v; want the record read", rec, err)
	}
}

// BenchmarkDecodeRecord compares decoding the corpus's records with
// encoding/json, with decodeRecord and with decodeRecordHead, in the same
// run (docs/scale.md):
//
//	go test -run '^$' -bench DecodeRecord -benchmem ./internal/store/
func BenchmarkDecodeRecord(b *testing.B) {
	records := storedRecords(b)[:20]
	for _, bc := range []struct {
		desc   string
		decode func([]byte, *ArticleRecord) error
	}{
		{"encoding-json", func(raw []byte, rec *ArticleRecord) error { return json.Unmarshal(raw, rec) }},
		{"decodeRecord", decodeRecord},
		{"decodeRecordHead", decodeRecordHead},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, raw := range records {
					var rec ArticleRecord
					if err := bc.decode(raw, &rec); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
