package openapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
)

const (
	apiServer  = "http://localhost:8080/api/v1"
	siteServer = "http://localhost:8080"
)

func model(t *testing.T) *v3.Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(Document)
	if err != nil {
		t.Fatalf("parsing openapi.json: %v", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("building the OpenAPI 3 model: %v", err)
	}
	return &m.Model
}

// TestDocumentIsValidOpenAPI31 parses the document with libopenapi and
// validates it against the OpenAPI 3.1 meta-schema with libopenapi-validator.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := libopenapi.NewDocument(Document)
	if err != nil {
		t.Fatalf("parsing openapi.json: %v", err)
	}
	if v := doc.GetSpecInfo().Version; !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi is %q, want 3.1.x", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("building the OpenAPI 3 model: %v", err)
	}
	if got := m.Model.Info.Version; got != "1.0.0" {
		t.Errorf("info.version is %q, want 1.0.0 (the contract)", got)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("creating the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("document: %s: %s", e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", f.FieldPath, f.Reason)
			}
		}
	}
}

// TestDocumentCoversContract lists every endpoint of the contract and every
// extension of docs/architecture.md; each must be an operation of the document.
func TestDocumentCoversContract(t *testing.T) {
	m := model(t)
	testCases := []struct {
		desc   string
		method string
		path   string
		site   bool
	}{
		{desc: "§4.1 service index", method: "GET", path: "/"},
		{desc: "§4.2 article list", method: "GET", path: "/articles"},
		{desc: "§4.3 article", method: "GET", path: "/articles/{slug}"},
		{desc: "§4.4 feed catalog", method: "GET", path: "/feeds"},
		{desc: "§4.5 country list", method: "GET", path: "/countries"},
		{desc: "§4.6 country", method: "GET", path: "/countries/{code}"},
		{desc: "§4.7 spec list", method: "GET", path: "/specs"},
		{desc: "§4.8 spec", method: "GET", path: "/specs/{slug}"},
		{desc: "§4.9 source list", method: "GET", path: "/sources"},
		{desc: "§4.10 webhook catalog", method: "GET", path: "/webhooks"},
		{desc: "§4.11 subscribe", method: "POST", path: "/webhooks"},
		{desc: "§4.12 registration metadata", method: "GET", path: "/agent-auth/register"},
		{desc: "§4.13 register", method: "POST", path: "/agent-auth/register"},
		{desc: "§4.14 claim", method: "POST", path: "/agent-auth/claim"},
		{desc: "§4.15 revoke", method: "POST", path: "/agent-auth/revoke"},
		{desc: "§4.16 ask", method: "POST", path: "/ask", site: true},
		{desc: "§4.17 openapi.json", method: "GET", path: "/openapi.json", site: true},
		{desc: "subscriptions: list subscriptions", method: "GET", path: "/webhooks/subscriptions"},
		{desc: "subscriptions: read subscription", method: "GET", path: "/webhooks/subscriptions/{id}"},
		{desc: "subscriptions: delete subscription", method: "DELETE", path: "/webhooks/subscriptions/{id}"},
		{desc: "agent auth: read client", method: "GET", path: "/agent-auth/register/{client_id}"},
		{desc: "agent auth: delete client", method: "DELETE", path: "/agent-auth/register/{client_id}"},
		{desc: "feeds: master feed RSS", method: "GET", path: "/feeds/all.xml", site: true},
		{desc: "feeds: master feed JSON", method: "GET", path: "/feeds/all.json", site: true},
		{desc: "feeds: section feed RSS", method: "GET", path: "/feeds/section/{section}.xml", site: true},
		{desc: "feeds: section feed JSON", method: "GET", path: "/feeds/section/{section}.json", site: true},
		{desc: "feeds: audience feed RSS", method: "GET", path: "/feeds/audience/{audience}.xml", site: true},
		{desc: "feeds: audience feed JSON", method: "GET", path: "/feeds/audience/{audience}.json", site: true},
		{desc: "feeds: country feed RSS", method: "GET", path: "/feeds/country/{code}.xml", site: true},
		{desc: "feeds: country feed JSON", method: "GET", path: "/feeds/country/{code}.json", site: true},
		{desc: "feeds: newsletter feed RSS", method: "GET", path: "/feeds/newsletter.xml", site: true},
		{desc: "feeds: newsletter feed JSON", method: "GET", path: "/feeds/newsletter.json", site: true},
		{desc: "markdown twin: article page", method: "GET", path: "/{year}/{month}/{slug}/", site: true},
		{desc: "markdown twin: markdown twin", method: "GET", path: "/{year}/{month}/{slug}.md", site: true},
		{desc: "identifiers and links: country page", method: "GET", path: "/countries/{code}/", site: true},
		{desc: "newsletter: newsletter page", method: "GET", path: "/newsletter/{issue}/", site: true},
		{desc: "agent surfaces: MCP", method: "POST", path: "/mcp", site: true},
		{desc: "agent surfaces: protected resource metadata", method: "GET", path: "/.well-known/oauth-protected-resource", site: true},
		{desc: "agent surfaces: authorization server metadata", method: "GET", path: "/.well-known/oauth-authorization-server", site: true},
		{desc: "agent surfaces: signatures directory", method: "GET", path: "/.well-known/http-message-signatures-directory", site: true},
		{desc: "agent surfaces: MCP server card", method: "GET", path: "/.well-known/mcp/server-card.json", site: true},
		{desc: "agent surfaces: agent card", method: "GET", path: "/.well-known/agent-card.json", site: true},
		{desc: "agent surfaces: llms.txt", method: "GET", path: "/llms.txt", site: true},
		{desc: "agent surfaces: robots.txt", method: "GET", path: "/robots.txt", site: true},
		{desc: "agent surfaces: auth.md", method: "GET", path: "/auth.md", site: true},
		{desc: "agent surfaces: developer portal", method: "GET", path: "/developers", site: true},
		{desc: "site: sitemap index", method: "GET", path: "/sitemap-index.xml", site: true},
		{desc: "site: news sitemap", method: "GET", path: "/news-sitemap.xml", site: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			item := m.Paths.PathItems.GetOrZero(tc.path)
			if item == nil {
				t.Fatalf("path %s is missing", tc.path)
			}
			if item.GetOperations().GetOrZero(strings.ToLower(tc.method)) == nil {
				t.Fatalf("%s %s is missing", tc.method, tc.path)
			}
			var servers []string
			for _, s := range item.Servers {
				servers = append(servers, s.URL)
			}
			want := []string(nil)
			if tc.site {
				want = []string{siteServer}
			}
			if !slices.Equal(servers, want) {
				t.Errorf("path servers are %v, want %v", servers, want)
			}
		})
	}
	var top []string
	for _, s := range m.Servers {
		top = append(top, s.URL)
	}
	if !slices.Equal(top, []string{apiServer}) {
		t.Errorf("servers are %v, want [%s]", top, apiServer)
	}
	for _, kind := range events.Kinds {
		if m.Webhooks.GetOrZero(kind) == nil || m.Webhooks.GetOrZero(kind).Post == nil {
			t.Errorf("webhooks.%s (the delivery, docs/decisions.md (delivery)) is missing", kind)
		}
	}
}

