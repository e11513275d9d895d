package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/mcp"
	"github.com/invoicewire/invoicewire/origin/respond"
	"github.com/invoicewire/invoicewire/origin/site"
)

// Scopes are the OAuth scopes of agent tokens (docs/decisions.md, agent auth).
var Scopes = []string{"webhooks:read", "webhooks:write"}

// Grant types the claim endpoint accepts (docs/decisions.md, agent auth).
const (
	GrantIdentityAssertion = "urn:ietf:params:oauth:grant-type:identity-assertion"
	GrantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

func (s *Documents) baseURL() string { return s.SiteRoot + "/api/v1" }

func jsonDoc(v any, contentType string) (*respond.Response, error) {
	resp, err := respond.JSON(v, store.TagIndex)
	if err != nil {
		return nil, err
	}
	resp.ContentType = contentType
	return resp, nil
}

// ProtectedResourceMetadata answers GET /.well-known/oauth-protected-resource
// (RFC 9728), the document every 401 challenge points at. The resource is
// {site_root}: the metadata URL is built from it by inserting the
// well-known path (§3), so §3.3's identity check holds.
func (s *Documents) ProtectedResourceMetadata(r *http.Request) (*respond.Response, error) {
	return jsonDoc(map[string]any{
		"resource":                 s.SiteRoot,
		"authorization_servers":    []string{s.SiteRoot},
		"scopes_supported":         Scopes,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Invoicewire",
		"resource_documentation":   s.SiteRoot + "/developers",
	}, "application/json")
}

// AuthorizationServerMetadata answers GET
// /.well-known/oauth-authorization-server (RFC 8414). The issuer is
// {site_root}. There is no authorization endpoint (no grant uses one), so
// response_types_supported is empty (RFC 8414 erratum 7793); clients are
// public and identify with client_id alone, hence "none".
func (s *Documents) AuthorizationServerMetadata(r *http.Request) (*respond.Response, error) {
	b := s.baseURL()
	return jsonDoc(map[string]any{
		"issuer":                                     s.SiteRoot,
		"registration_endpoint":                      b + "/agent-auth/register",
		"token_endpoint":                             b + "/agent-auth/claim",
		"revocation_endpoint":                        b + "/agent-auth/revoke",
		"grant_types_supported":                      []string{GrantIdentityAssertion, GrantJWTBearer},
		"scopes_supported":                           Scopes,
		"response_types_supported":                   []string{},
		"token_endpoint_auth_methods_supported":      []string{"none"},
		"revocation_endpoint_auth_methods_supported": []string{"none"},
		"service_documentation":                      s.SiteRoot + "/auth.md",
	}, "application/json")
}

// serverName is the MCP server card's reverse-DNS name (SEP-2127: exactly
// one "/"), derived from the site's host: news.example.com gives
// com.example.news/invoicewire.
func (s *Documents) serverName() string {
	host := s.SiteRoot
	if u, err := url.Parse(s.SiteRoot); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	labels := strings.Split(host, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "/invoicewire"
}

func (s *Documents) publisherDomain() string {
	if u, err := url.Parse(s.SiteRoot); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "localhost"
}

// MCPServerCard answers GET /.well-known/mcp/server-card.json and GET
// /mcp/server-card: the SEP-2127 card (application/mcp-server-card+json at
// the reserved <endpoint>/server-card address) with the older SEP-1649
// members (serverInfo, transport, capabilities, tools) beside it for clients
// that still read those at the well-known address.
func (s *Documents) MCPServerCard(r *http.Request) (*respond.Response, error) {
	tools := make([]map[string]string, len(mcp.Tools))
	for i, t := range mcp.Tools {
		tools[i] = map[string]string{"name": t.Name, "description": t.Description}
	}
	card := map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
		"name":        s.serverName(),
		"title":       "Invoicewire",
		"version":     "1.0.0",
		"description": "Read-only access to Invoicewire's e-invoicing news: articles (as markdown), tracked countries and their mandates, specifications and cited sources.",
		"websiteUrl":  s.SiteRoot + "/developers#mcp",
		"remotes": []map[string]any{{
			"type": "streamable-http", "url": s.SiteRoot + "/mcp", "supportedProtocolVersions": mcp.ProtocolVersions,
		}},
		"serverInfo":     map[string]string{"name": "invoicewire", "title": "Invoicewire", "version": "1.0.0"},
		"transport":      map[string]string{"type": "streamable-http", "url": s.SiteRoot + "/mcp"},
		"capabilities":   mcp.Capabilities,
		"authentication": map[string]any{"required": false},
		"tools":          tools,
	}
	ct := "application/json"
	if r.URL.Path == "/mcp/server-card" {
		ct = "application/mcp-server-card+json"
	}
	return jsonDoc(card, ct)
}

// AICatalog answers GET /.well-known/ai-catalog.json (AI Catalog 1.0): the
// MCP server card and the A2A agent card of this domain.
func (s *Documents) AICatalog(r *http.Request) (*respond.Response, error) {
	d := s.publisherDomain()
	pub := map[string]string{"identifier": d, "displayName": "Invoicewire", "identityType": "dns"}
	return jsonDoc(map[string]any{
		"specVersion": "1.0",
		"host":        map[string]string{"displayName": "Invoicewire", "identifier": d, "documentationUrl": s.SiteRoot + "/developers"},
		"entries": []map[string]any{
			{
				"identifier": "urn:air:" + d + ":mcp:invoicewire", "type": "application/mcp-server-card+json",
				"url": s.SiteRoot + "/mcp/server-card", "description": "MCP server with read-only tools over the e-invoicing news archive.",
				"tags": []string{"news", "e-invoicing", "peppol"}, "version": "1.0.0", "publisher": pub,
			},
			{
				"identifier": "urn:air:" + d + ":a2a:invoicewire", "type": "application/a2a-agent-card+json",
				"url": s.SiteRoot + "/.well-known/agent-card.json", "description": "Agent card of the Invoicewire service.",
				"tags": []string{"news", "e-invoicing"}, "version": "1.0.0", "publisher": pub,
			},
		},
	}, "application/ai-catalog+json")
}

// AgentInputModes are the media types the agent-facing endpoints take: /ask
// and /mcp read JSON bodies only (/ask answers any other with 415), so the
// agent card lists nothing else.
var AgentInputModes = []string{"application/json"}

// Output modes of the agent card's skills: each skill lists exactly the
// media types its endpoints answer with (docs/decisions.md, the agent card
// says only what is served). Every one answers JSON (the read API, the MCP
// tools, /ask); an article and the mandates have markdown twins (the
// article's .md, /mandates.md) and /ask also streams events. Nothing else
// has a markdown form, and /ask answers JSON to Accept: text/markdown.
var (
	jsonOutput     = []string{"application/json"}
	markdownOutput = []string{"application/json", "text/markdown"}
	askOutput      = []string{"application/json", "text/event-stream"}
)

// AgentOutputModes are all the skills' output modes together, the card's
// defaultOutputModes.
var AgentOutputModes = []string{"application/json", "text/markdown", "text/event-stream"}

// AgentCard answers GET /.well-known/agent-card.json (A2A 1.0). The service
// does not speak A2A's own JSON-RPC binding; supportedInterfaces names the
// agent-facing endpoints it does have, the MCP endpoint and the NLWeb-style
// /ask endpoint. A2A 1.0 requires a custom binding to carry every core A2A
// operation (specification §5, §5.8), which neither does: see
// docs/decisions.md, "The agent card says only what is served", for what is left open.
func (s *Documents) AgentCard(r *http.Request) (*respond.Response, error) {
	// Every skill has examples: A2A's AgentSkill.examples is a list of
	// strings, and a skill without any would be null.
	skill := func(id, name, desc string, tags, outputModes []string, examples ...string) map[string]any {
		return map[string]any{"id": id, "name": name, "description": desc, "tags": tags, "examples": append([]string{}, examples...),
			"inputModes": AgentInputModes, "outputModes": outputModes}
	}
	return jsonDoc(map[string]any{
		"name":        "Invoicewire",
		"description": "News about e-invoicing — the Peppol network, national mandates, specifications and vendors — for people and agents. Read-only and anonymous.",
		"version":     "1.0.0",
		"supportedInterfaces": []map[string]string{
			{"url": s.SiteRoot + "/mcp", "protocolBinding": "MCP", "protocolVersion": mcp.ProtocolVersions[0]},
			{"url": s.SiteRoot + "/ask", "protocolBinding": "NLWeb", "protocolVersion": "0.55"},
		},
		"provider":           map[string]string{"organization": "Invoicewire", "url": s.SiteRoot + "/"},
		"documentationUrl":   s.SiteRoot + "/developers",
		"iconUrl":            s.SiteRoot + "/assets/icon.svg?v=" + site.AssetsVersion,
		"capabilities":       map[string]any{"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
		"defaultInputModes":  AgentInputModes,
		"defaultOutputModes": AgentOutputModes,
		"skills": []map[string]any{
			skill("search-articles", "Search articles", "Find published articles by section, audience, country or words.", []string{"news", "search"}, jsonOutput, "Latest Peppol news for Belgium"),
			skill("read-article", "Read an article", "Read one article as markdown with its sources.", []string{"news"}, markdownOutput, "Read the article about Belgium's B2B e-invoicing grace period"),
			skill("mandates", "Country mandates", "The e-invoicing mandate status of tracked countries.", []string{"mandates", "countries"}, markdownOutput, "Is B2B e-invoicing mandatory in Germany?"),
			skill("specifications", "Specifications", "Tracked specifications such as Peppol BIS Billing 3.0 and EN 16931.", []string{"specs"}, jsonOutput, "Which version of Peppol BIS Billing 3.0 is current?"),
			skill("ask", "Ask", "Answer a question with passages quoted from the articles, with citations.", []string{"question-answering"}, askOutput, "When does Poland's KSeF become mandatory?"),
		},
	}, "application/json")
}

// DirectoryType is the media type of the signatures directory
// (draft-meunier-webbotauth-httpsig-directory, -01 and later).
const DirectoryType = "application/http-message-signatures-directory+json"

// DirectoryTag is the signature tag of a directory response.
const DirectoryTag = "http-message-signatures-directory"

// DirectoryCacheControl keeps cached copies far younger than the response
// signature's lifetime (DirectorySignatureTTL), so no cache ever serves an
// expired signature: at most 5 minutes fresh plus an hour stale.
const DirectoryCacheControl = "public, max-age=300, s-maxage=300, stale-while-revalidate=3600"

// DirectorySignatureTTL is how long a directory response's signature is
// valid (the Web Bot Auth drafts recommend at most 24 hours).
const DirectorySignatureTTL = 24 * time.Hour

// DirectoryLabel is the signature label of the directory response.
const DirectoryLabel = signing.Label

// SignaturesDirectory answers /.well-known/http-message-signatures-directory:
// the service's Ed25519 key as a JWKS (kid = RFC 7638 thumbprint), the
// response signed with that key as the Web Bot Auth directory draft
// describes — covering ("@authority";req "content-digest") with
// tag="http-message-signatures-directory" — and a Content-Digest (RFC 9530).
// Every answer carries a fresh signature, so it is Uncached: the origin's
// response cache would keep one signature forever.
func (s *Documents) SignaturesDirectory(r *http.Request) (*respond.Response, error) {
	var (
		key *signing.Key
		err = errors.New("discovery: no signing key source configured")
	)
	if s.Keys != nil {
		key, err = s.Keys.Key(r.Context())
	}
	if err != nil {
		if s.Log != nil {
			s.Log.ErrorContext(r.Context(), "discovery: loading the signing key", "err", err)
		}
		e := apierror.New(http.StatusServiceUnavailable, "The signing key is not available yet.", "Try again in a few seconds.")
		e.Header = http.Header{"Retry-After": {"5"}}
		return nil, e
	}
	body, err := json.Marshal(map[string]any{"keys": []signing.JWK{key.JWK()}})
	if err != nil {
		return nil, fmt.Errorf("discovery: encoding the directory: %w", err)
	}
	body = append(body, '\n')
	h := http.Header{}
	h.Set(signing.HeaderContentDigest, signing.ContentDigest(body))

	now := s.now().UTC().Truncate(time.Second)
	m := signing.Message{Request: r, Status: http.StatusOK, Header: h}
	if u, err := url.Parse(s.SiteRoot); err == nil && u.Host != "" {
		// Behind the edge the request may reach the origin under another
		// name or scheme; sign the public one the client asked for.
		m.Authority, m.Scheme = u.Host, u.Scheme
	}
	comps := []signing.Component{{Name: "@authority", Req: true}, {Name: "content-digest"}}
	params := signing.Params{Created: now, Expires: now.Add(DirectorySignatureTTL), KeyID: key.ID, Alg: signing.Alg, Tag: DirectoryTag}
	if err := key.SignResponse(m, DirectoryLabel, comps, params); err != nil {
		return nil, fmt.Errorf("discovery: signing the directory: %w", err)
	}
	return &respond.Response{Status: http.StatusOK, ContentType: DirectoryType, Body: body, CacheControl: DirectoryCacheControl,
		Header: h, Uncached: true}, nil
}
