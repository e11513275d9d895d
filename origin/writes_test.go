package origin_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/agentauth"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// The tests of the write surfaces (agent auth docs/decisions.md (agent auth), idempotency docs/decisions.md (Idempotency-Key),
// subscriptions docs/decisions.md (subscriptions)) run over real HTTP against a real origin on a real
// Redis. They speak only HTTP, so they run unchanged through the edge.

const idpIssuer = "https://idp.example.test"

// idp is a test identity provider: its key signs ID-JAGs, its JWKS is what
// the origin trusts.
type idp struct {
	priv ed25519.PrivateKey
	kid  string
}

func newIDP(t *testing.T) *idp {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &idp{priv: priv, kid: "idp-key-1"}
}

func (p *idp) issuer() agentauth.Issuer {
	return agentauth.Issuer{Issuer: idpIssuer, JWKS: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: p.priv.Public(), KeyID: p.kid, Algorithm: string(jose.EdDSA), Use: "sig",
	}}}}
}

// assertion signs an ID-JAG; edit adjusts the claims, typ the header.
func (p *idp) assertion(t *testing.T, typ string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", p.kid)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: p.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (p *idp) claims(aud, clientID string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": idpIssuer, "sub": "user-42", "aud": aud, "client_id": clientID,
		"jti": base64.RawURLEncoding.EncodeToString(randomBytes(12)),
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"scope": "webhooks:read webhooks:write",
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func allowLoopback(c *origin.Config) {
	c.WebhookPolicy = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
}

// call sends one request and returns the response and its body.
func call(t *testing.T, inst *origintest.Instance, method, path, contentType, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, inst.SiteRoot+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := inst.Server.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

type registered struct {
	ClientID                string `json:"client_id"`
	RegistrationAccessToken string `json:"registration_access_token"`
	RegistrationClientURI   string `json:"registration_client_uri"`
	ClaimURI                string `json:"claim_uri"`
	RevocationURI           string `json:"revocation_uri"`
	IssuedAt                int64  `json:"client_id_issued_at"`
}

func register(t *testing.T, inst *origintest.Instance, identity string) registered {
	t.Helper()
	resp, body := call(t, inst, "POST", "/api/v1/agent-auth/register", "application/json",
		`{"client_name":"test agent","contact":"ops@example.com","identity_type":"`+identity+`"}`, nil)
	if resp.StatusCode != 201 {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	var r registered
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.ClientID == "" || r.RegistrationAccessToken == "" || r.ClaimURI != inst.BaseURL+"/agent-auth/claim" ||
		r.RevocationURI != inst.BaseURL+"/agent-auth/revoke" || r.RegistrationClientURI != inst.BaseURL+"/agent-auth/register/"+r.ClientID || r.IssuedAt == 0 {
		t.Fatalf("register answered %s", body)
	}
	return r
}

type accessToken struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

func claimToken(t *testing.T, inst *origintest.Instance, contentType, body string) accessToken {
	t.Helper()
	resp, b := call(t, inst, "POST", "/api/v1/agent-auth/claim", contentType, body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("claim: %d %s", resp.StatusCode, b)
	}
	var tok accessToken
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || tok.Scope != token.Scope || len(tok.AccessToken) < 43 {
		t.Fatalf("claim answered %s", b)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("claim Cache-Control = %q", resp.Header.Get("Cache-Control"))
	}
	return tok
}

// snapshot is every key of the database with its serialised value, to show
// that a refused request changed nothing.
func snapshot(t *testing.T, rdb redis.UniversalClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := redistest.Keys(ctx, rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k] = rdb.Dump(ctx, k).Val()
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	var diff []string
	for k, v := range after {
		if before[k] != v {
			diff = append(diff, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, k+" (deleted)")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("Redis changed: %v", diff)
	}
}

func wantError(t *testing.T, resp *http.Response, body []byte, status int, code, contains string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != code || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("body %s (Content-Type %q), want a JSON error with code %s", body, resp.Header.Get("Content-Type"), code)
	}
	if contains != "" && !strings.Contains(e.Error.Message, contains) {
		t.Errorf("message %q does not name %q", e.Error.Message, contains)
	}
}

// TestAgentFlow is the whole anonymous agent flow: register, claim,
// subscribe, list, read, revoke, then the revoked token is refused with
// error="invalid_token"; the revocation is announced on iw:revocations.
func TestAgentFlow(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	ctx := context.Background()

	resp, body := call(t, inst, "GET", "/api/v1/agent-auth/register", "", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"token_lifetime":3600`) {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}

	reg := register(t, inst, "anonymous")
	tok := claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`"}`)

	hook := `{"url":"http://127.0.0.1:9/hook","events":["article.published","spec.updated"]}`
	resp, body = call(t, inst, "POST", "/api/v1/webhooks", "application/json", hook, bearer(tok.AccessToken))
	if resp.StatusCode != 201 {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	var sub struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Secret string `json:"secret"`
	}
	json.Unmarshal(body, &sub)
	if sub.Status != "active" || !strings.HasPrefix(sub.Secret, "whsec_") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("subscribe answered %s", body)
	}
	resp, body = call(t, inst, "GET", "/api/v1/webhooks/subscriptions", "", "", bearer(tok.AccessToken))
	if resp.StatusCode != 200 || !strings.Contains(string(body), sub.ID) || strings.Contains(string(body), "whsec_") {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, inst, "GET", "/api/v1/webhooks/subscriptions/"+sub.ID, "", "", bearer(tok.AccessToken))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"deliveries":[]`) {
		t.Errorf("read: %d %s", resp.StatusCode, body)
	}

	// Another client sees none of it.
	other := claimToken(t, inst, "application/json", `{"client_id":"`+register(t, inst, "anonymous").ClientID+`"}`)
	resp, body = call(t, inst, "GET", "/api/v1/webhooks/subscriptions/"+sub.ID, "", "", bearer(other.AccessToken))
	wantError(t, resp, body, 404, "not_found", "")
	resp, body = call(t, inst, "DELETE", "/api/v1/webhooks/subscriptions/"+sub.ID, "", "", bearer(other.AccessToken))
	wantError(t, resp, body, 404, "not_found", "")

	// Revoke (form body, RFC 7009) and watch the announcement.
	ps := inst.Store.Client().Subscribe(ctx, token.ChannelRevocations)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	resp, body = call(t, inst, "POST", "/api/v1/agent-auth/revoke", "application/x-www-form-urlencoded",
		url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}}.Encode(), nil)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("revoke: %d %q", resp.StatusCode, body)
	}
	select {
	case m := <-ps.Channel():
		if m.Payload != token.Hash(tok.AccessToken) {
			t.Errorf("announced %q, want the token's hash", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Error("no revocation announced on iw:revocations")
	}
	resp, body = call(t, inst, "POST", "/api/v1/webhooks", "application/json", hook, bearer(tok.AccessToken))
	wantError(t, resp, body, 401, "unauthorized", "")
	if got, want := resp.Header.Values("WWW-Authenticate"), token.Challenge(inst.SiteRoot, true); len(got) != 1 || got[0] != want {
		t.Errorf("WWW-Authenticate = %q, want once %q", got, want)
	}
	resp, body = call(t, inst, "POST", "/api/v1/webhooks", "application/json", hook, nil)
	wantError(t, resp, body, 401, "unauthorized", "")
	if got, want := resp.Header.Values("WWW-Authenticate"), token.Challenge(inst.SiteRoot, false); len(got) != 1 || got[0] != want {
		t.Errorf("WWW-Authenticate = %q, want once %q", got, want)
	}
	// Revoking again, or an unknown token, is still 200 (RFC 7009 §2.2).
	resp, body = call(t, inst, "POST", "/api/v1/agent-auth/revoke", "application/json", `{"token":"`+tok.AccessToken+`"}`, nil)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("second revoke: %d %q", resp.StatusCode, body)
	}

	// RFC 7592: read and delete the client with the registration token.
	path := strings.TrimPrefix(reg.RegistrationClientURI, inst.SiteRoot)
	resp, body = call(t, inst, "GET", path, "", "", bearer(reg.RegistrationAccessToken))
	if resp.StatusCode != 200 || !strings.Contains(string(body), reg.ClientID) || strings.Contains(string(body), "registration_access_token") {
		t.Errorf("read client: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, inst, "GET", path, "", "", bearer("wrong"))
	wantError(t, resp, body, 401, "unauthorized", "")
	// RFC 7592 §2.2's update is not offered: to the holder of the client's
	// own registration token that is a 405, not a 401 calling it invalid.
	resp, body = call(t, inst, "PUT", path, "application/json", `{"client_name":"renamed"}`, bearer(reg.RegistrationAccessToken))
	wantError(t, resp, body, 405, "method_not_allowed", "")
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "DELETE") {
		t.Errorf("PUT with the registration token: Allow %q", allow)
	}
	resp, body = call(t, inst, "PUT", path, "application/json", `{"client_name":"renamed"}`, bearer("wrong"))
	wantError(t, resp, body, 401, "unauthorized", "")
	tok2 := claimToken(t, inst, "application/x-www-form-urlencoded", "client_id="+reg.ClientID)
	resp, _ = call(t, inst, "DELETE", path, "", "", bearer(reg.RegistrationAccessToken))
	if resp.StatusCode != 204 {
		t.Fatalf("delete client: %d", resp.StatusCode)
	}
	resp, body = call(t, inst, "GET", "/api/v1/webhooks/subscriptions", "", "", bearer(tok2.AccessToken))
	wantError(t, resp, body, 401, "unauthorized", "")
	resp, body = call(t, inst, "POST", "/api/v1/agent-auth/claim", "application/json", `{"client_id":"`+reg.ClientID+`"}`, nil)
	wantError(t, resp, body, 400, "bad_request", "invalid_grant")
	if n := inst.Store.Client().Exists(ctx, "iw:{subs}:sub:"+sub.ID).Val(); n != 0 {
		t.Error("the deleted client's subscription remains")
	}
}

// TestIDJAG accepts an ID-JAG from a trusted issuer in both grant forms and
// refuses every defective one with invalid_grant, changing nothing in Redis.
func TestIDJAG(t *testing.T) {
	p := newIDP(t)
	var siteRoot string
	inst := origintest.Start(t, func(c *origin.Config) { c.IDJAGIssuers = []agentauth.Issuer{p.issuer()}; siteRoot = c.SiteRoot })
	reg := register(t, inst, "identity_assertion")
	good := func() map[string]any { return p.claims(siteRoot, reg.ClientID) }

	claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`","identity_assertion":"`+p.assertion(t, "oauth-id-jag+jwt", good())+`"}`)
	claimToken(t, inst, "application/x-www-form-urlencoded", url.Values{
		"grant_type": {agentauth.GrantJWTBearer}, "client_id": {reg.ClientID}, "assertion": {p.assertion(t, "oauth-id-jag+jwt", good())},
	}.Encode())

	replayed := p.assertion(t, "oauth-id-jag+jwt", good())
	claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`","identity_assertion":"`+replayed+`"}`)

	other := newIDP(t)
	seg := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	with := func(k string, v any) map[string]any { c := good(); c[k] = v; return c }
	without := func(k string) map[string]any { c := good(); delete(c, k); return c }
	testCases := []struct {
		desc      string
		assertion string
		contains  string
	}{
		{desc: "replayed jti", assertion: replayed, contains: "replayed"},
		{desc: "expired", assertion: p.assertion(t, "oauth-id-jag+jwt", with("exp", time.Now().Add(-10*time.Minute).Unix())), contains: "expired"},
		{desc: "issued in the future", assertion: p.assertion(t, "oauth-id-jag+jwt", with("iat", time.Now().Add(time.Hour).Unix())), contains: "not valid yet"},
		{desc: "foreign audience", assertion: p.assertion(t, "oauth-id-jag+jwt", with("aud", "https://other.example")), contains: "audience"},
		{desc: "two audiences", assertion: p.assertion(t, "oauth-id-jag+jwt", with("aud", []string{siteRoot, "https://other.example"})), contains: "audience"},
		{desc: "wrong typ", assertion: p.assertion(t, "JWT", good()), contains: "typ"},
		{desc: "other client_id", assertion: p.assertion(t, "oauth-id-jag+jwt", with("client_id", "cli_someone_else")), contains: "client_id"},
		{desc: "no jti", assertion: p.assertion(t, "oauth-id-jag+jwt", without("jti")), contains: "jti"},
		{desc: "no exp", assertion: p.assertion(t, "oauth-id-jag+jwt", without("exp")), contains: "exp"},
		{desc: "untrusted issuer", assertion: other.assertion(t, "oauth-id-jag+jwt", with("iss", "https://evil.example")), contains: "not trusted"},
		{desc: "signed by another key", assertion: other.assertion(t, "oauth-id-jag+jwt", good()), contains: "signature"},
		{desc: "alg none", assertion: seg(map[string]string{"alg": "none", "typ": "oauth-id-jag+jwt"}) + "." + seg(good()) + ".", contains: "accepted algorithm"},
		{desc: "unsigned (no signature part)", assertion: seg(map[string]string{"alg": "EdDSA", "typ": "oauth-id-jag+jwt"}) + "." + seg(good()), contains: "accepted algorithm"},
		{desc: "HS256 with the public key as secret", assertion: seg(map[string]string{"alg": "HS256", "typ": "oauth-id-jag+jwt"}) + "." + seg(good()) + ".c2ln", contains: "accepted algorithm"},
		{desc: "not a JWT", assertion: "hello", contains: "accepted algorithm"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			before := snapshot(t, inst.Store.Client())
			resp, body := call(t, inst, "POST", "/api/v1/agent-auth/claim", "application/json",
				`{"client_id":"`+reg.ClientID+`","identity_assertion":"`+tc.assertion+`"}`, nil)
			wantError(t, resp, body, 400, "bad_request", "invalid_grant")
			if !strings.Contains(string(body), tc.contains) {
				t.Errorf("message does not say %q: %s", tc.contains, body)
			}
			sameSnapshot(t, before, snapshot(t, inst.Store.Client()))
		})
	}
	t.Run("identity_assertion client without an assertion", func(t *testing.T) {
		resp, body := call(t, inst, "POST", "/api/v1/agent-auth/claim", "application/json", `{"client_id":"`+reg.ClientID+`"}`, nil)
		wantError(t, resp, body, 400, "bad_request", "invalid_grant")
	})
}

// TestBadInput sends malformed, mistyped, oversized and refused bodies to
// every write endpoint: each gets the agent auth rule's (docs/decisions.md) or the subscriptions rule's (docs/decisions.md) JSON error and Redis is
// left exactly as it was.
func TestBadInput(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	reg := register(t, inst, "anonymous")
	tok := claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`"}`).AccessToken
	big := `{"client_name":"` + strings.Repeat("x", 70<<10) + `"}`
	json_ := "application/json"
	form := "application/x-www-form-urlencoded"
	auth := bearer(tok)

	testCases := []struct {
		desc        string
		path        string
		contentType string
		body        string
		header      http.Header
		status      int
		code        string
		contains    string
	}{
		{desc: "register: malformed JSON", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":`, status: 400, code: "bad_request"},
		{desc: "register: text/plain", path: "/api/v1/agent-auth/register", contentType: "text/plain", body: `{"client_name":"a"}`, status: 415, code: "unsupported_media_type"},
		{desc: "register: no content type", path: "/api/v1/agent-auth/register", body: `{"client_name":"a"}`, status: 415, code: "unsupported_media_type"},
		{desc: "register: client_name a number", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":7}`, status: 400, code: "bad_request", contains: "client_name"},
		{desc: "register: client_name with a NUL", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":"a\u0000b"}`, status: 400, code: "bad_request", contains: "control characters"},
		{desc: "register: client_name with a line break", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":"agent\nINFO forged log line"}`, status: 400, code: "bad_request", contains: "control characters"},
		{desc: "register: client_name missing", path: "/api/v1/agent-auth/register", contentType: json_, body: `{}`, status: 400, code: "bad_request", contains: "invalid_client_metadata"},
		{desc: "register: unknown identity_type", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":"a","identity_type":"robot"}`, status: 400, code: "bad_request", contains: "invalid_client_metadata"},
		{desc: "register: bad contact", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":"a","contact":"not an address"}`, status: 400, code: "bad_request", contains: "contact"},
		{desc: "register: an array", path: "/api/v1/agent-auth/register", contentType: json_, body: `[]`, status: 400, code: "bad_request"},
		{desc: "register: oversized", path: "/api/v1/agent-auth/register", contentType: json_, body: big, status: 413, code: "payload_too_large"},
		{desc: "register: 256-character Idempotency-Key", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":"a"}`, header: http.Header{"Idempotency-Key": {strings.Repeat("k", 256)}}, status: 400, code: "bad_request", contains: "Idempotency-Key"},
		{desc: "claim: client_id missing", path: "/api/v1/agent-auth/claim", contentType: json_, body: `{}`, status: 400, code: "bad_request", contains: "invalid_request"},
		{desc: "claim: unknown client", path: "/api/v1/agent-auth/claim", contentType: json_, body: `{"client_id":"cli_nobody"}`, status: 400, code: "bad_request", contains: "invalid_grant"},
		{desc: "claim: unknown grant_type", path: "/api/v1/agent-auth/claim", contentType: form, body: "grant_type=password&client_id=" + reg.ClientID, status: 400, code: "bad_request", contains: "unsupported_grant_type"},
		{desc: "claim: jwt-bearer without assertion", path: "/api/v1/agent-auth/claim", contentType: form, body: "grant_type=" + url.QueryEscape(agentauth.GrantJWTBearer) + "&client_id=" + reg.ClientID, status: 400, code: "bad_request", contains: "invalid_request"},
		{desc: "claim: client_id a number", path: "/api/v1/agent-auth/claim", contentType: json_, body: `{"client_id":12}`, status: 400, code: "bad_request", contains: "client_id"},
		{desc: "claim: parameter twice", path: "/api/v1/agent-auth/claim", contentType: form, body: "client_id=a&client_id=b", status: 400, code: "bad_request", contains: "more than once"},
		{desc: "register: JSON member twice", path: "/api/v1/agent-auth/register", contentType: json_, body: `{"client_name":"a","client_name":"b"}`, status: 400, code: "bad_request", contains: `"client_name" more than once`},
		{desc: "claim: JSON member twice", path: "/api/v1/agent-auth/claim", contentType: json_, body: `{"client_id":"` + reg.ClientID + `","client_id":"y"}`, status: 400, code: "bad_request", contains: `"client_id" more than once`},
		{desc: "revoke: JSON member twice", path: "/api/v1/agent-auth/revoke", contentType: json_, body: `{"token":"x","token":"y"}`, status: 400, code: "bad_request", contains: `"token" more than once`},
		{desc: "subscribe: JSON member twice", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/a","url":"https://127.0.0.1/b","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: `"url" more than once`},
		{desc: "claim: malformed JSON", path: "/api/v1/agent-auth/claim", contentType: json_, body: `{"client_id"`, status: 400, code: "bad_request"},
		{desc: "claim: text/plain", path: "/api/v1/agent-auth/claim", contentType: "text/plain", body: "client_id=" + reg.ClientID, status: 415, code: "unsupported_media_type"},
		{desc: "claim: oversized", path: "/api/v1/agent-auth/claim", contentType: form, body: "client_id=" + strings.Repeat("x", 70<<10), status: 413, code: "payload_too_large"},
		{desc: "claim: bad assertion", path: "/api/v1/agent-auth/claim", contentType: json_, body: `{"client_id":"` + reg.ClientID + `","identity_assertion":"x.y.z"}`, status: 400, code: "bad_request", contains: "invalid_grant"},
		{desc: "revoke: token missing", path: "/api/v1/agent-auth/revoke", contentType: form, body: "token_type_hint=access_token", status: 400, code: "bad_request", contains: "invalid_request"},
		{desc: "revoke: unknown hint", path: "/api/v1/agent-auth/revoke", contentType: json_, body: `{"token":"x","token_type_hint":"id_token"}`, status: 400, code: "bad_request"},
		{desc: "revoke: token a number", path: "/api/v1/agent-auth/revoke", contentType: json_, body: `{"token":5}`, status: 400, code: "bad_request"},
		{desc: "revoke: text/plain", path: "/api/v1/agent-auth/revoke", contentType: "text/plain", body: "token=x", status: 415, code: "unsupported_media_type"},
		{desc: "revoke: a registration access token", path: "/api/v1/agent-auth/revoke", contentType: form, body: "token=" + reg.RegistrationAccessToken, status: 400, code: "bad_request", contains: "unsupported_token_type"},
		{desc: "subscribe: malformed JSON", path: "/api/v1/webhooks", contentType: json_, body: `{"url":`, header: auth, status: 400, code: "bad_request"},
		{desc: "subscribe: form body", path: "/api/v1/webhooks", contentType: form, body: "url=x", header: auth, status: 415, code: "unsupported_media_type"},
		{desc: "subscribe: oversized", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"` + strings.Repeat("a", 70<<10) + `"}`, header: auth, status: 413, code: "payload_too_large"},
		{desc: "subscribe: url missing", path: "/api/v1/webhooks", contentType: json_, body: `{"events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "url"},
		{desc: "subscribe: url a number", path: "/api/v1/webhooks", contentType: json_, body: `{"url":5,"events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "url"},
		{desc: "subscribe: url not absolute", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"/hook","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request"},
		{desc: "subscribe: ftp url", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"ftp://127.0.0.1/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "https"},
		{desc: "subscribe: userinfo", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://user:pw@127.0.0.1/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "userinfo"},
		{desc: "subscribe: url over 2048", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/` + strings.Repeat("a", 2048) + `","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "2048"},
		{desc: "subscribe: private address", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://10.1.2.3/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "public"},
		{desc: "subscribe: metadata address", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://169.254.169.254/latest","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "public"},
		{desc: "subscribe: IPv6 unique local", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://[fd00::1]/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "public"},
		{desc: "subscribe: unresolvable host", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://no-such-host.invalid/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "resolve"},
		{desc: "subscribe: events missing", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x"}`, header: auth, status: 400, code: "bad_request", contains: "events"},
		{desc: "subscribe: events empty", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":[]}`, header: auth, status: 400, code: "bad_request", contains: "events"},
		{desc: "subscribe: unknown kind", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["article.liked"]}`, header: auth, status: 400, code: "bad_request", contains: "article.liked"},
		{desc: "subscribe: events a string", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":"spec.updated"}`, header: auth, status: 400, code: "bad_request", contains: "events"},
		{desc: "subscribe: kind twice", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated","spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "twice"},
		{desc: "subscribe: short secret", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"],"secret":"short"}`, header: auth, status: 400, code: "bad_request", contains: "secret"},
		{desc: "subscribe: malformed query", path: "/api/v1/webhooks?test=%zz", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "malformed"},
		{desc: "subscribe: a null event kind", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":[null]}`, header: auth, status: 400, code: "bad_request", contains: "not null"},
		{desc: "subscribe: test not a boolean", path: "/api/v1/webhooks?test=maybe", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"]}`, header: auth, status: 400, code: "bad_request", contains: "test"},
		{desc: "subscribe: test false in the query, true in the body", path: "/api/v1/webhooks?test=false", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"],"test":true}`, header: auth, status: 400, code: "bad_request", contains: "test"},
		{desc: "subscribe: test true in the query, false in the body", path: "/api/v1/webhooks?test=1", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"],"test":false}`, header: auth, status: 400, code: "bad_request", contains: "test"},
		{desc: "subscribe: test a string in the body", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"],"test":"yes"}`, header: auth, status: 400, code: "bad_request", contains: "test"},
		{desc: "subscribe: no token", path: "/api/v1/webhooks", contentType: json_, body: `{"url":"https://127.0.0.1/x","events":["spec.updated"]}`, status: 401, code: "unauthorized"},
		{desc: "subscribe: not a bearer credential", path: "/api/v1/webhooks", contentType: json_, body: `{}`, header: http.Header{"Authorization": {"Basic dTpw"}}, status: 401, code: "unauthorized"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			before := snapshot(t, inst.Store.Client())
			resp, body := call(t, inst, "POST", tc.path, tc.contentType, tc.body, tc.header)
			wantError(t, resp, body, tc.status, tc.code, tc.contains)
			sameSnapshot(t, before, snapshot(t, inst.Store.Client()))
		})
	}
}

// TestRevokeRegistrationTokens: RFC 7009 §2.2 answers 200 with an empty
// body for a token that does not exist, iwr_ prefix or not; only the
// registration access token of a client that exists is refused, with
// unsupported_token_type (§2.2.1), and it still reads its client after.
func TestRevokeRegistrationTokens(t *testing.T) {
	inst := origintest.Start(t)
	reg := register(t, inst, "anonymous")
	gone := register(t, inst, "anonymous")
	if resp, body := call(t, inst, "DELETE", "/api/v1/agent-auth/register/"+gone.ClientID, "", "", bearer(gone.RegistrationAccessToken)); resp.StatusCode != 204 {
		t.Fatalf("deleting a client: %d %s", resp.StatusCode, body)
	}
	form := "application/x-www-form-urlencoded"
	testCases := []struct {
		desc, contentType, body string
		// refused: 400 unsupported_token_type, else 200 with no body.
		refused bool
	}{
		{desc: "an iwr_ token that never existed, JSON", contentType: "application/json", body: `{"token":"iwr_doesnotexist"}`},
		{desc: "an iwr_ token that never existed, form", contentType: form, body: "token=iwr_doesnotexist"},
		{desc: "an existing client's id with a made-up secret", contentType: form, body: "token=iwr_" + reg.ClientID + ".made-up"},
		{desc: "a deleted client's registration access token", contentType: form, body: "token=" + gone.RegistrationAccessToken},
		{desc: "a live client's registration access token", contentType: form, body: "token=" + reg.RegistrationAccessToken, refused: true},
		{desc: "a live client's registration access token, JSON", contentType: "application/json", body: `{"token":"` + reg.RegistrationAccessToken + `","token_type_hint":"access_token"}`, refused: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := call(t, inst, "POST", "/api/v1/agent-auth/revoke", tc.contentType, tc.body, nil)
			if tc.refused {
				wantError(t, resp, body, 400, "bad_request", "unsupported_token_type")
				return
			}
			if resp.StatusCode != 200 || len(body) != 0 {
				t.Errorf("revoke = %d %q, want 200 with an empty body", resp.StatusCode, body)
			}
		})
	}
	if resp, body := call(t, inst, "GET", "/api/v1/agent-auth/register/"+reg.ClientID, "", "", bearer(reg.RegistrationAccessToken)); resp.StatusCode != 200 {
		t.Errorf("the refused registration access token no longer reads its client: %d %s", resp.StatusCode, body)
	}
}

// TestRevokeRefusalsDocumented: every request revoke refuses is one that
// auth.md's "Revoke" section says is refused, by its OAuth error code and
// what triggers it, since that section tells agents when to expect a 200.
func TestRevokeRefusalsDocumented(t *testing.T) {
	inst := origintest.Start(t)
	reg := register(t, inst, "anonymous")
	resp, doc := call(t, inst, "GET", "/auth.md", "", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /auth.md: %d", resp.StatusCode)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## 5. Revoke\n")
	if !ok {
		t.Fatal("auth.md has no section \"5. Revoke\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	sec = strings.Join(strings.Fields(sec), " ")
	form := "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		desc, body string
		// names are what the section must name: the OAuth error code and
		// what the request got wrong.
		names []string
	}{
		{desc: "no token", body: "token_type_hint=access_token", names: []string{"`invalid_request`", "without `token`"}},
		{desc: "an unknown token_type_hint", body: "token=x&token_type_hint=id_token", names: []string{"`invalid_request`", "`token_type_hint`"}},
		{desc: "a live client's registration access token", body: "token=" + reg.RegistrationAccessToken, names: []string{"`unsupported_token_type`", "`registration_access_token`"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := call(t, inst, "POST", "/api/v1/agent-auth/revoke", form, tc.body, nil)
			wantError(t, resp, body, 400, "bad_request", strings.Trim(tc.names[0], "`"))
			for _, n := range tc.names {
				if !strings.Contains(sec, n) {
					t.Errorf("auth.md's Revoke section does not name %s: %q", n, sec)
				}
			}
		})
	}
	if strings.Contains(sec, "any well-formed request") {
		t.Errorf("auth.md's Revoke section promises 200 to any well-formed request: %q", sec)
	}
}

// TestSSRFRefusals: without IW_WEBHOOK_ALLOW_CIDRS, allowLoopback, private and
// metadata addresses and a host name resolving to allowLoopback are refused.
func TestSSRFRefusals(t *testing.T) {
	inst := origintest.Start(t)
	reg := register(t, inst, "anonymous")
	tok := claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`"}`).AccessToken
	for _, u := range []string{
		"https://127.0.0.1/hook", "https://127.1.2.3:8443/hook", "https://10.0.0.1/hook", "https://10.255.0.9/hook",
		"https://169.254.169.254/latest/meta-data", "https://localhost/hook", "https://[::1]/hook",
		"https://[::ffff:127.0.0.1]/hook", "https://192.168.1.1/hook", "https://100.64.0.1/hook", "http://127.0.0.1/hook",
	} {
		t.Run(u, func(t *testing.T) {
			before := snapshot(t, inst.Store.Client())
			resp, body := call(t, inst, "POST", "/api/v1/webhooks", "application/json", `{"url":"`+u+`","events":["spec.updated"]}`, bearer(tok))
			wantError(t, resp, body, 400, "bad_request", "")
			sameSnapshot(t, before, snapshot(t, inst.Store.Client()))
		})
	}
}

// TestSubscriptionIdempotency: the same Idempotency-Key and body, sent in
// sequence and concurrently, creates one subscription; another body is 422.
// The limit of 25 subscriptions answers 409.
func TestSubscriptionIdempotency(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	tok := claimToken(t, inst, "application/json", `{"client_id":"`+register(t, inst, "anonymous").ClientID+`"}`).AccessToken
	count := func() int {
		_, body := call(t, inst, "GET", "/api/v1/webhooks/subscriptions", "", "", bearer(tok))
		var l struct{ Count int }
		json.Unmarshal(body, &l)
		return l.Count
	}
	body := `{"url":"https://127.0.0.1:8443/hook","events":["article.published"]}`
	h := bearer(tok)
	h.Set("Idempotency-Key", "seq-1")
	r1, b1 := call(t, inst, "POST", "/api/v1/webhooks", "application/json", body, h)
	r2, b2 := call(t, inst, "POST", "/api/v1/webhooks", "application/json", body, h)
	if r1.StatusCode != 201 || r2.StatusCode != 201 || string(b1) != string(b2) || r2.Header.Get("Idempotency-Replayed") != "true" {
		t.Errorf("sequential: %d %s / %d %s %v", r1.StatusCode, b1, r2.StatusCode, b2, r2.Header)
	}
	if n := count(); n != 1 {
		t.Errorf("sequential replay made %d subscriptions", n)
	}
	r3, b3 := call(t, inst, "POST", "/api/v1/webhooks", "application/json", `{"url":"https://127.0.0.1:8443/other","events":["article.published"]}`, h)
	wantError(t, r3, b3, 422, "unprocessable", "")

	var wg sync.WaitGroup
	statuses := make([]int, 12)
	hc := bearer(tok)
	hc.Set("Idempotency-Key", "concurrent-1")
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := call(t, inst, "POST", "/api/v1/webhooks", "application/json", body, hc)
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 409:
		default:
			t.Errorf("concurrent request answered %d", s)
		}
	}
	if created == 0 {
		t.Error("no concurrent request succeeded")
	}
	if n := count(); n != 2 {
		t.Errorf("after the concurrent burst the client has %d subscriptions, want 2", n)
	}

	for count() < 25 {
		resp, b := call(t, inst, "POST", "/api/v1/webhooks", "application/json", body, bearer(tok))
		if resp.StatusCode != 201 {
			t.Fatalf("subscription %d: %d %s", count()+1, resp.StatusCode, b)
		}
	}
	before := snapshot(t, inst.Store.Client())
	resp, b := call(t, inst, "POST", "/api/v1/webhooks", "application/json", body, bearer(tok))
	wantError(t, resp, b, 409, "conflict", "25")
	sameSnapshot(t, before, snapshot(t, inst.Store.Client()))
}

// TestMalformedBearerIs401: wherever the origin reads a bearer credential
// (a write to a path that takes none, a client's configuration endpoint), a
// credential that is no token at all, or Authorization sent twice, is an
// invalid token: 401 unauthorized with error="invalid_token" (the
// contract's answer to a missing or invalid token; RFC 6750 §3.1 counts a
// malformed token as invalid), and changes nothing.
func TestMalformedBearerIs401(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	reg := register(t, inst, "anonymous")
	for _, tc := range []struct {
		desc, method, path string
		authorization      []string
	}{
		{desc: "write to a read-only path, empty credential", method: "PUT", path: "/api/v1/articles", authorization: []string{"Bearer"}},
		{desc: "write to a read-only path, two words", method: "DELETE", path: "/api/v1/articles", authorization: []string{"Bearer a b"}},
		{desc: "client configuration read", method: "GET", path: "/api/v1/agent-auth/register/" + reg.ClientID, authorization: []string{"Bearer a b"}},
		{desc: "client configuration delete", method: "DELETE", path: "/api/v1/agent-auth/register/" + reg.ClientID, authorization: []string{"Bearer "}},
		{desc: "client configuration delete, its own token and another", method: "DELETE", path: "/api/v1/agent-auth/register/" + reg.ClientID,
			authorization: []string{"Bearer " + reg.RegistrationAccessToken, "Bearer other"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := call(t, inst, tc.method, tc.path, "", "", http.Header{"Authorization": tc.authorization})
			wantError(t, resp, body, 401, "unauthorized", "")
			if ch := resp.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q, want error=\"invalid_token\"", ch)
			}
		})
	}
	// Nothing was deleted: the client still reads with its own token.
	resp, body := call(t, inst, "GET", "/api/v1/agent-auth/register/"+reg.ClientID, "", "", bearer(reg.RegistrationAccessToken))
	if resp.StatusCode != 200 {
		t.Errorf("client read after the refusals: %d %s", resp.StatusCode, body)
	}
}

// TestClientConfigurationChallenge: the client configuration endpoint
// (RFC 7592) answers a request that presented no bearer token (none, or
// another scheme) with a challenge that carries no error code (RFC 6750
// §3.1) and a hint that names the registration access token; a bearer
// token that is not the client's, a claimed access token included, is
// error="invalid_token".
func TestClientConfigurationChallenge(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	reg := register(t, inst, "anonymous")
	tok := claimToken(t, inst, "application/json", `{"client_id":"`+reg.ClientID+`"}`)
	path := "/api/v1/agent-auth/register/" + reg.ClientID
	for _, tc := range []struct {
		desc, method  string
		authorization []string
		invalid       bool // error="invalid_token"
	}{
		{desc: "no Authorization, read", method: "GET"},
		{desc: "no Authorization, delete", method: "DELETE"},
		{desc: "Basic credentials", method: "DELETE", authorization: []string{"Basic dXNlcjpwYXNz"}},
		{desc: "DPoP token", method: "GET", authorization: []string{"DPoP " + reg.RegistrationAccessToken}},
		{desc: "a claimed access token", method: "DELETE", authorization: []string{"Bearer " + tok.AccessToken}, invalid: true},
		{desc: "a made-up bearer token", method: "GET", authorization: []string{"Bearer undefined"}, invalid: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			h := http.Header{}
			if tc.authorization != nil {
				h["Authorization"] = tc.authorization
			}
			resp, body := call(t, inst, tc.method, path, "", "", h)
			wantError(t, resp, body, 401, "unauthorized", "")
			ch := resp.Header.Get("WWW-Authenticate")
			if got := strings.Contains(ch, `error="invalid_token"`); got != tc.invalid || !strings.HasPrefix(ch, "Bearer ") {
				t.Errorf("WWW-Authenticate %q; want a Bearer challenge, error=\"invalid_token\" %v", ch, tc.invalid)
			}
			if !tc.invalid && !strings.Contains(string(body), "registration_access_token") {
				t.Errorf("body %s: the hint does not name the registration_access_token", body)
			}
		})
	}
	// Nothing was deleted: the client still reads with its own token.
	if resp, body := call(t, inst, "GET", path, "", "", bearer(reg.RegistrationAccessToken)); resp.StatusCode != 200 {
		t.Errorf("client read after the refusals: %d %s", resp.StatusCode, body)
	}
}

// A Redis that is there but cannot take the write (full, with
// maxmemory-policy noeviction) is a 503 with Retry-After, like an
// unreachable one, not a 500 blaming the service (docs/decisions.md,
// "Redis unreachable"); and a read the origin can answer still is.
func TestFullRedisIsA503NotA500(t *testing.T) {
	inst := origintest.Start(t, allowLoopback)
	ctx := context.Background()
	rdb := inst.Redis.Client()
	before := snapshot(t, rdb)
	setMaxmemory := func(v string) {
		t.Helper()
		err := redistest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
			if err := n.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
				return err
			}
			return n.ConfigSet(ctx, "maxmemory", v).Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setMaxmemory("1")
	defer setMaxmemory("0")

	resp, body := call(t, inst, "POST", "/api/v1/agent-auth/register", "application/json", `{"client_name":"test agent"}`, nil)
	wantError(t, resp, body, 503, "unavailable", "")
	if resp.Header.Get("Retry-After") == "" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Retry-After %q, Cache-Control %q; want a Retry-After and no-store", resp.Header.Get("Retry-After"), resp.Header.Get("Cache-Control"))
	}
	if resp, body := call(t, inst, "GET", "/api/v1/countries", "", "", nil); resp.StatusCode != 200 {
		t.Errorf("a read while Redis is full: %d %s", resp.StatusCode, body)
	}
	setMaxmemory("0")
	sameSnapshot(t, before, snapshot(t, rdb))
}
