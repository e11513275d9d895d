package signing

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dunglas/httpsfv"
)

// innerList is the Signature-Input member of comps and p (RFC 9421 §4.1),
// which is also the last line of the signature base.
func innerList(comps []Component, p Params) httpsfv.InnerList {
	il := httpsfv.InnerList{Params: httpsfv.NewParams()}
	for _, c := range comps {
		il.Items = append(il.Items, c.item())
	}
	if !p.Created.IsZero() {
		il.Params.Add("created", p.Created.Unix())
	}
	if !p.Expires.IsZero() {
		il.Params.Add("expires", p.Expires.Unix())
	}
	for _, kv := range [][2]string{{"nonce", p.Nonce}, {"keyid", p.KeyID}, {"alg", p.Alg}, {"tag", p.Tag}} {
		if kv[1] != "" {
			il.Params.Add(kv[0], kv[1])
		}
	}
	return il
}

// serializeInnerList marshals an inner list on its own: httpsfv marshals
// it as a dictionary member, so the "x=" in front is cut off.
func serializeInnerList(il httpsfv.InnerList) (string, error) {
	d := httpsfv.NewDictionary()
	d.Add("x", il)
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("signing: serializing signature parameters: %w", err)
	}
	return strings.TrimPrefix(s, "x="), nil
}

// SignatureBase builds the signature base of RFC 9421 §2.5: one line per
// covered component, then the @signature-params line.
func SignatureBase(m Message, comps []Component, p Params) ([]byte, error) {
	return signatureBase(m, innerList(comps, p))
}

// signatureBase builds the base for the components and parameters of il as
// received, so a verifier covers exactly what the signer serialized.
func signatureBase(m Message, il httpsfv.InnerList) ([]byte, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, it := range il.Items {
		c, err := componentOf(it)
		if err != nil {
			return nil, err
		}
		id, err := httpsfv.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("signing: serializing component %q: %w", c.Name, err)
		}
		if seen[id] {
			// §2.5: a component may be covered only once.
			return nil, fmt.Errorf("signing: component %s is covered twice", id)
		}
		seen[id] = true
		v, err := m.value(c)
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("signing: component %s has a line break", id)
		}
		b.WriteString(id)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	params, err := serializeInnerList(il)
	if err != nil {
		return nil, err
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(params)
	return []byte(b.String()), nil
}

// componentOf reads a component identifier from its structured form,
// refusing parameters this package does not implement (sf, bs, tr).
func componentOf(it httpsfv.Item) (Component, error) {
	name, ok := it.Value.(string)
	if !ok || name == "" || name != strings.ToLower(name) {
		return Component{}, errors.New("signing: a component identifier is a lowercase string")
	}
	c := Component{Name: name}
	for _, p := range it.Params.Names() {
		v, _ := it.Params.Get(p)
		switch p {
		case "req":
			if v != true {
				return Component{}, errors.New("signing: component parameter req must be true")
			}
			c.Req = true
		case "key":
			k, ok := v.(string)
			if !ok || k == "" || strings.HasPrefix(name, "@") {
				return Component{}, errors.New("signing: component parameter key must name a member of a header field")
			}
			c.Key = k
		default:
			return Component{}, fmt.Errorf("signing: component parameter %q is not supported", p)
		}
	}
	return c, nil
}
