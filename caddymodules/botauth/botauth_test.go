package botauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/dunglas/httpsfv"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
	"github.com/invoicewire/invoicewire/internal/signing"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

// directory is an agent's origin on loopback serving its signatures
// directory, counting the fetches.
type directory struct {
	*httptest.Server
	key     *signing.Key
	fetches atomic.Int64
}

func newDirectory(t *testing.T, serve func(w http.ResponseWriter, d *directory)) *directory {
	t.Helper()
	k, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	d := &directory{key: k}
	if serve == nil {
		serve = func(w http.ResponseWriter, d *directory) {
			w.Header().Set("Content-Type", "application/http-message-signatures-directory+json")
			w.Header().Set("Cache-Control", "max-age=86400")
			fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":%q}]}`, d.key.JWK().X, d.key.ID)
		}
	}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != DirectoryPath {
			http.NotFound(w, r)
			return
		}
		d.fetches.Add(1)
		serve(w, d)
	}))
	t.Cleanup(d.Close)
	return d
}

// signedRequest is a GET of url signed the way Web Bot Auth agents sign:
// Signature-Agent as a dictionary, @authority and the agent's member
// covered, tag web-bot-auth.
type signOptions struct {
	agentHeader string // the Signature-Agent value; default sig1="<dir>"
	comps       []signing.Component
	params      func(*signing.Params)
	key         *signing.Key
}

func signedRequest(t *testing.T, url string, d *directory, o signOptions) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.agentHeader == "" {
		o.agentHeader = `sig1="` + d.URL + `"`
	}
	req.Header.Set("Signature-Agent", o.agentHeader)
	if o.comps == nil {
		o.comps = []signing.Component{{Name: "@authority"}, {Name: "signature-agent", Key: "sig1"}}
	}
	key := d.key
	if o.key != nil {
		key = o.key
	}
	now := time.Now().Truncate(time.Second)
	p := signing.Params{Created: now, Expires: now.Add(5 * time.Minute), KeyID: key.ID, Alg: signing.Alg, Tag: Tag, Nonce: fmt.Sprint(time.Now().UnixNano())}
	if o.params != nil {
		o.params(&p)
	}
	if err := key.SignRequest(req, "sig1", o.comps, p); err != nil {
		t.Fatal(err)
	}
	return req
}

// The edge echoes what it tells the origin: the agent header and the
// variable the rate limiter reads.
const echoSite = `
	bot_auth {
		allow_cidrs 127.0.0.0/8,::1/128
		negative_ttl 1h
	}
	header X-Seen-Agent "{http.request.header.X-Invoicewire-Agent}"
	header X-Seen-Var "{http.vars.bot_auth.agent}"
	header X-Seen-Outcome "{http.vars.bot_auth.outcome}"
	respond "ok"
`

