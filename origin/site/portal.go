package site

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"go.yaml.in/yaml/v4"

	"github.com/invoicewire/invoicewire/origin/openapi"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// The developer portal is generated from openapi.json, the one description
// of the API: endpoints, parameters, example responses, headers, errors and
// event payloads all come from the document, so nothing is written twice.
// Only what the document cannot hold — copy-paste commands, signature
// verification code — is written here. It is built once per process.

// docServer is the server URL openapi.json is written for; the portal
// shows this instance's {site_root} instead.
const docServer = "http://localhost:8080"

type portal struct {
	body []byte
}

// Developers answers GET /developers.
func (s *Site) Developers(r *http.Request) (*respond.Response, error) {
	s.portalOnce.Do(func() { s.portal, s.portalErr = s.buildPortal() })
	if s.portalErr != nil {
		return nil, s.portalErr
	}
	resp := respond.Bytes(HTMLType, s.portal.body, tagDiscovery)
	resp.Header = pageHeaders
	return resp, nil
}

type portalView struct {
	head
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
	MCPTools    []struct{ Name, Description string }
	Discovery   []link
}

type example struct {
	Title, Lang, Code string
	Note              template.HTML
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

func (s *Site) buildPortal() (*portal, error) {
	doc, err := libopenapi.NewDocument(openapi.Document)
	if err != nil {
		return nil, fmt.Errorf("site: parsing openapi.json: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("site: building the OpenAPI model: %w", err)
	}
	d := &m.Model
	g := &portalGen{site: s.SiteRoot, base: s.baseURL()}

	v := portalView{head: s.newHead("Developers · Invoicewire", "The Invoicewire API: quick start, every endpoint, limits, caching, errors, webhooks, agent auth, ask and MCP.", "/developers"),
		Site: s.SiteRoot, Base: s.baseURL(), MCPTools: MCPTools}
	v.Overview = g.md(d.Info.Description)

	// Every command works as it is against this instance: identifiers are
	// read from the API rather than assumed.
	first := func(field string) string {
		return "curl -s '" + g.base + "/articles?limit=1' | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"items\"][0][\"" + field + "\"])'"
	}
	v.QuickStart = []example{
		{Title: "The service index: every collection and where it is", Lang: "sh", Code: "curl -s '" + g.base + "/'"},
		{Title: "The two newest articles", Lang: "sh", Code: "curl -s '" + g.base + "/articles?limit=2'"},
		{Title: "Filter: mandate news about Germany, 10 at a time", Lang: "sh", Code: "curl -s '" + g.base + "/articles?section=mandates&country=de&limit=10'"},
		{Title: "Page through everything: follow next until it is null", Lang: "sh",
			Code: "url='" + g.base + "/articles?limit=100'\nwhile [ \"$url\" != None ]; do\n  page=$(curl -s \"$url\")\n" +
				"  echo \"$page\" | python3 -c 'import json,sys; [print(a[\"slug\"]) for a in json.load(sys.stdin)[\"items\"]]'\n" +
				"  url=$(echo \"$page\" | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"next\"])')\ndone"},
		{Title: "One article, by the slug of the newest", Lang: "sh", Code: "slug=$(" + first("slug") + ")\ncurl -s \"" + g.base + "/articles/$slug\""},
		{Title: "The same article as markdown, for an agent", Lang: "sh",
			Code: "md=$(" + first("markdown_url") + ")\ncurl -s \"$md\"",
			Note: "The article's <code>markdown_url</code>. The page address itself answers the same markdown to <code>Accept: text/markdown</code>."},
		{Title: "A country's mandate status", Lang: "sh", Code: "curl -s '" + g.base + "/countries/de'",
			Note: "The answer lists the country's dated <code>milestones</code>, each with its source and articles."},
		{Title: "Mandate deadlines as a calendar", Lang: "sh", Code: "curl -s '" + g.site + "/calendar/mandates.ics?country=de' | head -20",
			Note: "RFC 5545; subscribe to it in a calendar application, or drop <code>?country=</code> for every country."},
		{Title: "Revalidate: send the ETag back, get 304 Not Modified", Lang: "sh",
			Code: "etag=$(curl -sI '" + g.base + "/countries' | tr -d '\\r' | sed -n 's/^[Ee][Tt]ag: //p')\ncurl -si -H \"If-None-Match: $etag\" '" + g.base + "/countries' | head -1"},
		{Title: "Subscribe to a feed", Lang: "sh", Code: "curl -s '" + g.base + "/feeds'   # then point a feed reader at " + g.site + "/feeds/all.xml"},
		{Title: "Ask a question", Lang: "sh", Code: "curl -s -X POST '" + g.site + "/ask' -H 'Content-Type: application/json' -d '{\"query\": \"When does e-invoicing become mandatory in Belgium?\"}'"},
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
		statuses := map[string]string{"bad_request": "400", "unauthorized": "401", "forbidden": "403", "not_found": "404",
			"method_not_allowed": "405", "conflict": "409", "gone": "410", "payload_too_large": "413",
			"unsupported_media_type": "415", "unprocessable": "422", "rate_limited": "429", "internal": "500", "unavailable": "503"}
		for _, n := range sp.Schema().Enum {
			v.Errors = append(v.Errors, errorDoc{Code: n.Value, Status: statuses[n.Value]})
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
					ev.Payload = g.mediaExample(mt)
				}
			}
			v.Events = append(v.Events, ev)
		}
	}
	v.Verify = verifyExamples

	v.Discovery = []link{
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

	t := templates["developers"]
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		return nil, fmt.Errorf("site: rendering the developer portal: %w", err)
	}
	return &portal{body: b.Bytes()}, nil
}

