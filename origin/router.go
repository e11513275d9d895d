package origin

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/invoicewire/invoicewire/origin/respond"
)

// route is one entry of the origin's routing table. Patterns are literal
// segments and {name} wildcards matching one non-empty segment; a pattern
// ending in "/" matches only paths that end in "/".
//
// http.ServeMux is not used because it answers unknown paths, wrong methods
// and unclean paths itself, with plain-text or HTML bodies and redirects; the
// contract wants JSON for every one of those (docs/decisions.md, JSON errors).
type route struct {
	pattern  string
	segments []string
	// methods maps a method to its handler. GET answers HEAD too, and GET
	// answers go through the response cache.
	methods map[string]respond.Handler
	// raw, when set, answers every method itself, writing to the
	// ResponseWriter: for streams (server-sent events) and for mounted
	// protocol handlers (MCP). It bypasses the response cache.
	raw   *respond.Mount
	allow []string // the Allow header of a 405
	// credential, when set, accepts a bearer token of the route's own in
	// place of an access token: a method the route does not take is then
	// a 405 for its holder, not a 401 (docs/decisions.md, bearer tokens).
	credential func(*http.Request) error
}

type router struct {
	routes []*route
}

func (rt *router) route(pattern string) *route {
	for _, r := range rt.routes {
		if r.pattern == pattern {
			return r
		}
	}
	r := &route{pattern: pattern, segments: strings.Split(pattern, "/")[1:], methods: map[string]respond.Handler{}}
	rt.routes = append(rt.routes, r)
	return r
}

// get registers a cacheable GET (and HEAD) handler.
func (rt *router) get(pattern string, h respond.Handler) { rt.handle(http.MethodGet, pattern, h) }

// handle registers h for method on pattern.
func (rt *router) handle(method, pattern string, h respond.Handler) {
	r := rt.route(pattern)
	r.methods[method] = h
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if r.methods[m] != nil || (m == http.MethodHead && r.methods[http.MethodGet] != nil) {
			allow = append(allow, m)
		}
	}
	r.allow = []string{strings.Join(append(allow, http.MethodOptions), ", ")}
}

// mount registers a handler that writes its own answer for every method of
// pattern; respond.Mount adds the shared headers, the preflight and the 405.
func (rt *router) mount(pattern string, m respond.Mount) { rt.route(pattern).raw = &m }

// credential sets the route's own kind of bearer token (route.credential).
func (rt *router) credential(pattern string, check func(*http.Request) error) {
	rt.route(pattern).credential = check
}

// handler returns the route's handler for method, or nil.
func (r *route) handler(method string) respond.Handler {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	return r.methods[method]
}

// otherForm returns the escaped, canonical path p with its trailing slash
// added or removed: pages are published at one of the two
// (/countries/de/, /developers), and a reader who types the other is sent
// there rather than told nothing is there (docs/decisions.md, site pages at
// the other form of their address). API paths answer either form without
// a redirect, and a path they do not answer is no API address, so they
// have no other form; nor has the root.
func otherForm(p string) (string, bool) {
	if p == "/" || strings.HasPrefix(p, "/api/") {
		return "", false
	}
	if strings.HasSuffix(p, "/") {
		return strings.TrimSuffix(p, "/"), true
	}
	return p + "/", true
}

// answer is what the GET handler of an address gave for a request.
type answer struct {
	resp *respond.Response
	err  error
}

// probe runs the GET handler of the escaped, canonical path p for r (its
// query and fields), to learn whether a redirect there would lead anywhere:
// a redirect to an unknown country would only move the 404 one request
// further (docs/decisions.md, site pages at the other form of their
// address). found is false when p is no route's or its route takes no GET.
func (rt *router) probe(r *http.Request, p string) (a answer, found bool) {
	u, err := url.Parse(p)
	if err != nil {
		return answer{}, false
	}
	u.RawQuery = r.URL.RawQuery
	o := r.Clone(r.Context())
	o.URL, o.Method, o.RequestURI = u, http.MethodGet, u.RequestURI()
	rte := rt.match(o, p)
	if rte == nil {
		return answer{}, false
	}
	get := rte.handler(http.MethodGet)
	if get == nil {
		return answer{}, false
	}
	a.resp, a.err = get(o)
	return a, true
}

// match finds the route for the escaped, canonical path p (canonicalPath)
// and sets its wildcards on r as path values, each segment decoded on its
// own: the path is split at its slashes as sent, so a segment's value
// never holds a "/" (RFC 3986 §2.2; canonicalPath refuses "%2F" anyway).
func (rt *router) match(r *http.Request, p string) *route {
	if len(p) > 1 && strings.HasPrefix(p, "/api/v1/") && strings.HasSuffix(p, "/") {
		// API paths have no trailing slash; accept one rather than 404.
		p = strings.TrimSuffix(p, "/")
	}
	if p == "/api/v1" {
		p = "/api/v1/"
	}
	segs := strings.Split(p, "/")[1:]
	for _, rte := range rt.routes {
		if len(rte.segments) != len(segs) {
			continue
		}
		ok := true
		for i, p := range rte.segments {
			if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
				if segs[i] == "" {
					ok = false
					break
				}
				continue
			}
			if p != segs[i] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for i, p := range rte.segments {
			if strings.HasPrefix(p, "{") {
				v, err := url.PathUnescape(segs[i])
				if err != nil {
					return nil
				}
				r.SetPathValue(p[1:len(p)-1], v)
			}
		}
		return rte
	}
	return nil
}
