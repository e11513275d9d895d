package respond

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

func TestStrictUnmarshalMemberNames(t *testing.T) {
	type request struct {
		Query  string `json:"query"`
		Prefer *struct {
			MaxResults int `json:"max_results"`
		} `json:"prefer"`
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	tests := []struct {
		desc, body string
		bad        bool
	}{
		{desc: "exact names", body: `{"query":"a","prefer":{"max_results":2},"items":[{"name":"x"}]}`},
		{desc: "unknown member is ignored", body: `{"query":"a","site":"x"}`},
		{desc: "case-only match at the top", body: `{"querY":"a"}`, bad: true},
		{desc: "case-only match beside the exact one", body: `{"query":"a","QUERY":"b"}`, bad: true},
		{desc: "case-only match in a nested object", body: `{"query":"a","prefer":{"Max_Results":2}}`, bad: true},
		{desc: "a stray closing brace after the value", body: `{"query":"a"}}`, bad: true},
		{desc: "a stray closing bracket after the value", body: `{"query":"a"} ]`, bad: true},
		{desc: "white space after the value", body: "{\"query\":\"a\"} \r\n\t"},
		{desc: "case-only match in an array element", body: `{"query":"a","items":[{"name":"x"},{"Name":"y"}]}`, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var v request
			err := StrictUnmarshal([]byte(tt.body), &v)
			var ae *apierror.Error
			switch {
			case tt.bad && (!errors.As(err, &ae) || ae.Status != http.StatusBadRequest):
				t.Errorf("want a 400, got %v", err)
			case !tt.bad && err != nil:
				t.Errorf("want no error, got %v", err)
			}
		})
	}
}

// TestStrictUnmarshalSpeaksJSON: a value of the wrong type is named in
// JSON's words on both sides, never Go's ("bool").
func TestStrictUnmarshalSpeaksJSON(t *testing.T) {
	var v struct {
		Query  string `json:"query"`
		Prefer struct {
			Streaming bool `json:"streaming"`
		} `json:"prefer"`
	}
	for _, tt := range []struct{ desc, body, want string }{
		{desc: "boolean for an object", body: `{"query":"a","prefer":true}`, want: "Field prefer must be an object, not boolean."},
		{desc: "string for a boolean", body: `{"prefer":{"streaming":"yes"}}`, want: "Field prefer.streaming must be a boolean, not string."},
		{desc: "boolean for the body", body: `false`, want: "The request body must be an object, not boolean."},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := apierror.As(StrictUnmarshal([]byte(tt.body), &v))
			if e.Status != 400 || e.Message != tt.want {
				t.Fatalf("%d %q, want 400 %q", e.Status, e.Message, tt.want)
			}
		})
	}
}

// TestDecodeJSONRefusesInvalidUTF8: JSON must be UTF-8 (RFC 8259 §8.1); a
// body with invalid bytes is a 400 naming the first one, never decoded with
// U+FFFD in their place.
func TestDecodeJSONRefusesInvalidUTF8(t *testing.T) {
	tests := []struct {
		desc, body string
		at         string // the byte offset the message names; "" when valid
	}{
		{desc: "a stray 0xff in a string", body: "{\"url\":\"http://127.0.0.1:9301/\xff\"}", at: "30"},
		{desc: "a stray byte in a member name", body: "{\"u\xferl\":\"x\"}", at: "3"},
		{desc: "a truncated two-byte sequence", body: "{\"url\":\"caf\xc3\"}", at: "11"},
		{desc: "an overlong encoding of /", body: "{\"url\":\"a\xc0\xafb\"}", at: "9"},
		{desc: "a UTF-16 surrogate encoded as UTF-8", body: "{\"url\":\"\xed\xa0\x80\"}", at: "8"},
		{desc: "Latin-1 é", body: "{\"url\":\"caf\xe9\"}", at: "11"},
		{desc: "valid multi-byte text", body: `{"url":"café ÆØÅ 🧾"}`},
		{desc: "an escaped replacement character", body: `{"url":"\ufffd"}`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			var v struct {
				URL string `json:"url"`
			}
			_, err := DecodeJSON(req, MaxBody, &v)
			if tt.at == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			e := apierror.As(err)
			want := "The request body is not valid UTF-8 (at byte " + tt.at + ")."
			if err == nil || e.Status != http.StatusBadRequest || e.Message != want {
				t.Fatalf("got %v (decoded %q), want 400 %q", err, v.URL, want)
			}
			if v.URL != "" {
				t.Errorf("the body was decoded anyway: %q", v.URL)
			}
		})
	}
}

