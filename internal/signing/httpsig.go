package signing

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// ContentDigest is the RFC 9530 Content-Digest field value of body with
// SHA-256: sha-256=:<base64>:.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// Authority is the @authority derived component of a target URI (RFC 9421
// §2.2.3): the host in lowercase, with the port only when it is not the
// scheme's default.
func Authority(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" || (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// Component is one covered component of a signature: its identifier (a
// derived component such as "@authority", or a lowercase field name), its
// parameters such as req or key (nil for none), and its value as the signer
// sees it.
type Component struct {
	Name   string
	Params [][2]string // string-valued parameters, e.g. {"key", "sig1"}
	Flags  []string    // boolean parameters, e.g. "req"
	Value  string
}

// Params are the signature parameters (RFC 9421 §2.3).
type Params struct {
	Created time.Time
	// Expires is left out when zero.
	Expires time.Time
	// Tag names the application profile, e.g. "web-bot-auth".
	Tag string
	// Nonce is left out when empty.
	Nonce string
}

// Signed is a finished signature, ready for the two header fields.
type Signed struct {
	// SignatureInput is the Signature-Input field value.
	SignatureInput string
	// Signature is the Signature field value.
	Signature string
	// Base is the signature base that was signed (RFC 9421 §2.5), for tests
	// and debugging; it holds no secret.
	Base string
}

// SignMessage signs the components with the key under label (RFC 9421 §3.1)
// using alg "ed25519", keyid = the key's thumbprint.
func (k *Key) SignMessage(label string, comps []Component, p Params) (Signed, error) {
	inner := httpsfv.InnerList{Params: httpsfv.NewParams()}
	for _, c := range comps {
		it := httpsfv.NewItem(c.Name)
		for _, f := range c.Flags {
			it.Params.Add(f, true)
		}
		for _, kv := range c.Params {
			it.Params.Add(kv[0], kv[1])
		}
		inner.Items = append(inner.Items, it)
	}
	inner.Params.Add("created", p.Created.Unix())
	if !p.Expires.IsZero() {
		inner.Params.Add("expires", p.Expires.Unix())
	}
	if p.Nonce != "" {
		inner.Params.Add("nonce", p.Nonce)
	}
	inner.Params.Add("keyid", k.KeyID)
	inner.Params.Add("alg", "ed25519")
	if p.Tag != "" {
		inner.Params.Add("tag", p.Tag)
	}
	input := httpsfv.NewDictionary()
	input.Add(label, inner)
	sigInput, err := httpsfv.Marshal(input)
	if err != nil {
		return Signed{}, fmt.Errorf("signing: serialising Signature-Input: %w", err)
	}
	// The @signature-params value is the serialised inner list exactly as
	// it appears in Signature-Input (§2.3), i.e. after "label=".
	sigParams := strings.TrimPrefix(sigInput, label+"=")

	var base strings.Builder
	for i, c := range comps {
		// Each line's identifier is the component's serialisation, with its
		// parameters (§2.5), e.g. "signature-agent";key="sig1".
		id, err := httpsfv.Marshal(inner.Items[i])
		if err != nil {
			return Signed{}, fmt.Errorf("signing: serialising component %q: %w", c.Name, err)
		}
		if strings.ContainsAny(c.Value, "\r\n") {
			return Signed{}, fmt.Errorf("signing: component %q has a line break", c.Name)
		}
		base.WriteString(id)
		base.WriteString(": ")
		base.WriteString(strings.TrimSpace(c.Value))
		base.WriteByte('\n')
	}
	base.WriteString(`"@signature-params": `)
	base.WriteString(sigParams)

	sig := k.Sign([]byte(base.String()))
	sigDict := httpsfv.NewDictionary()
	sigDict.Add(label, httpsfv.NewItem(sig))
	sigField, err := httpsfv.Marshal(sigDict)
	if err != nil {
		return Signed{}, fmt.Errorf("signing: serialising Signature: %w", err)
	}
	return Signed{SignatureInput: sigInput, Signature: sigField, Base: base.String()}, nil
}

// AgentField is the Signature-Agent field value (Web Bot Auth, dictionary
// form): label → the signer's origin, whose
// /.well-known/http-message-signatures-directory publishes the key.
func AgentField(label, siteRoot string) string {
	d := httpsfv.NewDictionary()
	d.Add(label, httpsfv.NewItem(siteRoot))
	s, err := httpsfv.Marshal(d)
	if err != nil {
		// Only a URL string is marshalled; a non-ASCII root is a
		// configuration error caught at start-up by config.FromEnv.
		return label + `="` + siteRoot + `"`
	}
	return s
}
