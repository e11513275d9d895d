package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

// Verify reads the raw body of a delivery and checks X-Invoicewire-Signature
// (sha256=<lowercase hex HMAC-SHA256 of the body, keyed by the secret>).
func Verify(r *http.Request, secret []byte) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, false
	}
	got, ok := strings.CutPrefix(r.Header.Get("X-Invoicewire-Signature"), "sha256=")
	if !ok {
		return nil, false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return nil, false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return body, hmac.Equal(sig, mac.Sum(nil))
}
