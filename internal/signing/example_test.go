package signing_test

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/invoicewire/invoicewire/internal/signing"
)

// A webhook delivery signed the way docs/decisions.md (delivery) describes: the body's
// Content-Digest, a Signature-Agent naming the published directory, and an
// RFC 9421 signature over the authority, the digest and the webhook headers.
// A receiver verifies it with the key it fetched from that directory.
func ExampleKey_SignRequest() {
	key, _ := signing.ParseSeed("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU") // in the service: Source.Key(ctx)
	body := []byte(`{"id":"evt_01","type":"article.published","data":{}}`)
	req, _ := http.NewRequest("POST", "https://hooks.example.com/invoicewire", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", "evt_01")
	req.Header.Set("webhook-timestamp", "1767225600")
	req.Header.Set(signing.HeaderContentDigest, signing.ContentDigest(body))
	agent, _ := signing.SignatureAgent("sig1", "https://news.example/.well-known/http-message-signatures-directory")
	req.Header.Set(signing.HeaderSignatureAgent, agent)

	created := time.Unix(1767225600, 0)
	comps := append(signing.Components("@authority", "content-digest", "webhook-id", "webhook-timestamp"),
		signing.Component{Name: "signature-agent"})
	err := key.SignRequest(req, "sig1", comps, signing.Params{
		Created: created, Expires: created.Add(5 * time.Minute), KeyID: key.ID, Alg: signing.Alg,
	})
	fmt.Println(err)
	fmt.Println(req.Header.Get("Signature-Input"))

	// The receiver's side.
	v, err := signing.VerifyRequest(req, "sig1", key.Public(), created.Add(time.Minute))
	fmt.Println(err, v.Params.KeyID == key.ID, signing.VerifyContentDigest(req.Header.Values(signing.HeaderContentDigest), body))
	// Output:
	// <nil>
	// sig1=("@authority" "content-digest" "webhook-id" "webhook-timestamp" "signature-agent");created=1767225600;expires=1767225900;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519"
	// <nil> true <nil>
}