// portalGen turns parts of the document into views.
type portalGen struct {
	site, base string
}

// expand replaces the document's placeholders and its example server with
// this instance's addresses.
func (g *portalGen) expand(s string) string {
	return strings.NewReplacer("{site_root}", g.site, "{base_url}", g.base, docServer+"/api/v1", g.base, docServer, g.site).Replace(s)
}

func (g *portalGen) md(s string) template.HTML {
	h, err := renderMarkdown(g.expand(s))
	if err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return h
}

func (g *portalGen) operation(method, path, server string, op *v3.Operation, shared []*v3.Parameter) *opView {
	ov := &opView{ID: op.OperationId, Method: method, Path: path, URL: server + path, Summary: op.Summary,
		Description: g.md(op.Description), Auth: len(op.Security) > 0}
	pathValues := map[string]string{}
	for _, p := range append(append([]*v3.Parameter{}, shared...), op.Parameters...) {
		if p == nil || p.Name == "If-None-Match" {
			// Every read takes it; the caching section explains it once.
			continue
		}
		req := "optional"
		if p.Required != nil && *p.Required {
			req = "required"
		}
		typ := ""
		if p.Schema != nil {
			typ = schemaType(p.Schema.Schema())
		}
		ov.Params = append(ov.Params, paramView{Name: p.Name, In: p.In, Type: typ, Required: req, Description: g.md(p.Description)})
		if p.In == "path" {
			val := "example"
			if p.Example != nil {
				var ex any
				if p.Example.Decode(&ex) == nil {
					val = fmt.Sprint(ex)
				}
			} else if p.Schema != nil && p.Schema.Schema().Example != nil {
				var ex any
				if p.Schema.Schema().Example.Decode(&ex) == nil {
					val = fmt.Sprint(ex)
				}
			}
			pathValues[p.Name] = val
		}
	}
	url := ov.URL
	for k, val := range pathValues {
		url = strings.ReplaceAll(url, "{"+k+"}", val)
	}
	curl := "curl -s"
	if method != http.MethodGet {
		curl += " -X " + method
	}
	if ov.Auth {
		curl += " \\\n  -H 'Authorization: Bearer <access_token>'"
	}
	if op.RequestBody != nil && op.RequestBody.Content != nil {
		for ct, mt := range op.RequestBody.Content.FromOldest() {
			ov.BodyType = ct
			ov.Body = g.mediaExample(mt)
			if ct == "application/json" && ov.Body != "" {
				compact := new(bytes.Buffer)
				if json.Compact(compact, []byte(ov.Body)) == nil {
					curl += " \\\n  -H 'Content-Type: application/json' \\\n  -d '" + strings.ReplaceAll(compact.String(), "'", "'\\''") + "'"
				}
			}
			break
		}
	}
	if path == "/mcp" {
		curl += " \\\n  -H 'Accept: application/json, text/event-stream'"
	}
	ov.Curl = curl + " \\\n  '" + url + "'"
	if op.Responses != nil {
		for code, r := range op.Responses.Codes.FromOldest() {
			rv := respView{Status: code, Description: g.md(r.Description)}
			if r.Content != nil {
				for ct, mt := range r.Content.FromOldest() {
					rv.MediaType = ct
					if strings.Contains(ct, "json") {
						rv.Example = g.mediaExample(mt)
					}
					break
				}
			}
			ov.Responses = append(ov.Responses, rv)
		}
	}
	return ov
}

