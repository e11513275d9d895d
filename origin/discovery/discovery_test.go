package discovery_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/discovery"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/origin/site"
)

// TestDiscoveryDocuments checks the fields each document must have and
// requests every address of this site that any of them names: GET answers
// 200, or 405 with JSON and Allow for POST-only endpoints (docs/decisions.md, agent surfaces).
func TestDiscoveryDocuments(t *testing.T) {
	inst := origintest.Start(t)
	docs := map[string]map[string]any{}
	for _, path := range []string{
		"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server",
		"/.well-known/mcp/server-card.json", "/mcp/server-card", "/.well-known/ai-catalog.json", "/.well-known/agent-card.json",
	} {
		resp, body := inst.Get(t, path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs[path] = doc
	}
	t.Run("fields", func(t *testing.T) {
		prm := docs["/.well-known/oauth-protected-resource"]
		if prm["resource"] != inst.SiteRoot {
			t.Errorf("resource %v, want %s (RFC 9728 §3.3)", prm["resource"], inst.SiteRoot)
		}
		as := docs["/.well-known/oauth-authorization-server"]
		if as["issuer"] != inst.SiteRoot || as["registration_endpoint"] != inst.BaseURL+"/agent-auth/register" ||
			as["token_endpoint"] != inst.BaseURL+"/agent-auth/claim" || as["revocation_endpoint"] != inst.BaseURL+"/agent-auth/revoke" {
			t.Errorf("authorization server metadata %v", as)
		}
		card := docs["/mcp/server-card"]
		if name, _ := card["name"].(string); strings.Count(name, "/") != 1 {
			t.Errorf("server card name %q needs exactly one /", name)
		}
		for _, k := range []string{"$schema", "version", "description", "remotes"} {
			if card[k] == nil {
				t.Errorf("server card lacks %s", k)
			}
		}
		agent := docs["/.well-known/agent-card.json"]
		for _, k := range []string{"name", "description", "version", "supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
			if agent[k] == nil {
				t.Errorf("agent card lacks %s (A2A 1.0)", k)
			}
		}
		for _, s := range agent["skills"].([]any) {
			sk := s.(map[string]any)
			for _, k := range []string{"id", "name", "description", "tags"} {
				if sk[k] == nil {
					t.Errorf("skill %v lacks %s", sk["id"], k)
				}
			}
			// A2A: examples, inputModes and outputModes are lists of strings.
			for _, k := range []string{"tags", "examples", "inputModes", "outputModes"} {
				if list, ok := sk[k].([]any); !ok || len(list) == 0 {
					t.Errorf("skill %v: %s is %v, not a list of strings", sk["id"], k, sk[k])
				}
			}
		}
		// Every input mode the card names is one the agent endpoints take:
		// /ask refuses what it cannot read with 415.
		modes := map[string]bool{}
		for _, m := range agent["defaultInputModes"].([]any) {
			modes[m.(string)] = true
		}
		for _, s := range agent["skills"].([]any) {
			for _, m := range s.(map[string]any)["inputModes"].([]any) {
				modes[m.(string)] = true
			}
		}
		for mode := range modes {
			req, _ := http.NewRequest("POST", inst.SiteRoot+"/ask", strings.NewReader(`{"query":"peppol"}`))
			req.Header.Set("Content-Type", mode)
			resp, err := inst.Server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnsupportedMediaType {
				t.Errorf("the agent card lists input mode %s, which /ask refuses", mode)
			}
		}
		catalog := docs["/.well-known/ai-catalog.json"]
		if catalog["specVersion"] == nil || len(catalog["entries"].([]any)) != 2 {
			t.Errorf("AI catalog %v", catalog)
		}
	})
	urls := map[string]bool{}
	for _, doc := range docs {
		collectURLs(doc, inst.SiteRoot, urls)
	}
	if len(urls) < 10 {
		t.Fatalf("only %d URLs found: %v", len(urls), urls)
	}
	for u := range urls {
		t.Run(strings.TrimPrefix(u, inst.SiteRoot), func(t *testing.T) {
			resp, body := inst.Get(t, u)
			switch {
			case resp.StatusCode == 200:
			case resp.StatusCode == 405 && resp.Header.Get("Allow") != "" && resp.Header.Get("Content-Type") == "application/json":
			default:
				t.Errorf("GET %s answered %d: %s", u, resp.StatusCode, body)
			}
		})
	}
}

// TestAgentCardOutputModes checks that each skill of the agent card lists
// exactly the media types its endpoints answer with (docs/decisions.md, the
// agent card says only what is served), asking each endpoint for every type
// the card could name, and that the default output modes are all of them.
func TestAgentCardOutputModes(t *testing.T) {
	inst := origintest.Start(t)
	_, body := inst.Get(t, "/.well-known/agent-card.json")
	var card struct {
		DefaultOutputModes []string `json:"defaultOutputModes"`
		Skills             []struct {
			ID          string   `json:"id"`
			OutputModes []string `json:"outputModes"`
		} `json:"skills"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	accepts := []string{"application/json", "text/markdown", "text/event-stream"}
	type request struct{ method, path, body string }
	first := contenttest.Article(0)
	endpoints := map[string][]request{
		"search-articles": {{"GET", "/api/v1/articles", ""}},
		"read-article":    {{"GET", "/api/v1/articles/" + first.Slug, ""}, {"GET", first.Path() + ".md", ""}},
		"mandates":        {{"GET", "/api/v1/countries", ""}, {"GET", "/api/v1/countries/de", ""}, {"GET", "/mandates.md", ""}},
		"specifications":  {{"GET", "/api/v1/specs", ""}, {"GET", "/api/v1/specs/peppol-bis-billing-3", ""}},
		"ask":             {{"POST", "/ask", `{"query":"When is KSeF mandatory?"}`}},
	}
	var all []string
	for _, sk := range card.Skills {
		t.Run(sk.ID, func(t *testing.T) {
			reqs, ok := endpoints[sk.ID]
			if !ok {
				t.Fatalf("no endpoints known for skill %s", sk.ID)
			}
			var served []string
			for _, rq := range reqs {
				for _, accept := range accepts {
					req, _ := http.NewRequest(rq.method, inst.SiteRoot+rq.path, strings.NewReader(rq.body))
					req.Header.Set("Accept", accept)
					if rq.body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					resp, err := inst.Server.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Fatalf("%s %s, Accept %s: %d", rq.method, rq.path, accept, resp.StatusCode)
					}
					mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
					if !slices.Contains(served, mt) {
						served = append(served, mt)
					}
				}
			}
			slices.Sort(served)
			got := slices.Sorted(slices.Values(sk.OutputModes))
			if !slices.Equal(got, served) {
				t.Errorf("outputModes %v, its endpoints serve %v", sk.OutputModes, served)
			}
		})
		for _, m := range sk.OutputModes {
			if !slices.Contains(all, m) {
				all = append(all, m)
			}
		}
	}
	slices.Sort(all)
	if got := slices.Sorted(slices.Values(card.DefaultOutputModes)); !slices.Equal(got, all) {
		t.Errorf("defaultOutputModes %v, the skills' together %v", card.DefaultOutputModes, all)
	}
}

// collectURLs gathers every string under siteRoot in a JSON document,
// without fragments.
func collectURLs(v any, siteRoot string, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			collectURLs(x, siteRoot, into)
		}
	case []any:
		for _, x := range v {
			collectURLs(x, siteRoot, into)
		}
	case string:
		if v == siteRoot || strings.HasPrefix(v, siteRoot+"/") {
			u, _, _ := strings.Cut(v, "#")
			into[u] = true
		}
	}
}

// TestSignaturesDirectory fetches the directory like a Web Bot Auth
// verifier: the media type, the JWKS with kid = RFC 7638 thumbprint, the
// Content-Digest, and the response signature made with the listed key.
func TestSignaturesDirectory(t *testing.T) {
	inst := origintest.Start(t)
	fetch := func(t *testing.T, siteRoot string, client *http.Client, header ...string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", siteRoot+"/.well-known/http-message-signatures-directory", nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	verify := func(t *testing.T, resp *http.Response, body []byte) signing.JWK {
		t.Helper()
		if ct := resp.Header.Get("Content-Type"); ct != discovery.DirectoryType {
			t.Errorf("Content-Type %q, want %s", ct, discovery.DirectoryType)
		}
		var dir struct {
			Keys []signing.JWK `json:"keys"`
		}
		if err := json.Unmarshal(body, &dir); err != nil || len(dir.Keys) != 1 {
			t.Fatalf("directory %s: %v", body, err)
		}
		k := dir.Keys[0]
		pub, err := k.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		if k.Kid != signing.Thumbprint(pub) {
			t.Errorf("kid %s is not the RFC 7638 thumbprint %s", k.Kid, signing.Thumbprint(pub))
		}
		if err := signing.VerifyContentDigest(resp.Header.Values("Content-Digest"), body); err != nil {
			t.Error(err)
		}
		v, err := signing.VerifyResponse(resp, discovery.DirectoryLabel, pub, time.Now())
		if err != nil {
			t.Fatalf("the response signature: %v", err)
		}
		if v.Params.Tag != discovery.DirectoryTag || v.Params.KeyID != k.Kid || v.Params.Alg != "ed25519" {
			t.Errorf("signature params %+v", v.Params)
		}
		if !v.Covers(signing.Component{Name: "@authority", Req: true}) || !v.Covers(signing.Component{Name: "content-digest"}) {
			t.Errorf("the signature covers %v", v.Components)
		}
		if v.Params.Expires.Sub(v.Params.Created) != discovery.DirectorySignatureTTL {
			t.Errorf("validity %s", v.Params.Expires.Sub(v.Params.Created))
		}
		return k
	}
	resp, body := fetch(t, inst.SiteRoot, inst.Server.Client())
	key := verify(t, resp, body)

	t.Run("304 carries a fresh signature", func(t *testing.T) {
		resp, body := fetch(t, inst.SiteRoot, inst.Server.Client(), "If-None-Match", resp.Header.Get("ETag"))
		if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("Signature") == "" {
			t.Errorf("%d, %d bytes, Signature %q", resp.StatusCode, len(body), resp.Header.Get("Signature"))
		}
	})
	t.Run("a second origin on the same Redis serves the same key", func(t *testing.T) {
		srv, err := origin.New(origin.Config{CacheBytes: 1 << 20, Log: slog.New(slog.DiscardHandler)}, inst.Store)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ts := httptest.NewUnstartedServer(nil)
		root := "http://" + ts.Listener.Addr().String()
		srv2, err := origin.New(origin.Config{SiteRoot: root, CacheBytes: 1 << 20, Log: slog.New(slog.DiscardHandler)}, inst.Store)
		if err != nil {
			t.Fatal(err)
		}
		defer srv2.Close()
		ts.Config.Handler = srv2
		ts.Start()
		defer ts.Close()
		resp, body := fetch(t, root, ts.Client())
		if k := verify(t, resp, body); k.Kid != key.Kid {
			t.Errorf("second origin serves %s, first %s", k.Kid, key.Kid)
		}
	})
	t.Run("a configured key wins", func(t *testing.T) {
		const seed = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU" // RFC 9421 B.1.4
		ts := httptest.NewUnstartedServer(nil)
		root := "http://" + ts.Listener.Addr().String()
		srv, err := origin.New(origin.Config{SiteRoot: root, CacheBytes: 1 << 20, Log: slog.New(slog.DiscardHandler), SigningKey: seed}, inst.Store)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ts.Config.Handler = srv
		ts.Start()
		defer ts.Close()
		resp, body := fetch(t, root, ts.Client())
		if k := verify(t, resp, body); k.Kid != "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" {
			t.Errorf("kid %s", k.Kid)
		}
	})
	t.Run("another authority does not verify", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://evil.example/.well-known/http-message-signatures-directory", nil)
		resp.Request = req
		pub, _ := key.PublicKey()
		if _, err := signing.VerifyResponse(resp, discovery.DirectoryLabel, pub, time.Now()); err == nil {
			t.Error("the signature verified for another authority")
		}
	})
}

// TestTextDocuments checks robots.txt, llms.txt and auth.md.
func TestTextDocuments(t *testing.T) {
	inst := origintest.Start(t)
	resp, body := inst.Get(t, "/robots.txt")
	if !strings.Contains(string(body), "\nContent-Signal: "+site.ContentSignal+"\n") || !strings.Contains(string(body), "Sitemap: "+inst.SiteRoot+"/sitemap-index.xml") {
		t.Errorf("robots.txt:\n%s", body)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("robots.txt Content-Type %q", resp.Header.Get("Content-Type"))
	}
	// RFC 9309: a crawler obeys the group naming its product token, else
	// the "*" group. The training crawlers are kept out; the search and
	// user-initiated agents of the same operators are not.
	groups := robotsGroups(string(body))
	for _, ua := range []string{"GPTBot", "ClaudeBot", "Google-Extended", "Applebot-Extended", "CCBot", "meta-externalagent"} {
		if rules := robotsRules(groups, ua); !slices.Contains(rules, "disallow: /") {
			t.Errorf("%s may crawl: %v", ua, rules)
		}
	}
	for _, ua := range []string{"OAI-SearchBot", "ChatGPT-User", "Claude-SearchBot", "Claude-User", "Googlebot", "Applebot", "PerplexityBot", "Meta-ExternalFetcher"} {
		if rules := robotsRules(groups, ua); slices.Contains(rules, "disallow: /") || !slices.Contains(rules, "allow: /") {
			t.Errorf("%s may not crawl: %v", ua, rules)
		}
	}
	_, body = inst.Get(t, "/llms.txt")
	llms := string(body)
	if !strings.HasPrefix(llms, "# Invoicewire\n\n> ") || !strings.Contains(llms, "\n## ") {
		t.Errorf("llms.txt is not in the llmstxt.org shape:\n%s", llms)
	}
	if !strings.Contains(llms, inst.SiteRoot+contenttest.Article(0).Path()+".md") || strings.Contains(llms, origintest.RetractedSlug) {
		t.Error("llms.txt does not list the newest markdown twins (or lists the retracted one)")
	}
	resp, body = inst.Get(t, "/auth.md")
	if resp.Header.Get("Content-Type") != content.MarkdownType || !strings.Contains(string(body), inst.BaseURL+"/agent-auth/register") || strings.Contains(string(body), "{{") {
		t.Errorf("auth.md: %s\n%s", resp.Header.Get("Content-Type"), body)
	}
}

// robotsGroups parses robots.txt into its groups (RFC 9309 §2.1): the
// product tokens of consecutive user-agent lines, lowercased, and the rules
// after them ("allow: /", lowercased, spaces trimmed).
func robotsGroups(doc string) map[string][]string {
	groups := map[string][]string{}
	var agents []string
	inRules := false
	for _, line := range strings.Split(doc, "\n") {
		line, _, _ = strings.Cut(line, "#")
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		switch name {
		case "user-agent":
			if inRules {
				agents, inRules = nil, false
			}
			agents = append(agents, strings.ToLower(value))
		case "allow", "disallow":
			inRules = true
			for _, a := range agents {
				groups[a] = append(groups[a], name+": "+value)
			}
		}
	}
	return groups
}

// robotsRules are the rules a crawler with the product token ua obeys.
func robotsRules(groups map[string][]string, ua string) []string {
	if rules, ok := groups[strings.ToLower(ua)]; ok {
		return rules
	}
	return groups["*"]
}
