package store

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Records are decoded on every listing, article page, twin, feed and ask
// index build, and at a million articles a listing page that misses the
// caches spent half its origin time in encoding/json (docs/scale.md). They
// are decoded with the JSON v2 implementation (the module Go's
// encoding/json/v2 comes from), about 2.5 times as fast on our records
// (BenchmarkDecodeRecord). Every record is written by encoding/json or its
// byte-for-byte twin encodePublishedRecord, so its names match the struct
// tags exactly; the options keep encoding/json's leniency anyway for what
// v2 would refuse, so an odd record is read as before rather than fail.
var recordOptions = jsonv2.JoinOptions(
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
)

// decodeRecord decodes a stored article record.
func decodeRecord(raw []byte, rec *ArticleRecord) error {
	return jsonv2.Unmarshal(raw, rec, recordOptions)
}

// decodeRecordHead decodes a stored article record without its body,
// which is most of its bytes and which a listing does not show: the body
// is skipped unread, and rec.Body is left empty.
func decodeRecordHead(raw []byte, rec *ArticleRecord) error {
	var head recordHead
	if err := jsonv2.Unmarshal(raw, &head, recordOptions); err != nil {
		return err
	}
	*rec = head.ArticleRecord
	return nil
}

// recordHead is an ArticleRecord whose body field is a skipped value: as
// in encoding/json, the shallower field takes the name "body" from the
// embedded one.
type recordHead struct {
	ArticleRecord
	Body skippedValue `json:"body"`
}

// skippedValue is a JSON value read past without being decoded.
type skippedValue struct{}

// UnmarshalJSONFrom skips the value.
func (*skippedValue) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }
