package agentauth_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/agentauth"
	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// FuzzRegister posts untrusted registration bodies (RFC 7591 style JSON).
func FuzzRegister(f *testing.F) {
	inst := origintest.Start(f)
	checker := contract.New(f)
	for _, s := range []string{
		`{"client_name":"contract agent","contact":"ops@example.com"}`,
		`{"client_name":"a","identity_type":"identity_assertion"}`,
		`{"client_name":"a","identity_type":"x509"}`,
		`{"client_name":""}`,
		`{"client_name":["a"]}`,
		`{"client_name":"` + strings.Repeat("a", 300) + `","contact":"not an address"}`,
		`{"client_name":"a","redirect_uris":["javascript:alert(1)"],"scope":"admin"}`,
		`{"client_name":"a","client_name":"b"}`,
		`{`,
		``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		inst.Untrusted(t, checker, "POST", "/api/v1/agent-auth/register", http.Header{"Content-Type": {"application/json"}}, []byte(body))
	})
}

const fuzzIssuer = "https://idp.fuzz.example"

// FuzzClaim posts untrusted token requests, as JSON and as forms, some
// carrying ID-JAG assertions (draft-ietf-oauth-identity-assertion-authz-grant)
// signed by a trusted issuer: the fuzzer mutates them into every shape of
// JWS the verifier must refuse with invalid_grant, never a 5xx.
func FuzzClaim(f *testing.F) {
	seed := sha256.Sum256([]byte("invoicewire fuzz idp"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	issuer := agentauth.Issuer{Issuer: fuzzIssuer, JWKS: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: priv.Public(), KeyID: "k1", Algorithm: string(jose.EdDSA), Use: "sig",
	}}}}
	var siteRoot string
	inst := origintest.Start(f, func(c *origin.Config) { c.IDJAGIssuers = []agentauth.Issuer{issuer}; siteRoot = c.SiteRoot })
	checker := contract.New(f)
	resp, err := inst.Server.Client().Post(inst.SiteRoot+"/api/v1/agent-auth/register", "application/json",
		strings.NewReader(`{"client_name":"fuzz","identity_type":"identity_assertion"}`))
	if err != nil {
		f.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()

	assertion := func(typ string, claims map[string]any) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: priv},
			(&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", "k1"))
		if err != nil {
			f.Fatal(err)
		}
		raw, err := jwt.Signed(signer).Claims(claims).Serialize()
		if err != nil {
			f.Fatal(err)
		}
		return raw
	}
	now := time.Now()
	claims := func(jti string) map[string]any {
		return map[string]any{"iss": fuzzIssuer, "sub": "user-1", "aud": siteRoot, "client_id": reg.ClientID,
			"jti": jti, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	good := assertion("oauth-id-jag+jwt", claims("seed-1"))
	f.Add("application/json", `{"client_id":"`+reg.ClientID+`","identity_assertion":"`+good+`"}`)
	f.Add("application/x-www-form-urlencoded", url.Values{"grant_type": {agentauth.GrantJWTBearer}, "client_id": {reg.ClientID},
		"assertion": {assertion("JWT", claims("seed-2"))}}.Encode())
	f.Add("application/json", `{"client_id":"`+reg.ClientID+`","identity_assertion":"`+assertion("oauth-id-jag+jwt", map[string]any{"iss": fuzzIssuer, "aud": []string{siteRoot, "x"}})+`"}`)
	f.Add("application/json", `{"client_id":"`+reg.ClientID+`","identity_assertion":"eyJhbGciOiJub25lIn0.e30."}`)
	f.Add("application/json", `{"client_id":"cli_nobody"}`)
	f.Add("application/json", `{"client_id":"`+reg.ClientID+`","client_id":"cli_nobody"}`)
	f.Add("application/json", `{"client_id":7,"grant_type":null}`)
	f.Add("application/x-www-form-urlencoded", "client_id=a&client_id=b&grant_type=%zz")
	f.Add("multipart/form-data; boundary=x", "--x\r\n")
	f.Add("application/json", `{"token":"x","token_type_hint":"refresh_token"}`)
	f.Fuzz(func(t *testing.T, contentType, body string) {
		h := http.Header{"Content-Type": {contentType}}
		inst.Untrusted(t, checker, "POST", "/api/v1/agent-auth/claim", h, []byte(body))
		inst.Untrusted(t, checker, "POST", "/api/v1/agent-auth/revoke", h, []byte(body))
	})
}

// FuzzParseIssuers feeds IW_IDJAG_ISSUERS values given inline: a JSON array
// of issuers with public keys or a jwks_uri is accepted, anything else is an
// error, and nothing panics.
func FuzzParseIssuers(f *testing.F) {
	f.Add(`[{"issuer":"https://idp.example","jwks":{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}}]`)
	f.Add(`[{"issuer":"https://idp.example","jwks":{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}}]`)
	f.Add(`[{"issuer":"","jwks":{"keys":[]}}]`)
	f.Add(`[{"issuer":"x","jwks":{"keys":[{"kty":"RSA","n":"AQ","e":"AQAB"}]}}]`)
	f.Add(`[`)
	f.Add(`[null]`)
	f.Fuzz(func(t *testing.T, v string) {
		if !strings.HasPrefix(strings.TrimSpace(v), "[") {
			return // a file path; not untrusted input
		}
		iss, err := agentauth.ParseIssuers(v)
		if err != nil {
			return
		}
		for _, is := range iss {
			// Keys inline or where to fetch them (jwks_uri, which the
			// README documents beside the inline form).
			if is.Issuer == "" || (len(is.JWKS.Keys) == 0 && is.JWKSURI == "") {
				t.Fatalf("accepted an issuer without a name or keys: %+v", is)
			}
			for _, k := range is.JWKS.Keys {
				if !k.IsPublic() {
					t.Fatalf("accepted a private key for %s", is.Issuer)
				}
			}
		}
	})
}
