package signing

import (
	"fmt"
	"time"

	"github.com/dunglas/httpsfv"
)

// Alg is the RFC 9421 §3.3.6 name of EdDSA over Curve25519.
const Alg = "ed25519"

// Label is the label of the service's own signatures (the signatures
// directory's response signature, webhook deliveries) and of their
// Signature-Agent member.
const Label = "sig1"

// Header names of RFC 9421 §4.
const (
	HeaderSignatureInput = "Signature-Input"
	HeaderSignature      = "Signature"
)

// HeaderSignatureAgent names where a verifier finds the signer's key
// (Web Bot Auth): a Structured Field Dictionary from a signature label to
// the https URL of a signatures directory.
const HeaderSignatureAgent = "Signature-Agent"

// SignatureAgent is the Signature-Agent value for one signature label and a
// directory URL, in the dictionary form the Web Bot Auth drafts require of
// signers: label="https://…".
func SignatureAgent(label, directoryURL string) (string, error) {
	d := httpsfv.NewDictionary()
	d.Add(label, httpsfv.NewItem(directoryURL))
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("signing: Signature-Agent for %q: %w", label, err)
	}
	return s, nil
}

// Params are the signature parameters (RFC 9421 §2.3). Zero values are left
// out. They are serialized in this order: created, expires, nonce, keyid,
// alg, tag.
type Params struct {
	Created time.Time
	Expires time.Time
	Nonce   string
	KeyID   string
	Alg     string
	Tag     string
}
