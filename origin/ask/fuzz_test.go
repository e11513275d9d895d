package ask_test

import (
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// FuzzAskRequest posts untrusted bodies to POST /ask, as JSON or as an event
// stream by Accept: a documented answer or the JSON error, never a 5xx and
// never a stream for a request refused.
func FuzzAskRequest(f *testing.F) {
	inst := origintest.Start(f)
	checker := contract.New(f)
	for _, s := range []struct{ accept, body string }{
		{"application/json", `{"query":"Peppol BIS Billing in Germany"}`},
		{"application/json", `{"query":{"text":"e-invoicing in Belgium"},"locale":"en-GB","prefer":{"max_results":2}}`},
		{"text/event-stream", `{"query":"synthetic article in Poland"}`},
		{"", `{"query":"x","prefer":{"streaming":true}}`},
		{"application/json", `{"query":"Peppol","locale":"de"}`},
		{"application/json", `{"query":"   "}`},
		{"application/json", `{"query":42}`},
		{"application/json", `{"query":"Peppol","prefer":{"max_results":51}}`},
		{"application/json", `{"query":"Peppol","prefer":{"max_results":-1,"streaming":"yes"}}`},
		{"application/json", `{"query":{"text":"a","text":"b"},"query":"c"}`},
		{"text/event-stream", `{"query":`},
		{"*/*", `{"query":"ÆØÅ ß İı ﬁ \u0000 \ud800"}`},
		{"application/json", `{"query":{"text":null},"prev":["a","b"],"site":"x"}`},
		{"application/json", "{\"query\":\"caf\xe9 \xff\"}"},
	} {
		f.Add(s.accept, s.body)
	}
	f.Fuzz(func(t *testing.T, accept, body string) {
		st := inst.Untrusted(t, checker, "POST", "/ask", http.Header{
			"Content-Type": {"application/json"},
			"Accept":       {accept},
		}, []byte(body))
		// JSON is UTF-8 (RFC 8259 §8.1): other bytes are refused, never
		// searched for as U+FFFD.
		if st < 300 && st != 0 && !utf8.ValidString(body) {
			t.Errorf("a body that is not UTF-8 was answered %d: %q", st, body)
		}
	})
}
