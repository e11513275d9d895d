// Package origin is Invoicewire's origin server: the JSON read API, the site
// surfaces and the discovery documents, answered from Redis through an
// in-process response cache (docs/architecture.md, "A read: edge → origin →
// store").
//
// Every response goes through one writer (serve.go) that adds the shared
// headers, caches what may be cached and renders every error as the JSON of
// docs/decisions.md (JSON errors).
package origin

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/internal/tagcache"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin/agentauth"
	"github.com/invoicewire/invoicewire/origin/api"
	"github.com/invoicewire/invoicewire/origin/ask"
	"github.com/invoicewire/invoicewire/origin/discovery"
	"github.com/invoicewire/invoicewire/origin/idempotency"
	"github.com/invoicewire/invoicewire/origin/mcp"
	"github.com/invoicewire/invoicewire/origin/openapi"
	"github.com/invoicewire/invoicewire/origin/portal"
	"github.com/invoicewire/invoicewire/origin/respond"
	"github.com/invoicewire/invoicewire/origin/site"
	"github.com/invoicewire/invoicewire/origin/webhooks"
)

// Config is what the origin needs beyond its store.
type Config struct {
	// SiteRoot is {site_root}, e.g. https://invoicewire.example.
	SiteRoot string
	// CacheBytes bounds the response cache.
	CacheBytes int64
	Log        *slog.Logger
	// Registry receives the origin's metrics; nil means a private registry.
	Registry prometheus.Registerer
	// SigningKey is IW_SIGNING_KEY, the base64url Ed25519 seed of the
	// service key; empty means the key shared through Redis (package
	// internal/signing).
	SigningKey string
	// IDJAGIssuers are the identity providers agent-auth trusts (IW_IDJAG_ISSUERS).
	IDJAGIssuers []agentauth.Issuer
	// WebhookPolicy decides which receiver addresses subscriptions may
	// name (IW_WEBHOOK_ALLOW_CIDRS).
	WebhookPolicy netguard.Policy
	// MCPAllowedOrigins are the browser origins /mcp accepts besides
	// requests without Origin (IW_MCP_ALLOWED_ORIGINS); empty: SiteRoot's.
	MCPAllowedOrigins []string
	// Now is the clock of time-dependent responses (the news sitemap's
	// window) and of their expiry in the cache; nil means time.Now.
	Now func() time.Time
}

// Server is the origin's HTTP handler.
type Server struct {
	// follower applies the content invalidations to cache; nil until
	// Follow starts.
	follower atomic.Pointer[invalidation.Follower]
	cfg      Config
	store    *store.Store
	cache    *tagcache.Cache[string, *entry]
	router   router
	metrics  *metrics
	log      *slog.Logger
	// ask answers POST /ask from its own index, kept current by Follow.
	ask *ask.Engine
}

