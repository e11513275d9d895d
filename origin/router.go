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

// slashed returns r's path (escaped) with its trailing slash added or
// removed, when r's own path is no route's and the other form is: pages are
// published at one of the two (/countries/de/, /developers), and a reader
// who types the other is sent there rather than told nothing is there.
// The other form must answer a GET itself, so its handler is run: a
// redirect to an unknown country or to "/countries/de.md/" would only move
// the 404 or 400 one request further (docs/decisions.md, trailing
// slashes). API paths answer either form without a redirect, and a path
// they do not answer (one slash too many) is no API address.
func (rt *router) slashed(r *http.Request) (string, bool) {
	p := r.URL.EscapedPath()
	if p == "/" || strings.HasPrefix(p, "/api/") {
		return "", false
	}
	other := p + "/"
	if strings.HasSuffix(p, "/") {
		other = strings.TrimSuffix(p, "/")
	}
	u, err := url.Parse(other)
	if err != nil {
		return "", false
	}
	u.RawQuery = r.URL.RawQuery
	o := r.Clone(r.Context())
	o.URL, o.Method = u, http.MethodGet
	var get respond.Handler
	if rte := rt.match(o); rte != nil {
		get = rte.handler(http.MethodGet)
	}
	if get == nil {
		return "", false
	}
	if _, err := get(o); err != nil {
		return "", false
	}
	return other, true
}

// match finds the route for path and sets its wildcards as path values on r.
func (rt *router) match(r *http.Request) *route {
	path := r.URL.Path
	if len(path) > 1 && strings.HasPrefix(path, "/api/v1/") && strings.HasSuffix(path, "/") {
		// API paths have no trailing slash; accept one rather than 404.
		path = strings.TrimSuffix(path, "/")
	}
	if path == "/api/v1" {
		path = "/api/v1/"
	}
	segs := strings.Split(path, "/")[1:]
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
				r.SetPathValue(p[1:len(p)-1], segs[i])
			}
		}
		return rte
	}
	return nil
}
