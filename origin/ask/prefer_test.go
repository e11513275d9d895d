package ask

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStreamingPreference checks which of Accept and prefer.streaming
// decides between JSON and an event stream: prefer.streaming, when sent,
// whichever way it points (docs/decisions.md, Ask).
func TestStreamingPreference(t *testing.T) {
	_, srv := serveReal(t)
	const q = `"query":"When does Belgium require B2B e-invoices?"`
	testCases := []struct {
		desc, accept, body string
		wantStream         bool
	}{
		{desc: "neither: JSON", body: `{` + q + `}`},
		{desc: "Accept alone: a stream", accept: "text/event-stream", body: `{` + q + `}`, wantStream: true},
		{desc: "prefer.streaming true alone: a stream", body: `{` + q + `,"prefer":{"streaming":true}}`, wantStream: true},
		{desc: "prefer.streaming false wins over Accept", accept: "text/event-stream", body: `{` + q + `,"prefer":{"streaming":false}}`},
		{desc: "prefer.streaming false wins over a weighted Accept", accept: "application/json;q=0.5, text/event-stream", body: `{` + q + `,"prefer":{"streaming":false}}`},
		{desc: "prefer.streaming true wins over Accept: application/json", accept: "application/json", body: `{` + q + `,"prefer":{"streaming":true}}`, wantStream: true},
		{desc: "prefer without streaming leaves Accept to decide", accept: "text/event-stream", body: `{` + q + `,"prefer":{"mode":"list"}}`, wantStream: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := http.Header{}
			if tc.accept != "" {
				h.Set("Accept", tc.accept)
			}
			resp := post(t, srv, "application/json", tc.body, h)
			body := readBody(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			ct := resp.Header.Get("Content-Type")
			if tc.wantStream {
				if ct != "text/event-stream" || !strings.HasPrefix(string(body), "event: start\n") {
					t.Errorf("Content-Type %q, body %.60q: want an event stream", ct, body)
				}
				return
			}
			var a wireAnswer
			if ct != "application/json" || json.Unmarshal(body, &a) != nil || a.Meta.ResponseType == "" {
				t.Errorf("Content-Type %q, body %.60q: want the JSON answer", ct, body)
			}
		})
	}
}

// TestMaxResultsOutOfRange checks that a prefer.max_results outside 1..50 is
// the contract's JSON 400 naming the value the client sent, streamed or not:
// 0 is out of range, not "the default", and is reported as 0.
func TestMaxResultsOutOfRange(t *testing.T) {
	_, srv := serveReal(t)
	testCases := []struct {
		desc, body, wantValue string
	}{
		{desc: "zero", body: `{"query":"Peppol","prefer":{"max_results":0}}`, wantValue: "prefer.max_results 0 "},
		{desc: "zero, streaming asked", body: `{"query":"Peppol","prefer":{"max_results":0,"streaming":true}}`, wantValue: "prefer.max_results 0 "},
		{desc: "negative", body: `{"query":"Peppol","prefer":{"max_results":-1}}`, wantValue: "prefer.max_results -1 "},
		{desc: "one over the most", body: `{"query":"Peppol","prefer":{"max_results":51}}`, wantValue: "prefer.max_results 51 "},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			resp := post(t, srv, "application/json", tc.body, nil)
			body := readBody(t, resp)
			checkError(t, resp, body, http.StatusBadRequest)
			var e struct {
				Error struct {
					Message string `json:"message"`
					Hint    string `json:"hint"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(e.Error.Message, tc.wantValue) {
				t.Errorf("message %q, want it to name the value sent (%q)", e.Error.Message, tc.wantValue)
			}
			if !strings.Contains(e.Error.Hint, "1 to 50") {
				t.Errorf("hint %q does not say the range", e.Error.Hint)
			}
		})
	}
}