// New builds the origin. Call Follow to keep its cache in step with Redis,
// and Close when done.
func New(cfg Config, st *store.Store) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cache, err := tagcache.New[string, *entry](cfg.CacheBytes)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: st, cache: cache, log: cfg.Log}
	s.metrics, err = newMetrics(cfg.Registry, cache)
	if err != nil {
		cache.Close()
		return nil, err
	}
	a := &api.API{Store: st, SiteRoot: cfg.SiteRoot}
	pages := &site.Site{Store: st, SiteRoot: cfg.SiteRoot, Now: cfg.Now}
	docs := &discovery.Documents{Store: st, SiteRoot: cfg.SiteRoot, Keys: signing.NewSource(st.Client(), cfg.SigningKey), Log: cfg.Log, Now: cfg.Now}
	dev := &portal.Portal{Site: pages}
	rt := &s.router
	rt.get("/api/v1/", a.Index)
	rt.get("/api/v1/articles", a.Articles)
	rt.get("/api/v1/articles/{slug}", a.Article)
	rt.get("/api/v1/feeds", a.Feeds)
	rt.get("/api/v1/countries", a.Countries)
	rt.get("/api/v1/countries/{code}", a.Country)
	rt.get("/api/v1/specs", a.Specs)
	rt.get("/api/v1/specs/{slug}", a.Spec)
	rt.get("/api/v1/sources", a.Sources)
	rt.get("/api/v1/webhooks", a.Webhooks)
	doc := openapi.For(cfg.SiteRoot)
	rt.get("/openapi.json", func(*http.Request) (*respond.Response, error) {
		return respond.Bytes("application/json", doc, "openapi"), nil
	})
	// The developer portal and the discovery documents, then the site's
	// pages, feeds and sitemaps: the site ends with the
	// /{year}/{month}/{file} wildcard, which would take any three-segment
	// path registered after it (/.well-known/mcp/server-card.json).
	for _, r := range dev.Routes() {
		rt.get(r.Pattern, r.Handler)
	}
	for _, r := range docs.Routes() {
		rt.get(r.Pattern, r.Handler)
	}
	for _, r := range pages.Routes() {
		rt.get(r.Pattern, r.Handler)
	}
	// POST /ask streams, so it writes its own answer through respond.Mount.
	if s.ask, err = ask.New(ask.Config{Store: st, SiteRoot: cfg.SiteRoot, Log: cfg.Log, Registry: cfg.Registry}); err != nil {
		cache.Close()
		return nil, err
	}
	rt.mount("/ask", s.ask.Mount())
	pages.Ask = s.ask.Ask
	// The MCP server's tools read the store; its ask tool is the /ask engine.
	rt.mount("/mcp", mcp.Handler(&mcp.Server{Store: st, SiteRoot: cfg.SiteRoot, Log: cfg.Log, AllowedOrigins: cfg.MCPAllowedOrigins,
		Ask: mcp.AskFunc(func(ctx context.Context, query, locale string) (any, error) {
			return s.ask.Ask(ctx, ask.Request{Query: query, Locale: locale})
		})}))

	// Agent auth and webhook subscriptions (docs/decisions.md, agent auth, subscriptions). Every POST takes an
	// Idempotency-Key (docs/decisions.md, Idempotency-Key); register and claim answers hold secrets, so
	// they are kept no longer than the secrets live.
	rdb := st.Client()
	idem := idempotency.NewStore(rdb, cfg.Log)
	aa := agentauth.New(agentauth.Config{SiteRoot: cfg.SiteRoot, Issuers: cfg.IDJAGIssuers, FetchPolicy: cfg.WebhookPolicy, Log: cfg.Log}, rdb)
	wh := webhooks.New(webhooks.Config{SiteRoot: cfg.SiteRoot, Policy: cfg.WebhookPolicy}, webhook.NewStore(rdb))
	rt.get("/api/v1/agent-auth/register", aa.Metadata)
	rt.handle(http.MethodPost, "/api/v1/agent-auth/register", idem.Wrap(idempotency.Options{Route: "register"}, aa.Register))
	rt.handle(http.MethodGet, "/api/v1/agent-auth/register/{client_id}", aa.ReadClient)
	rt.handle(http.MethodDelete, "/api/v1/agent-auth/register/{client_id}", aa.DeleteClient)
	rt.credential("/api/v1/agent-auth/register/{client_id}", aa.Authorize)
	rt.handle(http.MethodPost, "/api/v1/agent-auth/claim", idem.Wrap(idempotency.Options{Route: "claim", TTL: token.Lifetime}, aa.Claim))
	rt.handle(http.MethodPost, "/api/v1/agent-auth/revoke", idem.Wrap(idempotency.Options{Route: "revoke"}, aa.Revoke))
	rt.handle(http.MethodPost, "/api/v1/webhooks", wh.Authenticated("webhooks:write", idem.Wrap(idempotency.Options{Route: "webhooks", Client: webhooks.ClientOf}, wh.Create)))
	rt.handle(http.MethodGet, "/api/v1/webhooks/subscriptions", wh.Authenticated("webhooks:read", wh.List))
	rt.handle(http.MethodGet, "/api/v1/webhooks/subscriptions/{id}", wh.Authenticated("webhooks:read", wh.Get))
	rt.handle(http.MethodDelete, "/api/v1/webhooks/subscriptions/{id}", wh.Authenticated("webhooks:write", wh.Delete))
	return s, nil
}

// Follow keeps the response cache and the ask index in step with content
// changes until ctx ends; ready is closed once the first subscription is
// live.
//
// The ask index is first built only once that subscription is live. The
// follower clears everything on its first subscription (nothing was seen
// before it), and a clear asks the index for a rebuild: started earlier,
// the first build was followed at once by a second one, which at a million
// articles held two indexes and a build's garbage at the memory limit for
// minutes after start (docs/scale.md). Started after, the clear and the
// first build coalesce into one build, which reads everything the
// subscription could have missed.
func (s *Server) Follow(ctx context.Context, ready chan<- struct{}) {
	// Questions asked before the subscription is live wait for that
	// first build rather than start one of their own.
	s.ask.WillRun()
	f := invalidation.NewFollower(invalidation.Purgers{s.cache, s.ask}, s.store.Version, s.log)
	s.follower.Store(f)
	live := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-live:
		}
		if ready != nil {
			close(ready)
		}
		s.ask.Run(ctx)
	}()
	f.Run(ctx, s.store.Client(), live)
}

// Close releases the cache.
func (s *Server) Close() { s.cache.Close() }