func schemaType(s *base.Schema) string {
	if s == nil {
		return ""
	}
	t := strings.Join(s.Type, " or ")
	if len(s.Enum) > 0 {
		var vals []string
		for _, n := range s.Enum {
			vals = append(vals, n.Value)
		}
		return t + ": " + strings.Join(vals, ", ")
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	if s.Minimum != nil && s.Maximum != nil {
		t += fmt.Sprintf(", %g–%g", *s.Minimum, *s.Maximum)
	}
	if s.Pattern != "" {
		t += ", pattern " + s.Pattern
	}
	return t
}

// mediaExample is the example of a media type: its own, else one built
// from its schema.
func (g *portalGen) mediaExample(mt *v3.MediaType) string {
	var v any
	switch {
	case mt.Example != nil:
		if mt.Example.Decode(&v) != nil {
			return ""
		}
	case mt.Examples != nil && mt.Examples.Len() > 0:
		for _, ex := range mt.Examples.FromOldest() {
			if ex.Value != nil {
				ex.Value.Decode(&v)
			}
			break
		}
	case mt.Schema != nil:
		v = g.exampleOf(mt.Schema, 0)
	}
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return g.expand(string(b))
}

// ordered is a JSON object that keeps the schema's property order.
type ordered []orderedField

type orderedField struct {
	key   string
	value any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func decodeNode(n *yaml.Node) any {
	var v any
	if n == nil || n.Decode(&v) != nil {
		return nil
	}
	return v
}

// exampleOf builds an example value from a schema: its example, const,
// first enum value or default, else one built from its type, properties and
// items. Depth bounds recursive schemas.
func (g *portalGen) exampleOf(sp *base.SchemaProxy, depth int) any {
	if sp == nil || depth > 8 {
		return nil
	}
	s := sp.Schema()
	if s == nil {
		return nil
	}
	switch {
	case s.Example != nil:
		return decodeNode(s.Example)
	case len(s.Examples) > 0:
		return decodeNode(s.Examples[0])
	case s.Const != nil:
		return decodeNode(s.Const)
	case len(s.Enum) > 0:
		return decodeNode(s.Enum[0])
	case s.Default != nil:
		return decodeNode(s.Default)
	}
	if len(s.AllOf) > 0 {
		var merged ordered
		for _, part := range s.AllOf {
			if o, ok := g.exampleOf(part, depth+1).(ordered); ok {
				merged = append(merged, o...)
			}
		}
		return merged
	}
	for _, alts := range [][]*base.SchemaProxy{s.OneOf, s.AnyOf} {
		if len(alts) > 0 {
			return g.exampleOf(alts[0], depth+1)
		}
	}
	typ := ""
	for _, t := range s.Type {
		if t != "null" {
			typ = t
			break
		}
	}
	if typ == "" && s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		o := ordered{}
		if s.Properties != nil {
			for name, p := range s.Properties.FromOldest() {
				o = append(o, orderedField{name, g.exampleOf(p, depth+1)})
			}
		}
		return o
	case "array":
		if s.Items != nil && s.Items.IsA() {
			if it := g.exampleOf(s.Items.A, depth+1); it != nil {
				return []any{it}
			}
		}
		return []any{}
	case "integer":
		if s.Minimum != nil {
			return int64(*s.Minimum)
		}
		return 0
	case "number":
		return 0
	case "boolean":
		return true
	case "string":
		switch s.Format {
		case "date-time":
			return "2026-01-05T09:00:00Z"
		case "uri":
			return g.site + "/"
		case "email":
			return "ops@example.com"
		}
		return "string"
	}
	return nil
}

// verifyExamples check X-Invoicewire-Signature (D21) in three languages,
// Python with the standard library only. Each compares in constant time and
// reads the raw body before any JSON parsing.
var verifyExamples = []example{
	{Title: "Go", Lang: "go", Code: `package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

// Verify reads the raw body of a delivery and checks X-Invoicewire-Signature
// (sha256=<lowercase hex HMAC-SHA256 of the body, keyed by the secret>).
func Verify(r *http.Request, secret []byte) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, false
	}
	got, ok := strings.CutPrefix(r.Header.Get("X-Invoicewire-Signature"), "sha256=")
	if !ok {
		return nil, false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return nil, false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return body, hmac.Equal(sig, mac.Sum(nil))
}`},
	{Title: "Python (standard library only)", Lang: "python", Code: `import hashlib
import hmac


def verify(raw_body: bytes, header: str, secret: bytes) -> bool:
    """Check X-Invoicewire-Signature: sha256=<lowercase hex HMAC-SHA256>."""
    if not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256="):])


# In an http.server handler:
#   body = self.rfile.read(int(self.headers["Content-Length"]))
#   ok = verify(body, self.headers.get("X-Invoicewire-Signature", ""), SECRET)`},
	{Title: "Node.js", Lang: "javascript", Code: `const crypto = require("node:crypto");

// rawBody is a Buffer of the request body exactly as received.
function verify(rawBody, header, secret) {
  if (typeof header !== "string" || !header.startsWith("sha256=")) return false;
  const expected = crypto.createHmac("sha256", secret).update(rawBody).digest();
  const got = Buffer.from(header.slice("sha256=".length), "hex");
  return got.length === expected.length && crypto.timingSafeEqual(got, expected);
}

module.exports = { verify };`},
}