type operation struct {
	method, path string
	site         bool
	op           *v3.Operation
}

func operations(m *v3.Document) []operation {
	var ops []operation
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops = append(ops, operation{strings.ToUpper(method), path, len(item.Servers) > 0, op})
		}
	}
	return ops
}

// TestOperationRules checks the rules that hold for every operation.
func TestOperationRules(t *testing.T) {
	m := model(t)
	for _, o := range operations(m) {
		t.Run(o.method+" "+o.path, func(t *testing.T) {
			if o.op.OperationId == "" {
				t.Error("no operationId")
			}
			codes := map[string]*v3.Response{}
			for code, r := range o.op.Responses.Codes.FromOldest() {
				codes[code] = r
			}
			// docs/decisions.md (JSON errors): every error is the JSON Error shape.
			for code, r := range codes {
				if code[0] != '4' && code[0] != '5' {
					continue
				}
				mt := r.Content.GetOrZero("application/json")
				if mt == nil || r.Content.Len() != 1 {
					t.Errorf("%s must have exactly application/json content", code)
					continue
				}
				if ref := mt.Schema.GetReference(); ref != "#/components/schemas/Error" {
					t.Errorf("%s schema is %q, want the Error schema", code, ref)
				}
			}
			// Every operation can be rate limited (docs/decisions.md, rate limit) and fail (docs/decisions.md, JSON errors).
			for _, code := range []string{"429", "500"} {
				if codes[code] == nil {
					t.Errorf("no %s response", code)
				}
			}
			if codes["429"] != nil && codes["429"].Headers.GetOrZero("Retry-After") == nil {
				t.Error("429 without Retry-After")
			}
			if codes["401"] != nil && codes["401"].Headers.GetOrZero("WWW-Authenticate") == nil {
				t.Error("401 without WWW-Authenticate")
			}
			secured := len(o.op.Security) > 0
			if secured != (codes["401"] != nil) {
				t.Errorf("security %v but 401 documented: %v", secured, codes["401"] != nil)
			}
			// docs/decisions.md (cache headers): reads are cacheable and revalidate with If-None-Match.
			if o.method == http.MethodGet && !secured {
				if codes["304"] == nil {
					t.Error("a public read without 304")
				}
				if !hasParam(o.op, "If-None-Match") {
					t.Error("a public read without the If-None-Match parameter")
				}
				// RFC 9110 §13.1.1, §13.1.4: reads evaluate If-Match and
				// If-Unmodified-Since, and answer 412 when they are false.
				if codes["412"] == nil || !hasParam(o.op, "If-Match") || !hasParam(o.op, "If-Unmodified-Since") {
					t.Error("a public read without 412 and the If-Match and If-Unmodified-Since parameters")
				}
				if ok := codes["200"]; ok == nil || ok.Headers.GetOrZero("Cache-Control") == nil {
					t.Error("a public read whose 200 does not document Cache-Control")
				}
			}
			// docs/decisions.md (invalid query parameters)/docs/decisions.md (identifiers and links): a path or query parameter can be wrong; the read says how.
			if o.method == http.MethodGet {
				hasPath, hasQuery := false, false
				for _, p := range o.op.Parameters {
					hasPath = hasPath || p.In == "path"
					hasQuery = hasQuery || p.In == "query"
				}
				if hasQuery && codes["400"] == nil {
					t.Error("query parameters but no 400")
				}
				if hasPath && codes["404"] == nil && codes["401"] == nil {
					t.Error("path parameters but no 404")
				}
			}
			// docs/decisions.md (Idempotency-Key): Idempotency-Key on every POST under /api/v1.
			if o.method == http.MethodPost && !o.site {
				p := param(o.op, "Idempotency-Key")
				if p == nil {
					t.Error("a POST under /api/v1 without Idempotency-Key")
				} else if s := p.Schema.Schema(); s.MaxLength == nil || *s.MaxLength != 255 {
					t.Error("Idempotency-Key without maxLength 255")
				}
				for _, code := range []string{"409", "422"} {
					if codes[code] == nil {
						t.Errorf("a POST under /api/v1 without %s (idempotency, docs/decisions.md (Idempotency-Key))", code)
					}
				}
			}
			// Rate-limit headers on every documented answer (docs/decisions.md, rate limit).
			for code, r := range codes {
				for _, h := range []string{"RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
					if code != "202" && r.Headers.GetOrZero(h) == nil {
						t.Errorf("%s does not document %s", code, h)
					}
				}
			}
		})
	}
}

