// Package contract checks real HTTP exchanges against Invoicewire's OpenAPI
// document (origin/openapi/openapi.json) in tests, so that a response that
// drifts from the document fails the build (docs/architecture.md).
//
// A test builds its request with http.NewRequest (so the body can be read
// again), sends it through the real stack, reads the whole response body and
// hands all three to Checker.Check:
//
//	c := contract.New(t)
//	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/articles?limit=2", nil)
//	resp, _ := srv.Client().Do(req)
//	body, _ := io.ReadAll(resp.Body)
//	c.Check(t, req, resp, body)
//
// Check validates with github.com/pb33f/libopenapi-validator (request and
// response: status, media type, body schema, parameters, required headers)
// and adds what the library leaves out:
//
//   - the server base path: a request under /api/v1 is matched against the
//     paths of the default server ({base_url}) only, with one trailing slash
//     read as none, as the router does (docs/decisions.md, trailing slash on
//     API paths); any other request only against the paths that declare the
//     {site_root} server. The library strips /api/v1 and then tries every
//     path, so /api/v1/webhooks/subscriptions/x/ would pass for the article
//     page /{year}/{month}/{slug}/ and /articles at the site root for
//     /api/v1/articles;
//   - a request whose Content-Type is not a type/subtype pair is one the
//     document rejects (the library would panic on it, see mediaTypeless);
//   - a request the document calls invalid must not succeed;
//   - every documented header that is present is checked against its schema,
//     required or not (the library only checks required ones);
//   - an error body's code matches its status (docs/decisions.md, JSON errors);
//   - a 304 has no body;
//   - a text/event-stream answer is parsed and each event's data validated
//     against the schema the media type's x-sse-events names, in order;
//   - a method or path the document has no operation for must answer the
//     JSON 404 or 401 (with the Bearer challenge) that components/responses
//     describe, or the 405 with Allow that info.description describes (no
//     operation answers it for its own method), and OPTIONS the CORS
//     preflight.
package contract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/origin/openapi"
)

// APIBase is the path of {base_url} below {site_root} (the contract).
const APIBase = "/api/v1"

// Checker validates exchanges against one parsed document. It is safe for
// concurrent use by parallel tests.
type Checker struct {
	model     *v3.Document
	validator validator.Validator
	options   *config.ValidationOptions
	// api and site are the document with only the paths of one server
	// each: those of {base_url} (the document's own server) and those that
	// declare {site_root}. Requests are matched against one of them only.
	api, site *v3.Document
	schemas   schema_validation.SchemaValidator
	// sse maps "METHOD path" to the event name → data schema table of the
	// operation's text/event-stream answer (its x-sse-events extension).
	sse map[string]map[string]*base.Schema
}

var (
	shared     *Checker
	sharedErr  error
	sharedOnce sync.Once
)

// New returns the Checker for the embedded document, building it once per
// test binary (parsing and compiling every schema takes a moment). It fails
// t if the document cannot be built.
func New(t testing.TB) *Checker {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = NewFromDocument(openapi.Document) })
	if sharedErr != nil {
		t.Fatalf("contract: %v", sharedErr)
	}
	return shared
}

// NewFromDocument builds a Checker for any OpenAPI 3.1 document; tests of the
// checker itself use it with small documents.
func NewFromDocument(spec []byte) (*Checker, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI 3 model: %w", err)
	}
	opts := []config.Option{config.WithURLEncodedBodyValidation()}
	v := validator.NewValidatorFromV3Model(&m.Model, opts...)
	c := &Checker{
		model:     &m.Model,
		validator: v,
		options:   config.NewValidationOptions(opts...),
		schemas:   schema_validation.NewSchemaValidator(),
	}
	c.api, c.site = splitByServer(&m.Model)
	if c.sse, err = sseSchemas(spec, &m.Model); err != nil {
		return nil, err
	}
	return c, nil
}

// splitByServer returns two shallow copies of m: one with the paths of the
// document's own server ({base_url}), one with the paths that declare a
// server of their own ({site_root}). The site copy has no document servers,
// so nothing is stripped from a site request's path before matching.
func splitByServer(m *v3.Document) (api, site *v3.Document) {
	apiDoc, siteDoc := *m, *m
	apiPaths, sitePaths := orderedmap.New[string, *v3.PathItem](), orderedmap.New[string, *v3.PathItem]()
	for key, item := range m.Paths.PathItems.FromOldest() {
		if len(item.Servers) > 0 {
			sitePaths.Set(key, item)
		} else {
			apiPaths.Set(key, item)
		}
	}
	apiDoc.Paths = &v3.Paths{PathItems: apiPaths, Extensions: m.Paths.Extensions}
	siteDoc.Paths = &v3.Paths{PathItems: sitePaths, Extensions: m.Paths.Extensions}
	siteDoc.Servers = nil
	return &apiDoc, &siteDoc
}

