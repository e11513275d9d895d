// Package portal serves the developer portal at /developers, generated from
// openapi.json, the one description of the API: endpoints, parameters,
// example responses, headers, errors and event payloads all come from the
// document, so nothing is written twice. Only what the document cannot hold
// is written here, as embedded files under samples/: the quick-start
// commands and the webhook signature verification code (run by the tests in
// each language). The page is built once per process, in the site's layout.
package portal

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/mcp"
	"github.com/invoicewire/invoicewire/origin/openapi"
	"github.com/invoicewire/invoicewire/origin/respond"
	"github.com/invoicewire/invoicewire/origin/site"
)

// docServer is the server URL openapi.json is written for; the portal
// shows this instance's {site_root} instead.
const docServer = openapi.DocumentRoot

// Portal answers GET /developers.
type Portal struct {
	// Site is the site whose layout the page is rendered in; its SiteRoot
	// is {site_root}, which every command and URL on the page uses.
	Site *site.Site

	once sync.Once
	page *respond.Response
	err  error
}

// Developers answers GET /developers.
func (p *Portal) Developers(r *http.Request) (*respond.Response, error) {
	p.once.Do(func() { p.page, p.err = p.build() })
	if p.err != nil {
		return nil, p.err
	}
	// A copy: the origin's writer may set fields of what it is handed.
	resp := *p.page
	return &resp, nil
}

// Routes lists the portal's GET routes.
func (p *Portal) Routes() []site.Route {
	return []site.Route{{Pattern: "/developers", Handler: p.Developers}}
}

type portalView struct {
	site.Head
	Overview    template.HTML
	Site, Base  string
	QuickStart  []example
	Groups      []opGroup
	RateLimit   []headerDoc
	Caching     []headerDoc
	Versioning  []headerDoc
	Errors      []errorDoc
	ErrorSample string
	Events      []eventDoc
	Verify      []example
	Ask         *opView
	MCP         *opView
	MCPTools    []mcp.Tool
	Discovery   []site.Link
}

type opGroup struct {
	ID, Name    string
	Description template.HTML
	Ops         []*opView
}

type opView struct {
	ID, Method, Path, URL, Summary string
	Description                    template.HTML
	Params                         []paramView
	Body                           string
	BodyType                       string
	Responses                      []respView
	Curl                           string
	Auth                           bool
}

type paramView struct {
	Name, In, Type, Required string
	Description              template.HTML
}

type respView struct {
	Status, MediaType, Example string
	Description                template.HTML
}

type headerDoc struct {
	Name, Example string
	Description   template.HTML
}

type errorDoc struct {
	Code   string
	Status string
}

type eventDoc struct {
	Name, Summary, Payload string
	Description            template.HTML
}

