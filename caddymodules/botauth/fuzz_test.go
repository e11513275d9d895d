package botauth

import (
	"crypto/sha256"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/signing"
)

// fuzzNow is the instant every fuzzed signature is judged at, so no input's
// outcome depends on when the fuzzer runs.
var fuzzNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// FuzzSignatureAgent feeds untrusted Signature-Agent (a Structured Fields
// Dictionary or the legacy String, draft-ietf-webbotauth-httpsig-protocol),
// Signature-Input and Signature fields (RFC 9421 §4) to the part of bot_auth
// that runs before any key lookup: nothing panics, and a request it lets
// through to a key fetch names an absolute http(s) keys URL, a key id and a
// web-bot-auth signature valid at fuzzNow for at most 24 hours.
func FuzzSignatureAgent(f *testing.F) {
	seedKey := sha256.Sum256([]byte("invoicewire bot_auth fuzz"))
	k, err := signing.NewKey(seedKey[:])
	if err != nil {
		f.Fatal(err)
	}
	sign := func(agent string, comps []signing.Component, p signing.Params) (sa, si, sig string) {
		req, _ := http.NewRequest(http.MethodGet, "https://invoicewire.example/api/v1/articles", nil)
		req.Header.Set("Signature-Agent", agent)
		if err := k.SignRequest(req, "sig1", comps, p); err != nil {
			f.Fatal(err)
		}
		return req.Header.Get("Signature-Agent"), req.Header.Get("Signature-Input"), req.Header.Get("Signature")
	}
	add := func(agent, input, signature string) { f.Add(agent, input, signature) }
	valid := signing.Params{Created: fuzzNow.Add(-time.Minute), Expires: fuzzNow.Add(4 * time.Minute), KeyID: k.ID, Alg: signing.Alg, Tag: Tag, Nonce: "n1"}
	member := []signing.Component{{Name: "@authority"}, {Name: "signature-agent", Key: "sig1"}}
	whole := []signing.Component{{Name: "@target-uri"}, {Name: "signature-agent"}}
	add(sign(`sig1="https://agent.example"`, member, valid))
	add(sign(`sig1="https://agent.example/keys.json";type=jwks_uri`, member, valid))
	add(sign(`"https://agent.example"`, whole, valid))
	add(sign(`sig1="https://agent.example";type=cimd`, member, valid))
	add(sign(`sig1="ftp://agent.example"`, member, valid))
	add(sign(`sig1="https://user@agent.example/path?q#frag"`, member, valid))
	expired := valid
	expired.Created, expired.Expires = fuzzNow.Add(-48*time.Hour), fuzzNow.Add(-47*time.Hour)
	add(sign(`sig1="https://agent.example"`, member, expired))
	long := valid
	long.Expires = long.Created.Add(25 * time.Hour)
	add(sign(`sig1="https://agent.example"`, member, long))
	f.Add(`sig1=?1`, `sig1=("@authority");created=1;keyid="k";tag="web-bot-auth"`, `sig1=:AAAA:`)
	f.Add(`sig1="https://a.example", sig1="https://b.example"`, `sig1=();tag="web-bot-auth"`, `sig1=:e30=:`)
	f.Add(`"`, `sig1=(`, `sig1=:`)
	f.Add("", "", "")
	f.Add(`sig1="https://`+strings.Repeat("a", 3000)+`.example"`, `sig1=("@authority")`, `sig1=:AA==:`)
	f.Fuzz(func(t *testing.T, agent, input, signature string) {
		h := http.Header{}
		for name, v := range map[string]string{"Signature-Agent": agent, "Signature-Input": input, "Signature": signature} {
			if v != "" {
				h[name] = []string{v}
			}
		}
		c, err := pick(h, fuzzNow, 30*time.Second)
		if err != nil {
			return
		}
		u, perr := url.Parse(c.keysURL)
		if perr != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			t.Fatalf("accepted keys URL %q", c.keysURL)
		}
		p := c.sig.Params
		if p.Tag != Tag || p.KeyID == "" {
			t.Fatalf("accepted a signature tagged %q with key id %q", p.Tag, p.KeyID)
		}
		if p.Created.After(fuzzNow.Add(30*time.Second)) || p.Expires.Before(fuzzNow.Add(-30*time.Second)) || p.Expires.Sub(p.Created) > maxValidity {
			t.Fatalf("accepted a signature valid from %s to %s at %s", p.Created, p.Expires, fuzzNow)
		}
	})
}

// FuzzKeyDirectory feeds untrusted bodies of a signatures directory or JWKS
// (fetched from whatever URL a client names): nothing panics, and every key
// kept is a 32-byte Ed25519 public key, at most maxKeysPerDocument of them.
func FuzzKeyDirectory(f *testing.F) {
	seedKey := sha256.Sum256([]byte("invoicewire bot_auth fuzz"))
	k, err := signing.NewKey(seedKey[:])
	if err != nil {
		f.Fatal(err)
	}
	x := k.JWK().X
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"` + k.ID + `"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"other"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","nbf":9999999999}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","exp":1}]}`)
	f.Add(`{"keys":[{"kty":"RSA","n":"AQ","e":"AQAB"},{"kty":"OKP","crv":"X25519","x":"` + x + `"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA"}]}`)
	f.Add(`{"keys":null}`)
	f.Add(`[]`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, body string) {
		keys, err := parseKeys([]byte(body), fuzzNow)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > maxKeysPerDocument {
			t.Fatalf("kept %d keys", len(keys))
		}
		for _, pub := range keys {
			if len(pub) != 32 {
				t.Fatalf("kept a %d-byte key", len(pub))
			}
		}
	})
}