// findPath matches req against the paths of the one server its path falls
// under. Under the API prefix one trailing slash is read as none, as the
// router does (docs/decisions.md, trailing slash on API paths): req's path
// is trimmed in place, so the validator sees the path that was matched.
// The path is read as sent (escaped), as the router reads it
// (docs/decisions.md, "One address per resource"): "/sources%2F" is not
// "/sources/", and "/api%2Fv1/…" is not under the API.
func (c *Checker) findPath(req *http.Request) (item *v3.PathItem, errs []*verrors.ValidationError, key string, underAPI bool) {
	p := req.URL.EscapedPath()
	underAPI = p == APIBase || strings.HasPrefix(p, APIBase+"/")
	if !underAPI {
		item, errs, key = paths.FindPath(req, c.site, c.options)
		return item, errs, key, false
	}
	if len(p) > len(APIBase)+1 && strings.HasSuffix(p, "/") {
		req.URL.Path = strings.TrimSuffix(req.URL.Path, "/")
		req.URL.RawPath = strings.TrimSuffix(p, "/")
	}
	item, errs, key = paths.FindPath(req, c.api, c.options)
	return item, errs, key, true
}

// sseSchemas reads the x-sse-events extensions of every text/event-stream
// media type from the raw document: extensions are not resolved by the
// model, and their values are plain component references.
func sseSchemas(spec []byte, m *v3.Document) (map[string]map[string]*base.Schema, error) {
	var raw struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(spec, &raw); err != nil {
		return nil, fmt.Errorf("reading x-sse-events: %w", err)
	}
	out := map[string]map[string]*base.Schema{}
	for path, item := range raw.Paths {
		for method, opRaw := range item {
			var op struct {
				Responses map[string]struct {
					Content map[string]struct {
						Events map[string]struct {
							Ref string `json:"$ref"`
						} `json:"x-sse-events"`
					} `json:"content"`
				} `json:"responses"`
			}
			if json.Unmarshal(opRaw, &op) != nil {
				continue // "servers", "parameters": not operations
			}
			for _, resp := range op.Responses {
				events := resp.Content["text/event-stream"].Events
				if len(events) == 0 {
					continue
				}
				table := map[string]*base.Schema{}
				for name, ev := range events {
					const prefix = "#/components/schemas/"
					if !strings.HasPrefix(ev.Ref, prefix) {
						return nil, fmt.Errorf("x-sse-events of %s %s: event %q must $ref a component schema", method, path, name)
					}
					sp := m.Components.Schemas.GetOrZero(strings.TrimPrefix(ev.Ref, prefix))
					if sp == nil {
						return nil, fmt.Errorf("x-sse-events of %s %s: %s does not exist", method, path, ev.Ref)
					}
					table[name] = sp.Schema()
				}
				out[strings.ToUpper(method)+" "+path] = table
			}
		}
	}
	return out, nil
}

