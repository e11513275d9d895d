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