// TestStrictUnmarshalRefusesDuplicateMembers: a member name an object gives
// twice, at any depth, is a 400 naming it, where encoding/json kept the
// last value; the same name in different objects is no repeat.
func TestStrictUnmarshalRefusesDuplicateMembers(t *testing.T) {
	type request struct {
		URL    string `json:"url"`
		Prefer *struct {
			MaxResults int `json:"max_results"`
		} `json:"prefer"`
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	tests := []struct {
		desc, body string
		bad        bool
		// member is the path the 400 quotes.
		member string
	}{
		{desc: "a top-level member twice", body: `{"url":"a","url":"b"}`, bad: true, member: "url"},
		{desc: "twice with the same value", body: `{"url":"a","url":"a"}`, bad: true, member: "url"},
		{desc: "an unknown member twice", body: `{"url":"a","site":1,"site":2}`, bad: true, member: "site"},
		{desc: "the second spelt with an escape", body: `{"url":"a","\u0075rl":"b"}`, bad: true, member: "url"},
		{desc: "an empty name twice", body: `{"":1,"":2}`, bad: true, member: ""},
		{desc: "twice in a nested object", body: `{"prefer":{"max_results":1,"max_results":2}}`, bad: true, member: "prefer.max_results"},
		{desc: "twice in an array element", body: `{"items":[{"name":"x"},{"name":"y","name":"z"}]}`, bad: true, member: "items[1].name"},
		{desc: "an object member given twice", body: `{"prefer":{},"prefer":{"max_results":2}}`, bad: true, member: "prefer"},
		{desc: "the same name in sibling objects", body: `{"items":[{"name":"x"},{"name":"y"}],"prefer":{"max_results":1}}`},
		{desc: "the same name at two depths", body: `{"url":"a","prefer":{"url":"b"}}`},
		{desc: "a number beyond float64 in an unknown member", body: `{"url":"a","n":1e400}`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var v request
			err := StrictUnmarshal([]byte(tt.body), &v)
			if !tt.bad {
				if err != nil {
					t.Errorf("want no error, got %v", err)
				}
				return
			}
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != "bad_request" || !strings.Contains(ae.Message, `member "`+tt.member+`" more than once`) {
				t.Errorf("want a 400 naming %q, got %v", tt.member, err)
			}
		})
	}
}

// TestStrictUnmarshalRefusesUnpairedSurrogates: a \u escape that names half
// of a surrogate pair is a 400, since encoding/json would store U+FFFD in
// its place; pairs, other escapes and an escaped backslash before "u" are
// text like any other.
func TestStrictUnmarshalRefusesUnpairedSurrogates(t *testing.T) {
	tests := []struct {
		desc string
		body string
		want string // the decoded value; "" means a 400
	}{
		{desc: "a lone high surrogate", body: `{"url":"peppol \ud800 germany"}`},
		{desc: "a lone low surrogate", body: `{"url":"\udc00"}`},
		{desc: "a high surrogate at the end", body: `{"url":"a\uD83D"}`},
		{desc: "two high surrogates", body: `{"url":"\ud83d\ud83d"}`},
		{desc: "a low then a high", body: `{"url":"\ude00\ud83d"}`},
		{desc: "a high then another escape", body: `{"url":"\ud83d\n"}`},
		{desc: "in a member name", body: `{"\ud800":1,"url":"x"}`},
		{desc: "a pair", body: `{"url":"\ud83d\ude00"}`, want: "😀"},
		{desc: "a pair in capitals", body: `{"url":"\uD83D\uDE00!"}`, want: "😀!"},
		{desc: "an escape of the BMP", body: `{"url":"caf\u00e9 \u20ac"}`, want: "café €"},
		{desc: "an escaped backslash before ud800 is text", body: `{"url":"\\ud800"}`, want: `\ud800`},
		{desc: "an escaped quote then a pair", body: `{"url":"\"\ud83d\ude00"}`, want: `"😀`},
		{desc: "U+FFFD sent as itself is text", body: `{"url":"\ufffd"}`, want: "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var v struct {
				URL string `json:"url"`
			}
			err := StrictUnmarshal([]byte(tt.body), &v)
			if tt.want != "" {
				if err != nil || v.URL != tt.want {
					t.Fatalf("got %q, %v; want %q", v.URL, err, tt.want)
				}
				return
			}
			if e := apierror.As(err); err == nil || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "unpaired surrogate") {
				t.Fatalf("got %v (decoded %q); want a 400 naming the unpaired surrogate", err, v.URL)
			}
		})
	}
}

// FuzzStrictUnmarshal holds the decoder to its promise: a body it accepts
// is decoded without a silent change, so a string holds U+FFFD only where
// the body wrote one (as itself or as \ufffd), never in place of an
// invalid byte or an unpaired surrogate escape.
func FuzzStrictUnmarshal(f *testing.F) {
	for _, seed := range []string{`{"url":"x"}`, `{"url":"\ud83d\ude00"}`, `{"url":"\ud800"}`, `{"url":"\\ud800"}`,
		`{"url":"\ufffd"}`, "{\"url\":\"\xed\xa0\x80\"}", `{"a":{"b":["\udc00"]}}`, `{"url":"\"\uDBFF\uDFFF"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		if err := StrictUnmarshal(body, &v); err != nil {
			if e := apierror.As(err); e.Status != http.StatusBadRequest {
				t.Fatalf("%q: %v; want a 400", body, err)
			}
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsRune(out, utf8.RuneError) && !bytes.ContainsRune(body, utf8.RuneError) && !bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
			t.Fatalf("%q was accepted and decoded with U+FFFD it does not write: %s", body, out)
		}
	})
}
