package signing

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
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

// Component is one covered component identifier (RFC 9421 §2): a derived
// component such as "@authority" or a lowercase header field name such as
// "content-digest". Req marks a request component covered by a response's
// signature (the ;req parameter, §2.4). Key, when set, covers one member of
// a Dictionary Structured Field rather than the whole field (the ;key
// parameter, §2.1.2), as Web Bot Auth signers cover their own member of
// Signature-Agent.
type Component struct {
	Name string
	Req  bool
	Key  string
}

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

// Components is a shorthand for request components without parameters.
func Components(names ...string) []Component {
	out := make([]Component, len(names))
	for i, n := range names {
		out[i] = Component{Name: strings.ToLower(n)}
	}
	return out
}

func (c Component) item() httpsfv.Item {
	it := httpsfv.NewItem(c.Name)
	if c.Key != "" {
		it.Params.Add("key", c.Key)
	}
	if c.Req {
		it.Params.Add("req", true)
	}
	return it
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

// Message is the HTTP message a signature covers: a request, or a response
// together with the request it answers (which ;req components and the
// request-derived components of a response read).
type Message struct {
	// Request is the request, or the request a response answers.
	Request *http.Request
	// Status is the response's status; 0 means the message is Request.
	Status int
	// Header holds the response's header fields; unused for a request.
	Header http.Header
	// Authority, when set, is used for @authority instead of the request's
	// Host: a server behind a proxy signs with its public name.
	Authority string
	// Scheme, when set, is used for @scheme and @target-uri, for the same
	// reason (TLS may end at the proxy).
	Scheme string
}

func (m Message) isResponse() bool { return m.Status != 0 }

// fields returns the header fields the component is read from.
func (m Message) fields(c Component) (http.Header, error) {
	if !m.isResponse() || c.Req {
		if m.Request == nil {
			return nil, errors.New("signing: the message has no request")
		}
		return m.Request.Header, nil
	}
	return m.Header, nil
}

// Value is the value of component c in m, as the signature base holds it
// (RFC 9421 §2.1, §2.2).
func (m Message) Value(c Component) (string, error) { return m.value(c) }

// value resolves one component (RFC 9421 §2.1, §2.2).
func (m Message) value(c Component) (string, error) {
	if !strings.HasPrefix(c.Name, "@") {
		h, err := m.fields(c)
		if err != nil {
			return "", err
		}
		vals := h.Values(c.Name)
		if len(vals) == 0 {
			return "", fmt.Errorf("signing: covered header field %q is absent", c.Name)
		}
		if c.Key != "" {
			return dictionaryMember(vals, c)
		}
		// §2.1: strip leading and trailing whitespace from each field
		// line, then join the lines with ", ".
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = strings.TrimSpace(v)
		}
		return strings.Join(parts, ", "), nil
	}
	if c.Name == "@status" {
		if !m.isResponse() || c.Req {
			return "", errors.New("signing: @status is a response component")
		}
		return fmt.Sprintf("%03d", m.Status), nil
	}
	if m.isResponse() && !c.Req {
		return "", fmt.Errorf("signing: %s of a response must carry ;req", c.Name)
	}
	r := m.Request
	if r == nil {
		return "", errors.New("signing: the message has no request")
	}
	switch c.Name {
	case "@method":
		return r.Method, nil
	case "@authority":
		return m.authority(), nil
	case "@scheme":
		return m.scheme(), nil
	case "@target-uri":
		return m.scheme() + "://" + m.authority() + requestTarget(r), nil
	case "@request-target":
		return requestTarget(r), nil
	case "@path":
		p := r.URL.EscapedPath()
		if p == "" {
			p = "/"
		}
		return p, nil
	case "@query":
		// §2.2.7: an absent query is "?".
		return "?" + r.URL.RawQuery, nil
	}
	return "", fmt.Errorf("signing: component %q is not supported", c.Name)
}

// dictionaryMember is the value of one member of a Dictionary field, in its
// serialized form (RFC 9421 §2.1.2): parsed, then serialized again, so
// whitespace and the other members do not matter.
func dictionaryMember(vals []string, c Component) (string, error) {
	d, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return "", fmt.Errorf("signing: covered field %q is not a dictionary: %w", c.Name, err)
	}
	m, ok := d.Get(c.Key)
	if !ok {
		return "", fmt.Errorf("signing: covered field %q has no member %q", c.Name, c.Key)
	}
	one := httpsfv.NewDictionary()
	one.Add(c.Key, m)
	s, err := httpsfv.Marshal(one)
	if err != nil {
		return "", fmt.Errorf("signing: serializing member %q of %q: %w", c.Key, c.Name, err)
	}
	// A Boolean true member serializes as the bare key; the member's value
	// is then "?1".
	if s == c.Key {
		return "?1", nil
	}
	return strings.TrimPrefix(s, c.Key+"="), nil
}

func requestTarget(r *http.Request) string {
	p := r.URL.EscapedPath()
	if p == "" {
		p = "/"
	}
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	return p
}

func (m Message) scheme() string {
	switch {
	case m.Scheme != "":
		return strings.ToLower(m.Scheme)
	case m.Request.URL.Scheme != "":
		return strings.ToLower(m.Request.URL.Scheme)
	case m.Request.TLS != nil:
		return "https"
	}
	return "http"
}

// authority is §2.2.3: the host, lowercase, without the scheme's default port.
func (m Message) authority() string {
	a := m.Authority
	if a == "" {
		a = m.Request.Host
	}
	if a == "" {
		a = m.Request.URL.Host
	}
	a = strings.ToLower(a)
	if host, port, err := net.SplitHostPort(a); err == nil {
		if (port == "443" && m.scheme() == "https") || (port == "80" && m.scheme() == "http") {
			if strings.Contains(host, ":") {
				return "[" + host + "]"
			}
			return host
		}
	}
	return a
}

// innerList is the signature's @signature-params value (§2.3).
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