func param(op *v3.Operation, name string) *v3.Parameter {
	for _, p := range op.Parameters {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func hasParam(op *v3.Operation, name string) bool { return param(op, name) != nil }

func enumOf(s *base.Schema) []string {
	var out []string
	for _, n := range s.Enum {
		out = append(out, n.Value)
	}
	return out
}

// TestEnumsMatchTheCode ties the document's enums to the lists the service
// itself enforces, so one cannot change without the other.
func TestEnumsMatchTheCode(t *testing.T) {
	m := model(t)
	schema := func(name string) *base.Schema {
		sp := m.Components.Schemas.GetOrZero(name)
		if sp == nil {
			t.Fatalf("schema %s is missing", name)
		}
		return sp.Schema()
	}
	var codes []string
	for _, status := range []int{400, 401, 403, 404, 405, 408, 409, 410, 412, 413, 415, 422, 429, 500, 503} {
		codes = append(codes, apierror.CodeFor(status))
	}
	testCases := []struct {
		desc   string
		schema string
		want   []string
	}{
		{desc: "sections", schema: "Section", want: content.Sections},
		{desc: "audiences", schema: "Audience", want: content.Audiences},
		{desc: "vocabularies: mandate_status", schema: "MandateStatus", want: content.MandateStatuses},
		{desc: "vocabularies: trust_tier", schema: "TrustTier", want: content.TrustTiers},
		{desc: "event kinds", schema: "EventKind", want: events.Kinds},
		{desc: "JSON errors: error codes", schema: "ErrorCode", want: codes},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got := enumOf(schema(tc.schema))
			a, b := slices.Clone(got), slices.Clone(tc.want)
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Errorf("enum %v, the code has %v", got, tc.want)
			}
		})
	}
}