func do(t *testing.T, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// untilVerified repeats a freshly signed request until the edge has fetched
// the key in the background (the first ones go on as anonymous).
func untilVerified(t *testing.T, c *http.Client, mk func() *http.Request) *http.Response {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := do(t, c, mk())
		if resp.Header.Get("X-Seen-Agent") != "" || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestVerifiedAgent(t *testing.T) {
	edge := edgetest.Start(t, echoSite)
	d := newDirectory(t, nil)
	url := edge.URL + "/api/v1/articles"
	testCases := []struct {
		desc string
		opts signOptions
	}{
		{desc: "dictionary form, the agent's member covered", opts: signOptions{}},
		{desc: "dictionary form, the whole field covered (web-bot-auth npm 0.1.3)",
			opts: signOptions{comps: signing.Components("@authority", "signature-agent")}},
		{desc: "legacy bare string", opts: signOptions{agentHeader: `"` + d.URL + `"`, comps: signing.Components("@authority", "signature-agent")}},
		{desc: "@target-uri instead of @authority",
			opts: signOptions{comps: []signing.Component{{Name: "@target-uri"}, {Name: "signature-agent", Key: "sig1"}}}},
		{desc: "no alg parameter", opts: signOptions{params: func(p *signing.Params) { p.Alg = "" }}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			resp := untilVerified(t, edge.Client, func() *http.Request { return signedRequest(t, url, d, tc.opts) })
			agent := resp.Header.Get("X-Seen-Agent")
			dict, err := httpsfv.UnmarshalDictionary([]string{agent})
			if err != nil {
				t.Fatalf("X-Invoicewire-Agent %q: %v", agent, err)
			}
			dir, _ := dict.Get("directory")
			kid, _ := dict.Get("keyid")
			if dir.(httpsfv.Item).Value != d.URL+DirectoryPath || kid.(httpsfv.Item).Value != d.key.ID {
				t.Errorf("X-Invoicewire-Agent %q; want directory %s and keyid %s", agent, d.URL+DirectoryPath, d.key.ID)
			}
			if got, want := resp.Header.Get("X-Seen-Var"), d.URL+DirectoryPath+"#"+d.key.ID; got != want {
				t.Errorf("variable %q; want %q", got, want)
			}
		})
	}
	if n := d.fetches.Load(); n != 1 {
		t.Errorf("the directory was fetched %d times; want once for every request", n)
	}
}

func TestAnonymous(t *testing.T) {
	edge := edgetest.Start(t, echoSite)
	d := newDirectory(t, nil)
	url := edge.URL + "/api/v1/articles"
	// Warm the key so that every case below fails for its own reason.
	if resp := untilVerified(t, edge.Client, func() *http.Request { return signedRequest(t, url, d, signOptions{}) }); resp.Header.Get("X-Seen-Agent") == "" {
		t.Fatal("the well-signed request was never verified")
	}
	stranger, _ := signing.GenerateKey()
	now := time.Now().Truncate(time.Second)
	testCases := []struct {
		desc    string
		mutate  func(*http.Request)
		opts    signOptions
		outcome string
	}{
		{desc: "unsigned", outcome: "unsigned", mutate: func(r *http.Request) {
			r.Header.Del("Signature")
			r.Header.Del("Signature-Input")
		}},
		{desc: "forged agent header from the client", outcome: "unsigned", mutate: func(r *http.Request) {
			r.Header.Del("Signature")
			r.Header.Del("Signature-Input")
			r.Header.Set("X-Invoicewire-Agent", `directory="https://evil.example", keyid="x"`)
		}},
		{desc: "signature bytes altered", outcome: "forged", mutate: func(r *http.Request) {
			r.Header.Set("Signature", `sig1=:`+strings.Repeat("A", 86)+`==:`)
		}},
		{desc: "signature over another authority", outcome: "forged", mutate: func(r *http.Request) { r.Host = "other.example" }},
		{desc: "Signature-Agent member changed after signing", outcome: "forged", mutate: func(r *http.Request) {
			// The same origin, so the same key: only the signature fails.
			r.Header.Set("Signature-Agent", `sig1="`+d.URL+`/"`)
		}},
		{desc: "malformed Signature-Input", outcome: "malformed", mutate: func(r *http.Request) { r.Header.Set("Signature-Input", "sig1=(((") }},
		{desc: "no Signature-Agent", outcome: "malformed", mutate: func(r *http.Request) { r.Header.Del("Signature-Agent") }},
		{desc: "label not in Signature-Agent", outcome: "malformed", opts: signOptions{agentHeader: `other="` + d.URL + `"`, comps: signing.Components("@authority", "signature-agent")}},
		{desc: "Signature-Agent with a path", outcome: "malformed", opts: signOptions{agentHeader: `sig1="` + d.URL + `/keys"`}},
		{desc: "other tag", outcome: "malformed", opts: signOptions{params: func(p *signing.Params) { p.Tag = "something-else" }}},
		{desc: "no expires", outcome: "malformed", opts: signOptions{params: func(p *signing.Params) { p.Expires = time.Time{} }}},
		{desc: "no created", outcome: "malformed", opts: signOptions{params: func(p *signing.Params) { p.Created = time.Time{} }}},
		{desc: "expired", outcome: "expired", opts: signOptions{params: func(p *signing.Params) {
			p.Created, p.Expires = now.Add(-time.Hour), now.Add(-10*time.Minute)
		}}},
		{desc: "valid for more than 24 h", outcome: "expired", opts: signOptions{params: func(p *signing.Params) { p.Expires = p.Created.Add(25 * time.Hour) }}},
		{desc: "created beyond the clock skew", outcome: "expired", opts: signOptions{params: func(p *signing.Params) {
			p.Created, p.Expires = now.Add(10*time.Minute), now.Add(20*time.Minute)
		}}},
		{desc: "other alg", outcome: "malformed", opts: signOptions{params: func(p *signing.Params) { p.Alg = "rsa-pss-sha512" }}},
		{desc: "Signature-Agent not covered", outcome: "malformed", opts: signOptions{comps: signing.Components("@authority")}},
		{desc: "another member of Signature-Agent covered", outcome: "malformed", opts: signOptions{
			agentHeader: `sig1="` + d.URL + `", sig2="https://other.example"`,
			comps:       []signing.Component{{Name: "@authority"}, {Name: "signature-agent", Key: "sig2"}}}},
		{desc: "neither @authority nor @target-uri covered", outcome: "malformed", opts: signOptions{comps: []signing.Component{{Name: "@path"}, {Name: "signature-agent", Key: "sig1"}}}},
		{desc: "key not in the directory", outcome: "unknown_key", opts: signOptions{key: stranger}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			req := signedRequest(t, url, d, tc.opts)
			if tc.mutate != nil {
				tc.mutate(req)
			}
			resp := do(t, edge.Client, req)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status %d; an unverifiable request is served as anonymous", resp.StatusCode)
			}
			if a, v := resp.Header.Get("X-Seen-Agent"), resp.Header.Get("X-Seen-Var"); a != "" || v != "" {
				t.Errorf("verified as %q / %q; want anonymous", a, v)
			}
			if got := resp.Header.Get("X-Seen-Outcome"); got != tc.outcome {
				t.Errorf("outcome %q; want %q", got, tc.outcome)
			}
		})
	}
	// The stranger's keyid cost one fetch at most, however often it is
	// tried (negative caching).
	for range 20 {
		do(t, edge.Client, signedRequest(t, url, d, signOptions{key: stranger}))
	}
	if n := d.fetches.Load(); n > 2 {
		t.Errorf("the directory was fetched %d times; unknown keyids must not refetch it", n)
	}
}

