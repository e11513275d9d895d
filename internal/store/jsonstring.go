package store

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/content"
)

// encodePublishedRecord is json.Marshal(&ArticleRecord{Article: *a,
// State: StatePublished}) with the body, most of the record's bytes,
// escaped by appendJSONString, which skips eight plain bytes at a time
// where encoding/json looks at each (docs/decisions.md, "A published
// record's body is escaped a word at a time").
// The rest of the record goes through encoding/json with an empty body:
// its last field but the state is the body, so the body's place is the
// fixed tail publishedTail. TestEncodePublishedRecord and
// FuzzAppendJSONString hold it to encoding/json's bytes.
func encodePublishedRecord(a *content.Article) ([]byte, error) {
	rec := ArticleRecord{Article: *a, State: StatePublished}
	rec.Body = ""
	doc, err := json.Marshal(&rec)
	if err != nil {
		return nil, err
	}
	head, ok := bytes.CutSuffix(doc, []byte(publishedTail))
	if !ok {
		rec.Body = a.Body
		return json.Marshal(&rec)
	}
	out := make([]byte, 0, len(head)+len(a.Body)+len(a.Body)/16+len(publishedTail)+8)
	out = append(out, head...)
	out = append(out, `"body":`...)
	out = appendJSONString(out, a.Body)
	return append(out, `,"state":"published"}`...), nil
}

// publishedTail ends the record of a published article with an empty
// body.
const publishedTail = `"body":"","state":"published"}`

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports eight bytes that encoding/json copies as they are
// into a string with HTML escaping: none below 0x20 or from 0x80, none of
// " \ < > &. It may answer false for a plain word (never true for
// another): those bytes are then looked at one by one.
func plainWord(v uint64) bool {
	has := func(c uint64) uint64 { x := v ^ (c * lows); return (x - lows) &^ x & highs }
	below := (v - 0x20*lows) &^ v & highs
	return (v&highs | below | has('"') | has('\\') | has('<') | has('>') | has('&')) == 0
}

// appendJSONString is encoding/json's appendString(dst, s, true)
// (encode.go), byte for byte, with runs of plain bytes skipped a word at
// a time.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if plainWord(v) {
				i += 8
				continue
			}
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