// TestErrorCodeStatuses ties ErrorCode's description to apierror.CodeFor:
// each status the service answers with a JSON error is named in the part
// of the description that belongs to its code, the statuses outside the
// contract's table (414, 431, 501, 505, 502, 504) included.
func TestErrorCodeStatuses(t *testing.T) {
	sp := model(t).Components.Schemas.GetOrZero("ErrorCode")
	if sp == nil {
		t.Fatal("schema ErrorCode is missing")
	}
	s := sp.Schema()
	desc := s.Description
	// Each code's part runs from its name in backquotes to the next code's.
	var starts []int
	at := map[string]int{}
	for _, code := range enumOf(s) {
		i := strings.Index(desc, "`"+code+"`")
		if i < 0 {
			t.Fatalf("the description does not name %s", code)
		}
		starts = append(starts, i)
		at[code] = i
	}
	slices.Sort(starts)
	part := func(code string) string {
		i := at[code]
		j, _ := slices.BinarySearch(starts, i)
		if j+1 < len(starts) {
			return desc[i:starts[j+1]]
		}
		return desc[i:]
	}
	for _, status := range []int{400, 401, 403, 404, 405, 408, 409, 410, 412, 413, 414, 415, 422, 429, 431, 500, 501, 502, 503, 504, 505} {
		code := apierror.CodeFor(status)
		if p := part(code); !strings.Contains(p, strconv.Itoa(status)) {
			t.Errorf("status %d has code %s, whose part of the description does not name it: %q", status, code, p)
		}
	}
}

// TestParameterBounds pins the limits of the contract and docs/decisions.md (pagination)/docs/decisions.md (identifiers and links)/docs/decisions.md (Idempotency-Key).
func TestParameterBounds(t *testing.T) {
	m := model(t)
	p := func(name string) *base.Schema {
		pp := m.Components.Parameters.GetOrZero(name)
		if pp == nil {
			t.Fatalf("parameter %s is missing", name)
		}
		return pp.Schema.Schema()
	}
	f := func(v *float64) float64 {
		if v == nil {
			return -1
		}
		return *v
	}
	i := func(v *int64) int64 {
		if v == nil {
			return -1
		}
		return *v
	}
	testCases := []struct {
		desc string
		got  any
		want any
	}{
		{desc: "limit minimum", got: f(p("Limit").Minimum), want: 1.0},
		{desc: "limit maximum", got: f(p("Limit").Maximum), want: 100.0},
		{desc: "limit default", got: p("Limit").Default.Value, want: "25"},
		{desc: "offset minimum", got: f(p("Offset").Minimum), want: 0.0},
		{desc: "offset maximum", got: f(p("Offset").Maximum), want: 10000.0},
		{desc: "country filter", got: p("CountryFilter").Pattern, want: "^[a-z]{2}$"},
		{desc: "country path code, either case (docs/decisions.md, identifiers and links)", got: p("CountryCodePath").Pattern, want: "^[A-Za-z]{2}$"},
		{desc: "Idempotency-Key length", got: i(p("IdempotencyKey").MaxLength), want: int64(255)},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

// TestJSONRPCMessageSchema holds the /mcp request body's schema to JSON-RPC
// 2.0 (sections 4, 4.1 and 5): each message is exactly one of a request, a
// notification and a response, so a client generated from the document
// cannot build a message the server refuses as an Invalid Request.
func TestJSONRPCMessageSchema(t *testing.T) {
	s := model(t).Components.Schemas.GetOrZero("JSONRPCMessage").Schema()
	v := schema_validation.NewSchemaValidator()
	testCases := []struct {
		desc  string
		msg   string
		valid bool
	}{
		{desc: "request", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, valid: true},
		{desc: "request with a string id", msg: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, valid: true},
		{desc: "notification", msg: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, valid: true},
		{desc: "result response", msg: `{"jsonrpc":"2.0","id":7,"result":{}}`, valid: true},
		{desc: "error response", msg: `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`, valid: true},
		{desc: "error response to an unreadable id", msg: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, valid: true},
		{desc: "neither method nor result nor error", msg: `{"jsonrpc":"2.0","id":7}`},
		{desc: "request and result at once", msg: `{"jsonrpc":"2.0","id":7,"method":"tools/list","result":{}}`},
		{desc: "notification with an error", msg: `{"jsonrpc":"2.0","method":"x","error":{"code":1,"message":"m"}}`},
		{desc: "result and error at once", msg: `{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}`},
		{desc: "request with a null id", msg: `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
		{desc: "error without its message", msg: `{"jsonrpc":"2.0","id":7,"error":{"code":1}}`},
		{desc: "request with the largest exact integer id", msg: `{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`, valid: true},
		{desc: "request with a fractional id", msg: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
		{desc: "request with an id past 2^53-1", msg: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`},
		{desc: "another protocol version", msg: `{"jsonrpc":"1.0","id":1,"method":"ping"}`},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			ok, errs := v.ValidateSchemaString(s, tc.msg)
			if ok != tc.valid {
				t.Fatalf("valid = %v, want %v (%v)", ok, tc.valid, errs)
			}
		})
	}
}

// TestEveryComponentIsReferenced fails on a component (schema, response,
// parameter, header, security scheme…) that nothing outside components
// reaches, directly or through other components. OpenAPI 3.1 §4.8.7: a
// component has no effect on the API unless it is referenced, so one that
// is not documents nothing, however much it says. A $ref in an extension
// counts (x-sse-events names the schemas of the /ask stream's events);
// a security scheme is referenced by its name in a security requirement.
func TestEveryComponentIsReferenced(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatalf("decoding openapi.json: %v", err)
	}
	components, _ := doc["components"].(map[string]any)
	reached := map[string]bool{}
	var queue []string
	// walk records every component v refers to, at any depth.
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if name, ok := strings.CutPrefix(ref, "#/components/"); ok && !reached[name] {
					reached[name] = true
					queue = append(queue, name)
				}
			}
			for k, e := range v {
				walk(k, e)
			}
		case []any:
			for _, e := range v {
				if req, ok := e.(map[string]any); ok && key == "security" {
					for scheme := range req {
						reached["securitySchemes/"+scheme] = true
					}
					continue
				}
				walk(key, e)
			}
		}
	}
	for k, v := range doc {
		if k != "components" {
			walk(k, v)
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		kind, n, _ := strings.Cut(name, "/")
		set, _ := components[kind].(map[string]any)
		c, ok := set[n]
		if !ok {
			t.Errorf("#/components/%s is referenced but not defined", name)
			continue
		}
		walk(n, c)
	}
	var unused []string
	for kind, set := range components {
		set, _ := set.(map[string]any)
		for n := range set {
			if !reached[kind+"/"+n] {
				unused = append(unused, "#/components/"+kind+"/"+n)
			}
		}
	}
	slices.Sort(unused)
	for _, u := range unused {
		t.Errorf("%s is defined but nothing outside components references it", u)
	}
}