// Check validates one exchange: req as sent (built with http.NewRequest so
// GetBody can replay its body), resp as received, and body, the whole
// response body the caller read. Every problem is reported on t with
// t.Errorf, so one call lists all of them.
func (c *Checker) Check(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	for _, p := range c.Problems(req, resp, body) {
		t.Errorf("contract: %s %s → %d: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, p)
	}
}

// Problems is Check without a testing.TB: it returns each contract violation
// as a sentence, or nothing when the exchange conforms.
func (c *Checker) Problems(req *http.Request, resp *http.Response, body []byte) []string {
	var probs []string
	addf := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }

	vreq, err := replayable(req)
	if err != nil {
		return []string{err.Error()}
	}
	if resp.StatusCode == http.StatusNotModified && len(body) > 0 {
		addf("a 304 must not have a body, got %d bytes", len(body))
	}
	if resp.StatusCode >= 400 {
		probs = append(probs, c.errorBodyProblems(resp, body)...)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified {
		probs = append(probs, offSite(req, resp)...)
	}

	pathItem, findErrs, pathKey, underAPI := c.findPath(vreq)
	var op *v3.Operation
	if pathItem != nil && len(findErrs) == 0 {
		op = operationFor(pathItem, vreq.Method)
	}
	if op == nil {
		// No operation: only the generic answers of the service may come back.
		return append(probs, c.undocumentedProblems(vreq, resp, body, pathItem != nil, underAPI)...)
	}

	// The request: one the document rejects must not be accepted.
	if ct, bad := mediaTypeless(vreq, op); bad {
		if resp.StatusCode < 400 {
			addf("the document rejects this request (Content-Type %q is not a media type) but the service answered %d", ct, resp.StatusCode)
		}
	} else if ok, errs := c.validator.ValidateHttpRequestWithPathItem(vreq, pathItem, pathKey); !ok && resp.StatusCode < 400 {
		addf("the document rejects this request (%s) but the service answered %d", joinErrors(errs), resp.StatusCode)
	}

	code := strconv.Itoa(resp.StatusCode)
	documented := op.Responses.Codes.GetOrZero(code)
	if documented == nil {
		documented = op.Responses.Codes.GetOrZero(fmt.Sprintf("%dXX", resp.StatusCode/100))
	}
	if documented == nil {
		return append(probs, fmt.Sprintf("status %d is not documented for %s %s", resp.StatusCode, vreq.Method, pathKey))
	}
	probs = append(probs, c.headerProblems(resp, documented)...)

	if vreq.Method == http.MethodHead {
		if len(body) > 0 {
			addf("a HEAD answer must not have a body")
		}
		return probs
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		probs = append(probs, c.streamProblems(vreq.Method+" "+pathKey, resp, documented, body)...)
		return probs
	}
	if documented.Content == nil || documented.Content.Len() == 0 {
		if len(body) > 0 && resp.StatusCode != http.StatusNotModified {
			addf("status %d is documented without a body, got %d bytes", resp.StatusCode, len(body))
		}
	}
	vresp := *resp
	vresp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := c.validator.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(vreq, &vresp, pathItem, pathKey); !ok {
		addf("response: %s", joinErrors(errs))
	}
	return probs
}

// replayable returns a copy of req whose body can be read by the validator,
// without the URL's fragment, which a client never sends (RFC 9110 §7.1)
// and the library would append to the path it matches.
func replayable(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	r.URL.Fragment, r.URL.RawFragment = "", ""
	if req.Body == nil || req.Body == http.NoBody {
		r.Body = http.NoBody
		return r, nil
	}
	if req.GetBody == nil {
		return nil, fmt.Errorf("the request body cannot be read again: build the request with http.NewRequest and a bytes.Reader or strings.Reader body")
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("re-reading the request body: %w", err)
	}
	r.Body = b
	return r, nil
}

// mediaTypeless reports the Content-Type of a request to an operation that
// takes a body when that header is present but names no type/subtype pair
// ("application", "", "a;b"): no media type of the document matches it, so
// the document rejects the request. The checker decides this itself because
// libopenapi-validator v0.13 splits the media type at "/" without looking
// and indexes the second half, in a goroutine of its own, where the panic
// cannot be recovered and ends the whole test binary (a fuzz worker dies
// with "EOF"); v0.16 checks the split.
func mediaTypeless(req *http.Request, op *v3.Operation) (string, bool) {
	ct := req.Header.Get("Content-Type")
	if op.RequestBody == nil || ct == "" {
		return "", false // no body to judge, or the library's own "missing"
	}
	mt, _, _ := mime.ParseMediaType(ct)
	typ, sub, ok := strings.Cut(mt, "/")
	return ct, !ok || typ == "" || sub == ""
}

func operationFor(item *v3.PathItem, method string) *v3.Operation {
	switch method {
	case http.MethodGet, http.MethodHead:
		// HEAD answers as GET without a body (RFC 9110 §9.3.2).
		return item.Get
	case http.MethodPost:
		return item.Post
	case http.MethodPut:
		return item.Put
	case http.MethodPatch:
		return item.Patch
	case http.MethodDelete:
		return item.Delete
	case http.MethodOptions:
		return item.Options
	}
	return nil
}

// errorBodyProblems checks docs/decisions.md (JSON errors) on any 4xx/5xx: JSON, the Error schema,
// and the code that goes with the status.
func (c *Checker) errorBodyProblems(resp *http.Response, body []byte) []string {
	var probs []string
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" {
		return []string{fmt.Sprintf("an error must be application/json, got Content-Type %q", resp.Header.Get("Content-Type"))}
	}
	if ok, errs := c.schemas.ValidateSchemaBytes(c.component("Error"), body); !ok {
		probs = append(probs, "error body: "+joinErrors(errs))
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		// The service's own table (docs/decisions.md, JSON errors); a 4xx
		// status it has no code of its own for is not judged.
		want := apierror.CodeFor(resp.StatusCode)
		if resp.StatusCode < 500 && apierror.StatusFor(want) != resp.StatusCode {
			want = ""
		}
		if want != "" && e.Error.Code != want {
			probs = append(probs, fmt.Sprintf("error code %q does not go with status %d (want %q, docs/decisions.md: JSON errors)", e.Error.Code, resp.StatusCode, want))
		}
	}
	return probs
}

