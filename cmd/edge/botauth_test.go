package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// agentDirectory serves an agent's signatures directory on loopback.
func agentDirectory(t *testing.T) (*httptest.Server, *signing.Key) {
	t.Helper()
	k, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/http-message-signatures-directory+json")
		fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":%q}]}`, k.JWK().X, k.ID)
	}))
	t.Cleanup(srv.Close)
	return srv, k
}

// agentGet sends a GET signed by k as a Web Bot Auth agent whose directory
// is at dir.
func agentGet(t *testing.T, url, dir string, k *signing.Key) *http.Response {
	t.Helper()
	return agentGetWith(t, client, url, dir, k)
}

// agentGetWith is agentGet with the HTTP client c and the header fields
// given ("Name: value"), which the signature does not cover.
func agentGetWith(t *testing.T, c *http.Client, url, dir string, k *signing.Key, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		name, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(v))
	}
	req.Header.Set("Signature-Agent", `sig1="`+dir+`"`)
	now := time.Now().Truncate(time.Second)
	err = k.SignRequest(req, "sig1", []signing.Component{{Name: "@authority"}, {Name: "signature-agent", Key: "sig1"}},
		signing.Params{Created: now, Expires: now.Add(time.Minute), KeyID: k.ID, Alg: signing.Alg, Tag: "web-bot-auth", Nonce: fmt.Sprint(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// npmAgentGet has Cloudflare's web-bot-auth package sign a GET in Node and
// send it; it returns the response's headers (lowercase names).
func npmAgentGet(t *testing.T, url, dir string, k *signing.Key) map[string]string {
	t.Helper()
	signer := filepath.Join("..", "..", "caddymodules", "botauth", "testdata", "npmsigner")
	if _, err := os.Stat(filepath.Join(signer, "node_modules", "web-bot-auth")); err != nil {
		t.Fatalf("the npm packages of %s are missing; run deploy/local/deps.sh test (make test does)", signer)
	}
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "x": k.JWK().X, "d": k.EncodeSeed()})
	out, err := exec.Command("node", filepath.Join(signer, "sign.mjs"), url, `sig1="`+dir+`"`, string(jwk)).CombinedOutput()
	if err != nil {
		t.Fatalf("node sign.mjs: %v\n%s", err, out)
	}
	var r struct {
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node sign.mjs printed %q: %v", out, err)
	}
	return r.Headers
}

// A verified agent gets the agent policy through the edge of make run, with
// its own budget; one address cannot multiply it with more identities, and
// its anonymous requests keep their own budget.
func TestVerifiedAgentBudget(t *testing.T) {
	const window, agentQuota, quota = 3600, 6, 3
	// The budget is per fixed window; a test that straddled a window's
	// end would see its counts restart, so it starts in a fresh one.
	if left := window - time.Now().Unix()%window; left < 30 {
		time.Sleep(time.Duration(left+1) * time.Second)
	}
	inst := origintest.Start(t)
	t.Setenv("IW_BOTAUTH_ALLOW_CIDRS", "127.0.0.0/8,::1/128")
	t.Setenv("IW_RATELIMIT_AGENT_QUOTA", fmt.Sprint(agentQuota))
	t.Setenv("IW_RATELIMIT_WINDOW", fmt.Sprint(window))
	edge := startEdge(t, inst, quota)
	dir1, key1 := agentDirectory(t)
	dir2, key2 := agentDirectory(t)
	wantAgent := fmt.Sprintf(`"agent";q=%d;w=%d`, agentQuota, window)

	// Signed in Node by web-bot-auth 0.1.3: the first requests go on as
	// anonymous while the edge fetches the key in the background.
	var h map[string]string
	for range 50 {
		if h = npmAgentGet(t, edge+"/api/v1/articles?limit=1", dir1.URL, key1); h["ratelimit-policy"] == wantAgent {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h["ratelimit-policy"] != wantAgent {
		t.Fatalf("RateLimit-Policy %q for a request signed in Node; want %s", h["ratelimit-policy"], wantAgent)
	}
	// Anonymous requests from the same address: the default policy, and
	// whatever the agent spent is not theirs.
	resp, _ := do(t, "GET", edge+"/api/v1/")
	if got, want := resp.Header.Get("RateLimit-Policy"), fmt.Sprintf(`"default";q=%d;w=%d`, quota, window); got != want {
		t.Errorf("anonymous RateLimit-Policy %q; want %s", got, want)
	}
	// A second identity from the same address shares the address's agent
	// budget: together the two get agentQuota requests, not twice that.
	verified := 0
	for i := range 2 * agentQuota {
		k, dir := key1, dir1.URL
		if i%2 == 1 {
			k, dir = key2, dir2.URL
		}
		resp := agentGet(t, edge+"/api/v1/", dir, k)
		if resp.Header.Get("RateLimit-Policy") != wantAgent {
			continue // key2 not fetched yet: anonymous
		}
		verified++
		if resp.StatusCode == http.StatusTooManyRequests {
			if !strings.HasPrefix(resp.Header.Get("RateLimit"), `"agent";r=0;`) || resp.Header.Get("Retry-After") == "" {
				t.Errorf("429 with RateLimit %q, Retry-After %q", resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"))
			}
			break
		}
	}
	// The Node request counted too: at most agentQuota allowed in all.
	if verified > agentQuota {
		t.Errorf("%d verified requests from one address were allowed; want at most %d", verified, agentQuota)
	}
	if resp := agentGet(t, edge+"/api/v1/", dir1.URL, key1); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("status %d once the address's agent budget is spent; want 429", resp.StatusCode)
	}
}

// TestSignedTokenKeepsItsBudget: a request with a valid bearer token
// counts against its client's budget whoever signs it, so a token that
// spent its budget is refused on a verified agent's signed requests too
// (docs/decisions.md, "Rate-limit budgets"), while the agent's requests
// without the token go on under its own budget.
func TestSignedTokenKeepsItsBudget(t *testing.T) {
	const quota, agentQuota = 3, 100
	inst := origintest.Start(t)
	t.Setenv("IW_BOTAUTH_ALLOW_CIDRS", "127.0.0.0/8,::1/128")
	t.Setenv("IW_RATELIMIT_AGENT_QUOTA", fmt.Sprint(agentQuota))
	edge := startEdge(t, inst, quota)
	dir, key := agentDirectory(t)
	wantAgent := fmt.Sprintf(`"agent";q=%d;w=60`, agentQuota)

	// Claimed from 127.0.0.1, the token spends its budget from 127.0.0.2
	// and is then signed from 127.0.0.3, whose budgets it has not touched.
	_, tok := registerAndClaim(t, edge)
	auth := "Authorization: Bearer " + tok
	spender, signer := clientFrom("127.0.0.2"), clientFrom("127.0.0.3")
	for i := range quota {
		if resp, body := doWith(t, spender, "GET", edge+"/api/v1/", auth); resp.StatusCode != 200 {
			t.Fatalf("request %d of the token's budget: %d %s", i+1, resp.StatusCode, body)
		}
	}
	if resp, _ := doWith(t, spender, "GET", edge+"/api/v1/", auth); resp.StatusCode != 429 {
		t.Fatalf("the token over its budget: %d; want 429", resp.StatusCode)
	}
	// The agent's key is fetched in the background: its first requests
	// are anonymous.
	verified := false
	for range 50 {
		if agentGetWith(t, signer, edge+"/api/v1/", dir.URL, key).Header.Get("RateLimit-Policy") == wantAgent {
			verified = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !verified {
		t.Fatal("the agent's signature never verified")
	}

	testCases := []struct {
		desc   string
		header []string
		status int
		policy string
	}{
		{desc: "signed with the spent token", header: []string{auth}, status: 429, policy: fmt.Sprintf(`"default";q=%d;w=60`, quota)},
		{desc: "signed without a token", status: 200, policy: wantAgent},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			resp := agentGetWith(t, signer, edge+"/api/v1/", dir.URL, key, tc.header...)
			if resp.StatusCode != tc.status || resp.Header.Get("RateLimit-Policy") != tc.policy {
				t.Errorf("status %d, RateLimit-Policy %q; want %d, %s", resp.StatusCode, resp.Header.Get("RateLimit-Policy"), tc.status, tc.policy)
			}
			if tc.status == 429 && (!strings.HasPrefix(resp.Header.Get("RateLimit"), `"default";r=0;`) || resp.Header.Get("Retry-After") == "") {
				t.Errorf("429 with RateLimit %q, Retry-After %q", resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"))
			}
		})
	}
}