// TestRequestBodiesHaveNoDefaults keeps `default` out of the schemas of the
// operations' request bodies. openapi-typescript run with its defaults
// (defaultNonNullable) makes a property with a default required, so every
// client generated that way had to send what the service does not ask for:
// `test` on POST /webhooks, `locale` on POST /ask. Such a property says its
// default in its description instead. Parameters are not concerned (the
// generator leaves them optional), nor responses, whose defaults the
// service fills in.
func TestRequestBodiesHaveNoDefaults(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatalf("decoding openapi.json: %v", err)
	}
	resolve := func(ref string) any {
		var v any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := v.(map[string]any)
			v = m[part]
		}
		return v
	}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		item, _ := item.(map[string]any)
		for method, op := range item {
			op, ok := op.(map[string]any)
			if !ok || op["requestBody"] == nil {
				continue
			}
			seen := map[string]bool{}
			var walk func(at, key string, v any)
			walk = func(at, key string, v any) {
				switch v := v.(type) {
				case map[string]any:
					if ref, ok := v["$ref"].(string); ok {
						if !seen[ref] {
							seen[ref] = true
							walk(ref, "", resolve(ref))
						}
						return
					}
					if _, ok := v["default"]; ok && key != "properties" {
						t.Errorf("%s %s: %s has a default", strings.ToUpper(method), path, at)
					}
					for k, e := range v {
						if key != "properties" && (k == "example" || k == "examples") {
							continue // data, not schema
						}
						walk(at+"/"+k, k, e)
					}
				case []any:
					for i, e := range v {
						walk(at+"/"+strconv.Itoa(i), key, e)
					}
				}
			}
			walk("requestBody", "", op["requestBody"])
		}
	}
}
