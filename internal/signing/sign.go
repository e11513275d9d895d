package signing

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Sign computes one signature of m: the Signature-Input and Signature
// member values (without the label) for the given label.
func (k *Key) Sign(m Message, comps []Component, p Params) (input, signature string, err error) {
	il := innerList(comps, p)
	base, err := signatureBase(m, il)
	if err != nil {
		return "", "", err
	}
	if input, err = serializeInnerList(il); err != nil {
		return "", "", err
	}
	sig, err := httpsfv.Marshal(httpsfv.NewItem(k.sign(base)))
	if err != nil {
		return "", "", fmt.Errorf("signing: serializing the signature: %w", err)
	}
	return input, sig, nil
}

// addMember sets label in the dictionary header h[name], keeping other
// signatures already present (RFC 9421 §4.3: several signatures may coexist).
func addMember(h http.Header, name, label, value string) error {
	d := httpsfv.NewDictionary()
	if cur := h.Values(name); len(cur) > 0 {
		parsed, err := httpsfv.UnmarshalDictionary(cur)
		if err != nil {
			return fmt.Errorf("signing: the existing %s header is malformed: %w", name, err)
		}
		d = parsed
	}
	var member httpsfv.Member
	if strings.HasPrefix(value, "(") {
		l, err := httpsfv.UnmarshalDictionary([]string{"x=" + value})
		if err != nil {
			return err
		}
		member, _ = l.Get("x")
	} else {
		it, err := httpsfv.UnmarshalItem([]string{value})
		if err != nil {
			return err
		}
		member = it
	}
	d.Add(label, member)
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return err
	}
	h.Set(name, s)
	return nil
}

// SignRequest signs req under label and sets its Signature-Input and
// Signature headers. Header components must already be set on req (for a
// body, set Content-Digest with ContentDigest first).
func (k *Key) SignRequest(req *http.Request, label string, comps []Component, p Params) error {
	return k.signInto(Message{Request: req}, req.Header, label, comps, p)
}

// SignResponse signs a response (status and header h, answering req) under
// label and sets Signature-Input and Signature in h. Use Message directly
// with Key.Sign when the authority or scheme must be overridden.
func (k *Key) SignResponse(m Message, label string, comps []Component, p Params) error {
	return k.signInto(m, m.Header, label, comps, p)
}

func (k *Key) signInto(m Message, h http.Header, label string, comps []Component, p Params) error {
	input, sig, err := k.Sign(m, comps, p)
	if err != nil {
		return err
	}
	if err := addMember(h, HeaderSignatureInput, label, input); err != nil {
		return err
	}
	return addMember(h, HeaderSignature, label, sig)
}
