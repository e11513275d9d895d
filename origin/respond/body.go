package respond

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// MaxBody is the default bound on request bodies (docs/decisions.md (subscriptions): 64 KiB).
const MaxBody = 64 << 10

// ReadBody reads a request body of at most max bytes, answering 413
// payload_too_large beyond it.
func ReadBody(r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, tooLarge(max)
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, max))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(max)
	}
	if err != nil {
		return nil, apierror.BadRequest("The request body could not be read.", "Send the whole body with a correct Content-Length.")
	}
	return b, nil
}

func tooLarge(max int64) error {
	return apierror.New(http.StatusRequestEntityTooLarge, "The request body is larger than "+strconv.FormatInt(max, 10)+" bytes.", "Send a smaller body.")
}

// MediaType returns the request's media type without parameters, lowercase,
// or "" when Content-Type is absent or malformed.
func MediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// DecodeJSON reads a JSON object body into v: 415 unsupported_media_type when
// the Content-Type is not application/json (or +json), 413 over max bytes,
// 400 bad_request for malformed JSON, a value of the wrong type or trailing
// data, or a member name an object gives twice. Unknown fields are ignored, as unknown query parameters are (docs/decisions.md, invalid query parameters). The raw body is returned for fingerprints and
// signatures.
func DecodeJSON(r *http.Request, max int64, v any) ([]byte, error) {
	if mt := MediaType(r); mt != "application/json" && !(len(mt) > 5 && mt[len(mt)-5:] == "+json") {
		return nil, apierror.New(http.StatusUnsupportedMediaType, "The request body must be JSON.", "Send Content-Type: application/json.")
	}
	body, err := ReadBody(r, max)
	if err != nil {
		return nil, err
	}
	if err := StrictUnmarshal(body, v); err != nil {
		return nil, err
	}
	return body, nil
}

// StrictUnmarshal decodes exactly one JSON value into v, with a 400 that says
// what was wrong in the words of JSON (object, string, number), never in
// those of Go: decoding errors name Go types (ask.wireRequest), which mean
// nothing to a client and tell more than it needs about the server.
func StrictUnmarshal(body []byte, v any) error {
	if err := CheckUTF8(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return apierror.BadRequest("Field "+te.Field+" must be "+jsonKind(te.Type)+", not "+jsonValueWord(te.Value)+".", "Check the request schema in /openapi.json.")
		case errors.As(err, &te):
			return apierror.BadRequest("The request body must be "+jsonKind(te.Type)+", not "+jsonValueWord(te.Value)+".", "Check the request schema in /openapi.json.")
		case errors.As(err, &se):
			return apierror.BadRequest("The request body is not valid JSON (at byte "+strconv.FormatInt(se.Offset, 10)+").", "Send one JSON object.")
		case errors.Is(err, io.EOF):
			return apierror.BadRequest("The request body is empty.", "Send a JSON object.")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return apierror.BadRequest("The request body ends in the middle of its JSON value.", "Send one complete JSON object.")
		default:
			return apierror.BadRequest("The request body is not valid JSON for this endpoint.", "Check the request schema in /openapi.json.")
		}
	}
	// Anything but white space after the value is a second value or garbage.
	// (dec.More is no test for it: it reports false before a stray '}' or
	// ']', so {"query":"x"}} passed; found by make fuzz.)
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return apierror.BadRequest("The request body has data after the JSON value.", "Send exactly one JSON object.")
	}
	if err := checkSurrogateEscapes(body); err != nil {
		return err
	}
	// One walk of the body finds a member given twice and builds the
	// generic tree caseOnlyMatch reads.
	tree, name, twice := jsonTree(body)
	if twice {
		return apierror.BadRequest("The request body gives member "+strconv.Quote(name)+" more than once.", "Give each member once: names within an object should be unique (RFC 8259 §4).")
	}
	// encoding/json matches member names to fields without regard to case,
	// so {"querY": …} would fill Query although the schema has no such
	// member: a client's typo must not pass for the field it resembles.
	if name, field := caseOnlyMatch(tree, reflect.TypeOf(v)); name != "" {
		return apierror.BadRequest("The request body has no member "+strconv.Quote(name)+"; member names are case-sensitive.", "Did you mean "+strconv.Quote(field)+"? Check the request schema in /openapi.json.")
	}
	return nil
}

// jsonTree decodes body, one valid JSON value, into the generic tree
// (map[string]any, []any, values) that caseOnlyMatch reads, and reports the
// path (a.b[2].c) of the first member whose name its object already gave,
// at any depth. encoding/json keeps the last of them silently, so
// {"url":"a","url":"b"} would subscribe b; the query and form parameters
// refuse a repeat (docs/decisions.md, "Invalid query parameters"; RFC 6749
// §3.2), and RFC 8259 §4 leaves such an object's meaning to each parser.
// Names are compared unescaped, so "\u0075rl" repeats "url".
func jsonTree(body []byte) (tree any, duplicate string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	// Numbers stay text: Token would parse them as float64 and fail on one
	// out of its range, which the value's own field may well accept.
	dec.UseNumber()
	tree, duplicate, found, _ = readValue(dec, "")
	return tree, duplicate, found
}

