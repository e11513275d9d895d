package origin

import (
	"net/http"
	"strings"

	"github.com/invoicewire/invoicewire/origin/respond"
)

// route is one entry of the origin's routing table. Patterns are literal
// segments and {name} wildcards matching one non-empty segment; a pattern
// ending in "/" matches only paths that end in "/".
//
// http.ServeMux is not used because it answers unknown paths, wrong methods
// and unclean paths itself, with plain-text or HTML bodies and redirects; the
// contract wants JSON for every one of those (DESIGN D6).
type route struct {
	pattern  string
	segments []string
	handler  respond.Handler
	// cacheable routes go through the response cache.
	cacheable bool
}

type router struct {
	routes []*route
}

func (rt *router) handle(pattern string, h respond.Handler) {
	rt.routes = append(rt.routes, &route{pattern: pattern, segments: strings.Split(pattern, "/")[1:], handler: h, cacheable: true})
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