func (c *Checker) component(name string) *base.Schema {
	return c.model.Components.Schemas.GetOrZero(name).Schema()
}

// undocumentedProblems judges an answer for which the document has no
// operation: an unknown path (404), a method the path lacks (405 with Allow,
// or 401 for a write under /api/v1 without a valid token, docs/decisions.md (bearer tokens)), or a
// CORS preflight (204).
func (c *Checker) undocumentedProblems(req *http.Request, resp *http.Response, body []byte, pathKnown, underAPI bool) []string {
	if req.Method == http.MethodOptions {
		var probs []string
		if resp.StatusCode != http.StatusNoContent {
			probs = append(probs, fmt.Sprintf("a preflight must answer 204, got %d", resp.StatusCode))
		}
		if resp.Header.Get("Access-Control-Allow-Origin") == "" {
			probs = append(probs, "a preflight must carry Access-Control-Allow-Origin")
		}
		return probs
	}
	// A 405 has no component of its own: an operation's responses are
	// those of its method, so the document describes the 405 in
	// info.description and it is held to the headers every error carries
	// (NotFound's) and to Allow (methodNotAllowedProblems).
	allowed := map[int]string{http.StatusNotFound: "NotFound", http.StatusTooManyRequests: "RateLimited",
		http.StatusServiceUnavailable: "Unavailable", http.StatusInternalServerError: "Internal"}
	if pathKnown {
		allowed[http.StatusMethodNotAllowed] = "NotFound"
	}
	write := req.Method != http.MethodGet && req.Method != http.MethodHead
	if !write {
		// Another spelling of an address, or a page's other form, which
		// no path template names (docs/decisions.md, "One address per
		// resource").
		allowed[http.StatusMovedPermanently] = "Redirect"
	}
	if write && underAPI {
		allowed[http.StatusUnauthorized] = "Unauthorized"
		allowed[http.StatusMethodNotAllowed] = "NotFound"
	}
	name, ok := allowed[resp.StatusCode]
	if !ok {
		what := "an unknown path"
		if pathKnown {
			what = "a method the path does not document"
		}
		return []string{fmt.Sprintf("%s may only answer the generic errors (404, 405, 401 for writes under %s) or a 301 to a GET, got %d", what, APIBase, resp.StatusCode)}
	}
	r := c.model.Components.Responses.GetOrZero(name)
	if r == nil {
		return []string{fmt.Sprintf("components/responses/%s is missing from the document", name)}
	}
	// An error's body was checked by errorBodyProblems already; a
	// redirect's is checked here, and the headers of both.
	probs := c.headerProblems(resp, r)
	if resp.StatusCode == http.StatusMethodNotAllowed {
		probs = append(probs, methodNotAllowedProblems(resp)...)
	}
	if mt := r.Content.GetOrZero("application/json"); resp.StatusCode < 400 && mt != nil && req.Method != http.MethodHead {
		if ok, errs := c.schemas.ValidateSchemaBytes(mt.Schema.Schema(), body); !ok {
			probs = append(probs, "redirect body: "+joinErrors(errs))
		}
	}
	return probs
}

// allowList is the form the service writes Allow in: methods, upper case,
// separated by a comma and at most one space (RFC 9110 §10.2.1, §5.6.1).
var allowList = regexp.MustCompile(`^[A-Z]+(, ?[A-Z]+)*$`)

// methodNotAllowedProblems checks what a 405 carries beyond any error's
// headers: Allow, which RFC 9110 §15.5.6 requires of it, listing the
// methods the resource answers.
func methodNotAllowedProblems(resp *http.Response) []string {
	allow := resp.Header.Values("Allow")
	switch {
	case len(allow) == 0:
		return []string{"a 405 without the Allow header RFC 9110 §15.5.6 requires"}
	case len(allow) > 1 || !allowList.MatchString(allow[0]):
		return []string{fmt.Sprintf("header Allow: %q is not a list of methods", strings.Join(allow, ", "))}
	}
	return nil
}

