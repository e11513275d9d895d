// Package discovery serves the documents that tell people, crawlers and
// agents what this service is and how to use it: the OAuth metadata of
// RFC 9728 and RFC 8414, the MCP server card, the AI catalog and the A2A
// agent card, the signed HTTP message signatures directory, and the text
// documents at the site root (auth.md, llms.txt, robots.txt).
//
// Every document but llms.txt depends on configuration only, so each is
// tagged store.TagIndex: no content change purges it, a deploy replaces it.
package discovery

import (
	"log/slog"
	"time"

	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Documents answers the discovery routes.
type Documents struct {
	// Store is read by llms.txt, which lists the newest articles.
	Store *store.Store
	// SiteRoot is {site_root}; every absolute URL is built from it.
	SiteRoot string
	// Keys hands out the service signing key (the signatures directory).
	Keys *signing.Source
	// Now is the clock of signatures; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

func (s *Documents) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Route is one cacheable GET route.
type Route struct {
	Pattern string
	Handler respond.Handler
}

// Routes lists the discovery documents.
func (s *Documents) Routes() []Route {
	return []Route{
		{"/auth.md", s.AuthMarkdown},
		{"/llms.txt", s.LLMsTxt},
		{"/robots.txt", s.RobotsTxt},

		{"/.well-known/oauth-protected-resource", s.ProtectedResourceMetadata},
		{"/.well-known/oauth-authorization-server", s.AuthorizationServerMetadata},
		{"/.well-known/mcp/server-card.json", s.MCPServerCard},
		{"/mcp/server-card", s.MCPServerCard},
		{"/.well-known/ai-catalog.json", s.AICatalog},
		{"/.well-known/agent-card.json", s.AgentCard},
		{"/.well-known/http-message-signatures-directory", s.SignaturesDirectory},
	}
}
