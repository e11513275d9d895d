package origin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/agentauth"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// jwksServer publishes an identity provider's current keys at /jwks and
// counts the fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []*idp
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, keys ...*idp) *jwksServer {
	t.Helper()
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		var set jose.JSONWebKeySet
		for _, p := range s.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: p.priv.Public(), KeyID: p.kid, Algorithm: string(jose.EdDSA), Use: "sig"})
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "max-age=3600")
		json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) publish(keys ...*idp) {
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
}

// TestIDJAGFromJWKSURI trusts an issuer by its jwks_uri: its keys are
// fetched once and cached, a rotated key is picked up with one refetch, an
// unknown kid costs at most one refetch per period, and an issuer whose
// JWKS cannot be fetched makes claims a 503 that changes nothing.
func TestIDJAGFromJWKSURI(t *testing.T) {
	first, second, never := newIDP(t), newIDP(t), newIDP(t)
	second.kid, never.kid = "idp-key-2", "idp-key-3"
	jwks := newJWKSServer(t, first)
	var siteRoot string
	inst := origintest.Start(t, allowLoopback, func(c *origin.Config) {
		c.IDJAGIssuers = []agentauth.Issuer{{Issuer: idpIssuer, JWKSURI: jwks.URL + "/jwks"}}
		siteRoot = c.SiteRoot
	})
	reg := register(t, inst, "identity_assertion")
	claim := func(p *idp) (*http.Response, []byte) {
		return call(t, inst, "POST", "/api/v1/agent-auth/claim", "application/json",
			`{"client_id":"`+reg.ClientID+`","identity_assertion":"`+p.assertion(t, "oauth-id-jag+jwt", p.claims(siteRoot, reg.ClientID))+`"}`, nil)
	}

	for range 3 {
		if resp, body := claim(first); resp.StatusCode != 200 {
			t.Fatalf("claim with the published key: %d %s", resp.StatusCode, body)
		}
	}
	if n := jwks.fetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times for three claims; want once (cached for its max-age)", n)
	}

	// The issuer rotates to a new key: the unknown kid sends the origin
	// back for the set once.
	jwks.publish(first, second)
	if resp, body := claim(second); resp.StatusCode != 200 {
		t.Fatalf("claim with the rotated key: %d %s (fetches %d)", resp.StatusCode, body, jwks.fetches.Load())
	}
	if n := jwks.fetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times after the rotation; want 2", n)
	}

	// A kid the issuer never published: refused, and a flood of them does
	// not turn into a flood of fetches.
	for range 5 {
		before := snapshot(t, inst.Store.Client())
		resp, body := claim(never)
		wantError(t, resp, body, 400, "bad_request", "invalid_grant")
		sameSnapshot(t, before, snapshot(t, inst.Store.Client()))
	}
	if n := jwks.fetches.Load(); n > 3 {
		t.Errorf("JWKS fetched %d times; an unknown kid may cause one refetch per period", n)
	}
}

func TestIDJAGIssuerUnreachable(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	served := newJWKSServer(t, newIDP(t))
	testCases := []struct {
		desc   string
		uri    string
		policy func(*origin.Config)
	}{
		{desc: "nothing listens", uri: gone.URL + "/jwks", policy: allowLoopback},
		{desc: "loopback is not allowed", uri: served.URL + "/jwks", policy: func(*origin.Config) {}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			p := newIDP(t)
			var siteRoot string
			inst := origintest.Start(t, tc.policy, func(c *origin.Config) {
				c.IDJAGIssuers = []agentauth.Issuer{{Issuer: idpIssuer, JWKSURI: tc.uri}}
				siteRoot = c.SiteRoot
			})
			reg := register(t, inst, "identity_assertion")
			before := snapshot(t, inst.Store.Client())
			resp, body := call(t, inst, "POST", "/api/v1/agent-auth/claim", "application/json",
				`{"client_id":"`+reg.ClientID+`","identity_assertion":"`+p.assertion(t, "oauth-id-jag+jwt", p.claims(siteRoot, reg.ClientID))+`"}`, nil)
			wantError(t, resp, body, 503, "unavailable", "jwks_uri")
			if resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			sameSnapshot(t, before, snapshot(t, inst.Store.Client()))
		})
	}
	if n := served.fetches.Load(); n != 0 {
		t.Errorf("the loopback JWKS was fetched %d times against the address rules", n)
	}
}
