package idempotency_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// FuzzIdempotencyKey sends untrusted Idempotency-Key values with
// registration bodies: a fresh key is served, a replay answers the stored
// response, a reused key with another body is 422, a malformed key 400 —
// every answer documented, never a 5xx.
func FuzzIdempotencyKey(f *testing.F) {
	inst := origintest.Start(f)
	checker := contract.New(f)
	for _, s := range []struct{ key, body string }{
		{"reg-1", `{"client_name":"a"}`},
		{"reg-1", `{"client_name":"b"}`},
		{"", `{"client_name":"a"}`},
		{strings.Repeat("k", 255), `{"client_name":"a"}`},
		{strings.Repeat("k", 256), `{"client_name":"a"}`},
		{"\"quoted\"", `{"client_name":"a"}`},
		{"key with spaces\t", `{}`},
		{"ключ", `{"client_name":"a"}`},
		{"reg-2", `{"client_name":`},
	} {
		f.Add(s.key, s.body)
	}
	f.Fuzz(func(t *testing.T, key, body string) {
		inst.Untrusted(t, checker, "POST", "/api/v1/agent-auth/register", http.Header{
			"Content-Type":    {"application/json"},
			"Idempotency-Key": {key},
		}, []byte(body))
	})
}