// Directories that cannot be used leave their agents anonymous, and are
// fetched once per negative TTL however many requests name them.
func TestUnusableDirectories(t *testing.T) {
	target := newDirectory(t, nil)
	testCases := []struct {
		desc  string
		site  string
		serve func(w http.ResponseWriter, d *directory)
	}{
		{desc: "redirect not followed", site: echoSite, serve: func(w http.ResponseWriter, d *directory) {
			w.Header().Set("Location", target.URL+DirectoryPath)
			w.WriteHeader(http.StatusFound)
		}},
		{desc: "server error", site: echoSite, serve: func(w http.ResponseWriter, d *directory) {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}},
		{desc: "not JSON", site: echoSite, serve: func(w http.ResponseWriter, d *directory) { io.WriteString(w, "<html>") }},
		{desc: "over the size bound", site: echoSite, serve: func(w http.ResponseWriter, d *directory) {
			fmt.Fprintf(w, `{"pad":%q,"keys":[{"kty":"OKP","crv":"Ed25519","x":%q}]}`, strings.Repeat("x", 70<<10), d.key.JWK().X)
		}},
		{desc: "kid that is not the thumbprint", site: echoSite, serve: func(w http.ResponseWriter, d *directory) {
			fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":"mine"}]}`, d.key.JWK().X)
		}},
		{desc: "expired key", site: echoSite, serve: func(w http.ResponseWriter, d *directory) {
			fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"exp":1}]}`, d.key.JWK().X)
		}},
		{desc: "loopback not allowed", site: strings.Replace(echoSite, "allow_cidrs 127.0.0.0/8,::1/128", "allow_cidrs", 1)},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			edge := edgetest.Start(t, tc.site)
			d := newDirectory(t, tc.serve)
			var last string
			for range 30 {
				resp := do(t, edge.Client, signedRequest(t, edge.URL+"/", d, signOptions{}))
				if resp.Header.Get("X-Seen-Agent") != "" {
					t.Fatal("verified with a key from an unusable directory")
				}
				last = resp.Header.Get("X-Seen-Outcome")
				if last != "unknown_key" && last != "directory_unavailable" {
					t.Fatalf("outcome %q; want unknown_key, then directory_unavailable", last)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if last != "directory_unavailable" {
				t.Errorf("last outcome %q; want directory_unavailable once the fetch failed", last)
			}
			if n := d.fetches.Load(); n > 1 {
				t.Errorf("fetched %d times; want at most once per negative TTL", n)
			}
		})
	}
}

// npmSign has Cloudflare's web-bot-auth package (testdata/npmsigner) sign
// count GET requests to url in Node and send them; it returns each
// response's headers.
func npmSign(t *testing.T, url, agent string, key *signing.Key, count int) []map[string]string {
	t.Helper()
	dir := filepath.Join("testdata", "npmsigner")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "web-bot-auth")); err != nil {
		t.Fatalf("the npm packages of %s are missing; run deploy/local/deps.sh test (make test does)", dir)
	}
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "x": key.JWK().X, "d": key.EncodeSeed()})
	out, err := exec.Command("node", filepath.Join(dir, "sign.mjs"), url, agent, string(jwk), strconv.Itoa(count)).CombinedOutput()
	if err != nil {
		t.Fatalf("node sign.mjs: %v\n%s", err, out)
	}
	var resps []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("node sign.mjs printed %q: %v", line, err)
		}
		if r.Status != http.StatusOK {
			t.Fatalf("status %d for a request signed in Node", r.Status)
		}
		resps = append(resps, r.Headers)
	}
	return resps
}

// An independent signer: requests signed by web-bot-auth 0.1.3 in Node are
// verified, in the dictionary and the legacy form of Signature-Agent.
func TestNpmSigner(t *testing.T) {
	edge := edgetest.Start(t, echoSite)
	d := newDirectory(t, nil)
	for _, agent := range []string{`sig1="` + d.URL + `"`, `"` + d.URL + `"`} {
		t.Run(agent, func(t *testing.T) {
			var last map[string]string
			for range 20 {
				resps := npmSign(t, edge.URL+"/api/v1/articles?limit=5", agent, d.key, 3)
				if last = resps[len(resps)-1]; last["x-seen-outcome"] == "verified" {
					break
				}
			}
			if last["x-seen-outcome"] != "verified" || last["x-seen-var"] != d.URL+DirectoryPath+"#"+d.key.ID {
				t.Errorf("outcome %q, agent %q; want verified as %s", last["x-seen-outcome"], last["x-seen-var"], d.key.ID)
			}
		})
	}
	// The same package signing with a key its directory does not hold.
	stranger, _ := signing.GenerateKey()
	for _, h := range npmSign(t, edge.URL+"/", `sig1="`+d.URL+`"`, stranger, 2) {
		if h["x-seen-outcome"] != "unknown_key" {
			t.Errorf("outcome %q for a key the directory lacks; want unknown_key", h["x-seen-outcome"])
		}
	}
}

// A signature repeated within its validity is still verified (remembered),
// but only for the request it covers: the same fields with another
// authority are a forgery.
func TestRepeatedSignature(t *testing.T) {
	edge := edgetest.Start(t, echoSite)
	d := newDirectory(t, nil)
	first := untilVerified(t, edge.Client, func() *http.Request { return signedRequest(t, edge.URL+"/", d, signOptions{}) })
	if first.Header.Get("X-Seen-Outcome") != "verified" {
		t.Fatal("never verified")
	}
	req := signedRequest(t, edge.URL+"/a", d, signOptions{})
	for i := range 3 {
		again := req.Clone(req.Context())
		if o := do(t, edge.Client, again).Header.Get("X-Seen-Outcome"); o != "verified" {
			t.Fatalf("repeat %d: outcome %q; want verified", i, o)
		}
	}
	moved := req.Clone(req.Context())
	moved.Host = "elsewhere.example"
	if o := do(t, edge.Client, moved).Header.Get("X-Seen-Outcome"); o != "forged" {
		t.Errorf("the same signature for another authority: outcome %q; want forged", o)
	}
}

// TestOutcomeInAccessLog checks the bot_auth field of the access log:
// present for a verified request, the first and a repeated one, and absent
// for an unsigned one. (Servers without access logs skip the field.)
func TestOutcomeInAccessLog(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "access.log")
	edge := edgetest.Start(t, "log {\n\t\toutput file "+logFile+"\n\t\tformat json\n\t}\n"+echoSite)
	d := newDirectory(t, nil)
	url := edge.URL + "/api/v1/articles"
	first := untilVerified(t, edge.Client, func() *http.Request { return signedRequest(t, url, d, signOptions{}) })
	if first.Header.Get("X-Seen-Agent") == "" {
		t.Fatal("the signed request was never verified")
	}
	repeated := signedRequest(t, url, d, signOptions{})
	do(t, edge.Client, repeated)
	do(t, edge.Client, repeated.Clone(repeated.Context()))
	unsigned, _ := http.NewRequest(http.MethodGet, url+"?unsigned", nil)
	do(t, edge.Client, unsigned)

	var verified, unsignedLines int
	deadline := time.Now().Add(5 * time.Second)
	for verified < 3 || unsignedLines < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("access log: %d lines with bot_auth verified, %d for the unsigned request; want at least 3 and 1", verified, unsignedLines)
		}
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(logFile)
		verified, unsignedLines = 0, 0
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var entry struct {
				Request struct{ URI string } `json:"request"`
				BotAuth *string              `json:"bot_auth"`
			}
			if json.Unmarshal([]byte(line), &entry) != nil {
				continue
			}
			switch {
			case strings.HasSuffix(entry.Request.URI, "?unsigned"):
				if entry.BotAuth != nil {
					t.Fatalf("the unsigned request was logged with bot_auth %q", *entry.BotAuth)
				}
				unsignedLines++
			case entry.BotAuth != nil && *entry.BotAuth == "verified":
				verified++
			}
		}
	}
}

// TestAgentFieldReachesTheOrigin: the agent field of a verified agent
// reaches the origin through a real Caddy's reverse_proxy, whatever the
// client lists in Connection: the proxy deletes the fields Connection
// names (RFC 9110 §7.6.1) after the handlers ran.
func TestAgentFieldReachesTheOrigin(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-Agent", r.Header.Get("X-Invoicewire-Agent"))
	}))
	t.Cleanup(up.Close)
	edge := edgetest.Start(t, `
	bot_auth {
		allow_cidrs 127.0.0.0/8,::1/128
		negative_ttl 1h
	}
	reverse_proxy `+strings.TrimPrefix(up.URL, "http://"))
	d := newDirectory(t, nil)
	url := edge.URL + "/api/v1/articles"
	// The key, fetched.
	if resp := untilVerified(t, edge.Client, func() *http.Request { return signedRequest(t, url, d, signOptions{}) }); resp.Header.Get("X-Seen-Agent") == "" {
		t.Fatal("the well-signed request was never verified")
	}
	testCases := []struct {
		desc       string
		connection string
	}{
		{desc: "no Connection field"},
		{desc: "Connection naming the agent field", connection: "X-Invoicewire-Agent"},
		{desc: "Connection naming the agent field in lower case among other options", connection: "keep-alive, x-invoicewire-agent"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			req := signedRequest(t, url, d, signOptions{})
			if tc.connection != "" {
				req.Header.Set("Connection", tc.connection)
			}
			resp := do(t, edge.Client, req)
			if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("X-Seen-Agent"), d.key.ID) {
				t.Errorf("%d, the origin saw X-Invoicewire-Agent %q; want the agent's field", resp.StatusCode, resp.Header.Get("X-Seen-Agent"))
			}
		})
	}
}

// TestOwnListenersNeverFetched: a Signature-Agent naming a port of the
// service's own listeners, as the IW_* environment names them, is never
// fetched, even on an allowed network: the exclusions of webhook
// deliveries (docs/decisions.md, "Webhooks never reach the service's own
// listeners"). The agent stays anonymous. Each case names the directory's
// own port in one variable.
func TestOwnListenersNeverFetched(t *testing.T) {
	testCases := []struct {
		desc  string
		env   string
		value func(port int) string // "" leaves the variable unset
	}{
		{desc: "a port of no listener of the service is fetched", env: "IW_EDGE_ADMIN_ADDR", value: func(int) string { return "" }},
		{desc: "the edge's admin API", env: "IW_EDGE_ADMIN_ADDR", value: func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }},
		{desc: "the edge's own port", env: "IW_EDGE_PORT", value: strconv.Itoa},
		{desc: "the origin", env: "IW_ORIGIN_ADDR", value: func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }},
		{desc: "the origin's metrics", env: "IW_ORIGIN_METRICS_ADDR", value: func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }},
		{desc: "the worker's metrics", env: "IW_WORKER_METRICS_ADDR", value: func(p int) string { return fmt.Sprintf("localhost:%d", p) }},
		{desc: "Redis", env: "IW_REDIS_URL", value: func(p int) string { return fmt.Sprintf("redis://127.0.0.1:%d/0", p) }},
		{desc: "the rate-limit Redis's cluster bus", env: "IW_RATELIMIT_REDIS_URL", value: func(p int) string { return fmt.Sprintf("redis://127.0.0.1:%d/0", p-10000) }},
	}
	for i, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			d := newDirectory(t, nil)
			port := d.Listener.Addr().(*net.TCPAddr).Port
			if port <= 10000 {
				t.Fatalf("the directory listens on port %d; the cluster bus case needs one above 10000", port)
			}
			own := tc.value(port) != ""
			if own {
				t.Setenv(tc.env, tc.value(port))
			}
			// Caddy keeps running a configuration loaded again unchanged,
			// and reads the environment only when it provisions one.
			edge := edgetest.Start(t, echoSite+"\theader X-Case "+strconv.Itoa(i)+"\n")
			mk := func() *http.Request { return signedRequest(t, edge.URL+"/", d, signOptions{}) }
			if !own {
				if resp := untilVerified(t, edge.Client, mk); resp.Header.Get("X-Seen-Agent") == "" {
					t.Fatal("the agent was never verified")
				}
				return
			}
			var last string
			for range 30 {
				resp := do(t, edge.Client, mk())
				if resp.Header.Get("X-Seen-Agent") != "" {
					t.Fatal("verified with a key fetched from one of the service's own ports")
				}
				last = resp.Header.Get("X-Seen-Outcome")
				time.Sleep(5 * time.Millisecond)
			}
			if last != "directory_unavailable" {
				t.Errorf("last outcome %q; want directory_unavailable once the fetch was refused", last)
			}
			if n := d.fetches.Load(); n != 0 {
				t.Errorf("the directory on one of the service's own ports was fetched %d times", n)
			}
		})
	}
}

// TestProvisionReadsOnlyOwnPorts: provisioning reads from the IW_*
// environment only the variables naming the service's listeners, for the
// fetch fence, so a malformed variable only the origin or the worker reads
// does not stop the edge, while a malformed port refuses it, naming the
// variable (a port that does not parse would be left out of the fence).
func TestProvisionReadsOnlyOwnPorts(t *testing.T) {
	testCases := []struct {
		desc    string
		env     string
		value   string
		wantErr string // "" provisions
	}{
		{desc: "origin's cache bound", env: "IW_ORIGIN_CACHE_BYTES", value: "lots"},
		{desc: "origin's log level", env: "IW_LOG_LEVEL", value: "loud"},
		{desc: "origin's shutdown grace", env: "IW_SHUTDOWN_GRACE", value: "soon"},
		{desc: "origin's signing key", env: "IW_SIGNING_KEY", value: "c2hvcnQ"},
		{desc: "origin's MCP origins", env: "IW_MCP_ALLOWED_ORIGINS", value: "app.example"},
		{desc: "worker's retry schedule", env: "IW_WEBHOOK_RETRY_SCHEDULE", value: "never"},
		{desc: "worker's concurrency", env: "IW_WORKER_CONCURRENCY", value: "0"},
		{desc: "edge port", env: "IW_EDGE_PORT", value: "abc", wantErr: `IW_EDGE_PORT must be a port number such as 8080, got "abc"`},
		{desc: "edge metrics port", env: "IW_EDGE_METRICS_PORT", value: "70000", wantErr: `IW_EDGE_METRICS_PORT must be a port number`},
		{desc: "edge admin address", env: "IW_EDGE_ADMIN_ADDR", value: "localhost:admin", wantErr: `IW_EDGE_ADMIN_ADDR must be host:port`},
		{desc: "origin address", env: "IW_ORIGIN_ADDR", value: "bad", wantErr: `IW_ORIGIN_ADDR must be host:port`},
		{desc: "worker metrics address", env: "IW_WORKER_METRICS_ADDR", value: "127.0.0.1:99999", wantErr: `IW_WORKER_METRICS_ADDR must be host:port`},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			t.Cleanup(cancel)
			h := &Handler{}
			err := h.Provision(ctx)
			if err == nil {
				t.Cleanup(func() { h.Cleanup() })
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s=%q refused the edge: %v", tc.env, tc.value, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("%s=%q: err = %v; want one containing %q", tc.env, tc.value, err, tc.wantErr)
			}
		})
	}
}
