package signing

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
)

// Verified describes a signature that verified.
type Verified struct {
	Label      string
	Components []Component
	Params     Params
}

// Covers reports whether the signature covers the component.
func (v *Verified) Covers(c Component) bool {
	for _, x := range v.Components {
		if x == c {
			return true
		}
	}
	return false
}

// Received is a signature as a verifier receives it, before any check: its
// label, covered components and parameters, and the signature bytes.
type Received struct {
	Label      string
	Components []Component
	Params     Params
	Signature  []byte
	input      httpsfv.InnerList
}

// ReceivedSignatures parses the Signature-Input and Signature fields of h
// (RFC 9421 §4.1, §4.2) into one Received per label, in the order of
// Signature-Input. A member that is not a well-formed signature makes the
// whole field an error, as does an input without its signature.
func ReceivedSignatures(h http.Header) ([]*Received, error) {
	inputs, err := httpsfv.UnmarshalDictionary(h.Values(HeaderSignatureInput))
	if err != nil {
		return nil, fmt.Errorf("signing: Signature-Input is malformed: %w", err)
	}
	sigs, err := httpsfv.UnmarshalDictionary(h.Values(HeaderSignature))
	if err != nil {
		return nil, fmt.Errorf("signing: Signature is malformed: %w", err)
	}
	out := make([]*Received, 0, len(inputs.Names()))
	for _, label := range inputs.Names() {
		in, _ := inputs.Get(label)
		il, ok := in.(httpsfv.InnerList)
		if !ok {
			return nil, fmt.Errorf("signing: Signature-Input %q is not an inner list", label)
		}
		sm, ok := sigs.Get(label)
		if !ok {
			return nil, fmt.Errorf("signing: Signature has no member %q", label)
		}
		sigItem, ok := sm.(httpsfv.Item)
		raw, isBytes := sigItem.Value.([]byte)
		if !ok || !isBytes {
			return nil, fmt.Errorf("signing: Signature %q is not a byte sequence", label)
		}
		r := &Received{Label: label, Signature: raw, input: il}
		for _, it := range il.Items {
			c, err := componentOf(it)
			if err != nil {
				return nil, err
			}
			r.Components = append(r.Components, c)
		}
		if r.Params, err = paramsOf(il.Params); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Covers reports whether the signature covers the component.
func (r *Received) Covers(c Component) bool {
	for _, x := range r.Components {
		if x == c {
			return true
		}
	}
	return false
}

// Base is the signature base of m for r's components and parameters as
// received (RFC 9421 §2.5), so it covers exactly what the signer
// serialized.
func (r *Received) Base(m Message) ([]byte, error) { return signatureBase(m, r.input) }

// Verify checks r over m with pub at time now: alg (when present) must be
// ed25519, the signature must verify, and expires (when present) must not
// have passed.
func (r *Received) Verify(m Message, pub ed25519.PublicKey, now time.Time) (*Verified, error) {
	if r.Params.Alg != "" && r.Params.Alg != Alg {
		return nil, fmt.Errorf("signing: alg %q, want %q", r.Params.Alg, Alg)
	}
	base, err := r.Base(m)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(pub, base, r.Signature) {
		return nil, errors.New("signing: the signature does not verify")
	}
	if !r.Params.Expires.IsZero() && now.After(r.Params.Expires) {
		return nil, fmt.Errorf("signing: the signature expired at %s", r.Params.Expires.UTC().Format(time.RFC3339))
	}
	return &Verified{Label: r.Label, Components: r.Components, Params: r.Params}, nil
}

// Verify checks the signature labelled label of m with pub at time now (see
// Received.Verify). For a response, m.Header holds the Signature headers;
// for a request, m.Request.Header.
func Verify(m Message, label string, pub ed25519.PublicKey, now time.Time) (*Verified, error) {
	h := m.Header
	if !m.isResponse() {
		h = m.Request.Header
	}
	all, err := ReceivedSignatures(h)
	if err != nil {
		return nil, err
	}
	for _, r := range all {
		if r.Label == label {
			return r.Verify(m, pub, now)
		}
	}
	return nil, fmt.Errorf("signing: no signature labelled %q", label)
}

func paramsOf(sp *httpsfv.Params) (Params, error) {
	var p Params
	for _, name := range sp.Names() {
		val, _ := sp.Get(name)
		switch name {
		case "created", "expires":
			n, ok := val.(int64)
			if !ok {
				return p, fmt.Errorf("signing: parameter %s is not an integer", name)
			}
			if name == "created" {
				p.Created = time.Unix(n, 0).UTC()
			} else {
				p.Expires = time.Unix(n, 0).UTC()
			}
		case "nonce", "keyid", "alg", "tag":
			s, ok := val.(string)
			if !ok {
				return p, fmt.Errorf("signing: parameter %s is not a string", name)
			}
			switch name {
			case "nonce":
				p.Nonce = s
			case "keyid":
				p.KeyID = s
			case "alg":
				p.Alg = s
			case "tag":
				p.Tag = s
			}
		}
		// Unknown parameters are covered by the signature base as
		// received and otherwise ignored (§2.3).
	}
	return p, nil
}

// VerifyRequest checks the signature labelled label of req (see Verify).
func VerifyRequest(req *http.Request, label string, pub ed25519.PublicKey, now time.Time) (*Verified, error) {
	return Verify(Message{Request: req}, label, pub, now)
}

// VerifyResponse checks the signature labelled label of resp, whose Request
// is the request it answers (see Verify).
func VerifyResponse(resp *http.Response, label string, pub ed25519.PublicKey, now time.Time) (*Verified, error) {
	return Verify(Message{Request: resp.Request, Status: resp.StatusCode, Header: resp.Header}, label, pub, now)
}