// offSite checks a redirect stays on the site that answered it: its
// Location is absolute, on the request's own scheme and host, and its path
// starts with one slash, so no client reads it as another host
// (docs/decisions.md, "One address per resource").
func offSite(req *http.Request, resp *http.Response) []string {
	loc := resp.Header.Get("Location")
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != req.URL.Scheme || u.Host != req.URL.Host || !strings.HasPrefix(u.EscapedPath(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
		return []string{fmt.Sprintf("the redirect's Location %q is not a path on %s://%s", loc, req.URL.Scheme, req.URL.Host)}
	}
	return nil
}

// headerProblems checks the documented headers of one response: required ones
// must be present, and every present one must match its schema.
func (c *Checker) headerProblems(resp *http.Response, documented *v3.Response) []string {
	var probs []string
	if documented.Headers == nil {
		return nil
	}
	for name, h := range documented.Headers.FromOldest() {
		if strings.EqualFold(name, "Content-Type") {
			continue // OpenAPI 3.1 §4.8.17.1: ignored as a header
		}
		values := resp.Header.Values(name)
		if len(values) == 0 {
			if h.Required {
				probs = append(probs, fmt.Sprintf("required header %s is missing", name))
			}
			continue
		}
		if h.Schema == nil {
			continue
		}
		s := h.Schema.Schema()
		for _, v := range values {
			var instance any = v
			if slicesContain(s.Type, "integer") {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					probs = append(probs, fmt.Sprintf("header %s: %q is not an integer", name, v))
					continue
				}
				instance = n
			}
			if ok, errs := c.schemas.ValidateSchemaObject(s, instance); !ok {
				probs = append(probs, fmt.Sprintf("header %s: %q: %s", name, v, joinErrors(errs)))
			}
		}
	}
	return probs
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// streamProblems parses a server-sent event stream (WHATWG HTML §9.2) and
// validates each event's data against the operation's x-sse-events table; the
// stream must begin with "start" and end with "complete" (docs/decisions.md, ask).
func (c *Checker) streamProblems(opKey string, resp *http.Response, documented *v3.Response, body []byte) []string {
	if documented.Content == nil || documented.Content.GetOrZero("text/event-stream") == nil {
		return []string{"text/event-stream is not a documented media type of this answer"}
	}
	table := c.sse[opKey]
	if table == nil {
		return []string{"the text/event-stream answer of " + opKey + " has no x-sse-events schemas"}
	}
	events, err := ParseEvents(body)
	if err != nil {
		return []string{err.Error()}
	}
	var probs []string
	if len(events) == 0 {
		return []string{"the event stream is empty"}
	}
	if events[0].Name != "start" {
		probs = append(probs, fmt.Sprintf("the first event is %q, want start", events[0].Name))
	}
	if last := events[len(events)-1].Name; last != "complete" {
		probs = append(probs, fmt.Sprintf("the last event is %q, want complete", last))
	}
	for i, ev := range events {
		s, ok := table[ev.Name]
		if !ok {
			probs = append(probs, fmt.Sprintf("event %d: %q is not a documented event", i, ev.Name))
			continue
		}
		if ok, errs := c.schemas.ValidateSchemaString(s, ev.Data); !ok {
			probs = append(probs, fmt.Sprintf("event %d (%s): %s", i, ev.Name, joinErrors(errs)))
		}
	}
	return probs
}

// Event is one server-sent event.
type Event struct {
	// Name is the event field ("message" when absent).
	Name string
	// Data is the data lines joined by "\n".
	Data string
}

// ParseEvents splits a complete text/event-stream body into its events
// (WHATWG HTML §9.2.6): fields up to a blank line make one event; comment
// lines (":") are skipped.
func ParseEvents(body []byte) ([]Event, error) {
	var events []Event
	var name string
	var data []string
	dispatch := func() {
		if data != nil {
			if name == "" {
				name = "message"
			}
			events = append(events, Event{Name: name, Data: strings.Join(data, "\n")})
		}
		name, data = "", nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64*1024), 8<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			dispatch()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the event stream: %w", err)
	}
	dispatch()
	return events, nil
}

func joinErrors(errs []*verrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" && e.Reason != e.Message {
			s += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			loc := f.FieldPath
			if loc == "" {
				loc = strings.Join(f.InstancePath, "/")
			}
			s += fmt.Sprintf(" [%s: %s]", loc, f.Reason)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