// readValue reads the value that starts at dec's next token, at path.
func readValue(dec *json.Decoder, path string) (v any, duplicate string, found bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, "", false, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, "", false, err
			}
			name, _ := tok.(string)
			at := name
			if path != "" {
				at = path + "." + name
			}
			if _, seen := obj[name]; seen {
				return nil, at, true, nil
			}
			if obj[name], duplicate, found, err = readValue(dec, at); found || err != nil {
				return nil, duplicate, found, err
			}
		}
		v = obj
	case json.Delim('['):
		arr := []any{}
		for i := 0; dec.More(); i++ {
			e, duplicate, found, err := readValue(dec, path+"["+strconv.Itoa(i)+"]")
			if found || err != nil {
				return nil, duplicate, found, err
			}
			arr = append(arr, e)
		}
		v = arr
	default:
		return tok, "", false, nil
	}
	_, err = dec.Token() // the closing delimiter
	return v, "", false, err
}

// CheckUTF8 answers 400 bad_request when body is not valid UTF-8. JSON
// exchanged between systems must be UTF-8 (RFC 8259 §8.1), and
// encoding/json would otherwise replace each invalid byte with U+FFFD: a
// URL, a name or a query would be stored changed, silently, instead of
// refused.
func CheckUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	at := 0
	for at < len(body) {
		r, n := utf8.DecodeRune(body[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return apierror.BadRequest("The request body is not valid UTF-8 (at byte "+strconv.Itoa(at)+").", "Encode the JSON text in UTF-8 (RFC 8259 §8.1); write other bytes as \\u escapes.")
}

// checkSurrogateEscapes answers 400 bad_request when a \u escape of body,
// one valid JSON value, names half of a UTF-16 surrogate pair without the
// other half ("\ud800"). Such an escape names no character (RFC 8259 §8.2;
// I-JSON, RFC 7493 §2.1, forbids it) and encoding/json replaces it with
// U+FFFD, so the text would be stored changed, silently, as invalid UTF-8
// would be (CheckUTF8).
func checkSurrogateEscapes(body []byte) error {
	// In a valid JSON text a backslash only ever starts an escape in a
	// string, so escapes can be read without tracking strings.
	for i := 0; i+1 < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++ // \", \\ and the like: skip the escaped byte
			continue
		}
		r := hex4(body[i+2:])
		if r < 0xD800 || r > 0xDFFF {
			i += 5
			continue
		}
		if r <= 0xDBFF && i+11 < len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
			if lo := hex4(body[i+8:]); lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11 // a pair: one character
				continue
			}
		}
		return apierror.BadRequest("The request body has an unpaired surrogate escape "+strconv.Quote(string(body[i:i+6]))+" (at byte "+strconv.Itoa(i)+").",
			"Write each character outside the Basic Multilingual Plane as a pair of \\u escapes, high then low (RFC 8259 §7), or as UTF-8.")
	}
	return nil
}

// hex4 is the value of the four hex digits b starts with (a valid JSON
// escape has them).
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n)
}

// jsonValueWord is the JSON word for the kind of value encoding/json
// reports in an UnmarshalTypeError: it says "bool" where JSON says
// "boolean".
func jsonValueWord(v string) string {
	if v == "bool" {
		return "boolean"
	}
	return v
}

// caseOnlyMatch returns the first member name of the decoded JSON value v
// that names a field of t only when case is ignored, with that field's
// name, looking into nested objects and arrays; "" when there is none.
func caseOnlyMatch(v any, t reflect.Type) (name, field string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for _, e := range v {
				if n, f := caseOnlyMatch(e, t.Elem()); n != "" {
					return n, f
				}
			}
		case reflect.Struct:
			fields := jsonFields(t, map[string]reflect.Type{})
			for k, e := range v {
				if ft, ok := fields[k]; ok {
					if n, f := caseOnlyMatch(e, ft); n != "" {
						return n, f
					}
					continue
				}
				for f := range fields {
					if strings.EqualFold(f, k) {
						return k, f
					}
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, e := range v {
				if n, f := caseOnlyMatch(e, t.Elem()); n != "" {
					return n, f
				}
			}
		}
	}
	return "", ""
}

// jsonFields adds the JSON member names of struct t's exported fields, with
// their types, to into, including those of embedded structs.
func jsonFields(t reflect.Type, into map[string]reflect.Type) map[string]reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			jsonFields(f.Type, into)
		case tag != "":
			into[tag] = f.Type
		default:
			into[f.Name] = f.Type
		}
	}
	return into
}

// jsonKind names what a Go type decodes from, in JSON's terms.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}