func (p *Portal) build() (*respond.Response, error) {
	doc, err := libopenapi.NewDocument(openapi.Document)
	if err != nil {
		return nil, fmt.Errorf("portal: parsing openapi.json: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("portal: building the OpenAPI model: %w", err)
	}
	d := &m.Model
	root := p.Site.SiteRoot
	g := &portalGen{site: root, base: root + "/api/v1"}

	v := portalView{Head: p.Site.NewHead("Developers · Invoicewire", "The Invoicewire API: quick start, every endpoint, limits, caching, errors, webhooks, agent auth, ask and MCP.", "/developers"),
		Site: g.site, Base: g.base, MCPTools: mcp.Tools}
	v.Overview = g.md(d.Info.Description)

	// Every command works as it is against this instance: identifiers are
	// read from the API rather than assumed.
	if v.QuickStart, err = quickStart(g.site, g.base); err != nil {
		return nil, err
	}

	// Endpoints, grouped by the document's tags in its order.
	groups := map[string]*opGroup{}
	var order []string
	for _, t := range d.Tags {
		groups[t.Name] = &opGroup{ID: "tag-" + t.Name, Name: t.Name, Description: g.md(t.Description)}
		order = append(order, t.Name)
	}
	for path, item := range d.Paths.PathItems.FromOldest() {
		server := g.base
		if len(item.Servers) > 0 {
			server = g.site
		}
		for method, op := range item.GetOperations().FromOldest() {
			ov := g.operation(strings.ToUpper(method), path, server, op, item.Parameters)
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			if groups[tag] == nil {
				groups[tag] = &opGroup{ID: "tag-" + tag, Name: tag}
				order = append(order, tag)
			}
			groups[tag].Ops = append(groups[tag].Ops, ov)
			switch ov.Path {
			case "/ask":
				v.Ask = ov
			case "/mcp":
				v.MCP = ov
			}
		}
	}
	for _, name := range order {
		if len(groups[name].Ops) > 0 {
			v.Groups = append(v.Groups, *groups[name])
		}
	}

	hdr := func(names ...string) []headerDoc {
		var out []headerDoc
		for _, n := range names {
			h := d.Components.Headers.GetOrZero(n)
			if h == nil {
				continue
			}
			hd := headerDoc{Name: strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "Optional"), "Read"), "Required"), Description: g.md(h.Description)}
			if h.Example != nil {
				var ex any
				if h.Example.Decode(&ex) == nil {
					hd.Example = g.expand(fmt.Sprint(ex))
				}
			}
			if strings.HasPrefix(n, "CacheControl") {
				hd.Name = "Cache-Control"
			}
			out = append(out, hd)
		}
		return out
	}
	v.RateLimit = hdr("RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After")
	v.Caching = hdr("CacheControlRead", "CacheControl", "ETag", "Vary", "Cache-Status", "Age")
	v.Versioning = hdr("Deprecation", "Sunset", "Link")

	if sp := d.Components.Schemas.GetOrZero("ErrorCode"); sp != nil {
		for _, n := range sp.Schema().Enum {
			status := ""
			if st := apierror.StatusFor(n.Value); st != 0 {
				status = strconv.Itoa(st)
			}
			v.Errors = append(v.Errors, errorDoc{Code: n.Value, Status: status})
		}
		sort.SliceStable(v.Errors, func(i, j int) bool { return v.Errors[i].Status < v.Errors[j].Status })
	}
	if r := d.Components.Responses.GetOrZero("NotFound"); r != nil {
		if mt := r.Content.GetOrZero("application/json"); mt != nil {
			v.ErrorSample = g.mediaExample(mt)
		}
	}

	if d.Webhooks != nil {
		for name, item := range d.Webhooks.FromOldest() {
			if item.Post == nil {
				continue
			}
			ev := eventDoc{Name: name, Summary: item.Post.Summary, Description: g.md(item.Post.Description)}
			if item.Post.RequestBody != nil {
				if mt := item.Post.RequestBody.Content.GetOrZero("application/json"); mt != nil {
					ev.Payload = g.deliveryExample(name, mt)
				}
			}
			v.Events = append(v.Events, ev)
		}
	}
	v.Verify = verifyExamples

	v.Discovery = []site.Link{
		{Href: g.site + "/openapi.json", Title: "OpenAPI 3.1 description"},
		{Href: g.site + "/.well-known/oauth-protected-resource", Title: "OAuth protected resource metadata (RFC 9728)"},
		{Href: g.site + "/.well-known/oauth-authorization-server", Title: "OAuth authorization server metadata (RFC 8414)"},
		{Href: g.site + "/.well-known/http-message-signatures-directory", Title: "HTTP message signatures directory (Ed25519, Web Bot Auth)"},
		{Href: g.site + "/.well-known/mcp/server-card.json", Title: "MCP server card"},
		{Href: g.site + "/.well-known/ai-catalog.json", Title: "AI catalog"},
		{Href: g.site + "/.well-known/agent-card.json", Title: "A2A agent card"},
		{Href: g.site + "/llms.txt", Title: "llms.txt"},
		{Href: g.site + "/auth.md", Title: "Agent authentication walkthrough (markdown)"},
		{Href: g.site + "/robots.txt", Title: "robots.txt with Content-Signal"},
		{Href: g.site + "/sitemap-index.xml", Title: "Sitemap index"},
	}

	return site.RenderPage(pageTemplate, v, store.TagIndex)
}
