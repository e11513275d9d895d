package origin

import (
	"errors"
	"net/http"
	"strings"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// One address per resource (docs/decisions.md, "One address per resource").
// The router matches the path as the client wrote it, never Go's decoded
// r.URL.Path, in which "/a%2Fb" and "/a/b" are the same string. A path is
// first brought to its canonical form (canonicalPath):
//
//   - spelled otherwise but equivalent under RFC 3986 §6.2.2 (an encoded
//     unreserved character, lowercase hex, a dot segment): GET and HEAD
//     are redirected to the canonical form, other methods answer as an
//     unknown path;
//   - different in meaning from every address (an encoded slash, an empty
//     segment): the JSON 404, whatever the method;
//   - canonical: routed.

var (
	// errEncodedSlash: "%2F" is data inside one segment, not a separator
	// (RFC 3986 §2.2), and no identifier of the service holds a "/".
	errEncodedSlash = errors.New("origin: an encoded slash in a path segment")
	// errEmptySegment: "//" is an empty segment (RFC 3986 §3.3), which no
	// address has; it is not the same path as "/".
	errEmptySegment = errors.New("origin: an empty path segment")
)

// requestPath is the path of r's target as the client sent it, still
// escaped: the bytes of an origin-form target before its query, or the
// escaped path of an absolute-form one. An empty path is "/" (RFC 3986
// §6.2.3).
func requestPath(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		p, _, _ := strings.Cut(r.RequestURI, "?")
		return p
	}
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// canonicalPath returns the canonical form of the escaped path p, which
// starts with "/": percent-encoding normalised (RFC 3986 §6.2.2.1,
// §6.2.2.2: an encoded unreserved character decoded, any other octet's
// encoding in uppercase hex, an octet §3.3 does not allow in a path
// encoded), then dot segments removed (§6.2.2.3, §5.2.4). A path with an
// encoded slash or an empty segment other than its trailing slash is
// refused with errEncodedSlash or errEmptySegment: it names nothing the
// service publishes. The canonical form never starts with "//".
func canonicalPath(p string) (string, error) {
	if plainCanonical(p) {
		return p, nil
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && i+2 < len(p) && httpheader.IsHex(p[i+1]) && httpheader.IsHex(p[i+2]):
			v := unhex(p[i+1])<<4 | unhex(p[i+2])
			if unreserved(v) {
				b.WriteByte(v)
			} else {
				writeEscaped(&b, v)
			}
			i += 2
		case c == '/' || pathChar(c):
			b.WriteByte(c)
		default:
			// A byte a path may not hold as it is (a space, a quote, a
			// byte of UTF-8, a "%" that starts no escape) stands for
			// itself, percent-encoded (RFC 3986 §2.1, §2.4).
			writeEscaped(&b, c)
		}
	}
	norm := b.String()
	segs := strings.Split(norm[1:], "/")
	for i, s := range segs {
		if s == "" && i < len(segs)-1 {
			return "", errEmptySegment
		}
		if strings.Contains(s, "%2F") {
			return "", errEncodedSlash
		}
	}
	// Dot segments (RFC 3986 §5.2.4): "." stays where it is, ".." goes up
	// one segment (never above the root); either one last leaves the
	// path ending in "/".
	out := segs[:0]
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			trailing = last
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
		case "":
			trailing = true // the last segment: the path ends in "/"
		default:
			out = append(out, s)
			trailing = false
		}
	}
	canon := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		canon += "/"
	}
	return canon, nil
}

// plainCanonical reports, without allocating, whether p is canonical for
// the common reason: no percent sign, only bytes a path may hold, no empty
// segment but a trailing one, no dot segment.
func plainCanonical(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			seg := p[start:i]
			if seg == "." || seg == ".." || (seg == "" && i < len(p)) {
				return false
			}
			start = i + 1
			continue
		}
		if !pathChar(p[i]) {
			return false
		}
	}
	return true
}

// unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3).
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// pathChar: a pchar other than an escape, that is unreserved, sub-delims,
// ":" or "@" (RFC 3986 §3.3).
func pathChar(c byte) bool {
	return unreserved(c) || strings.IndexByte("!$&'()*+,;=:@", c) >= 0
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func writeEscaped(b *strings.Builder, c byte) {
	const upperhex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(upperhex[c>>4])
	b.WriteByte(upperhex[c&15])
}

// misspelt is the 404 of a path refused by canonicalPath, or spelled
// otherwise than its canonical form canon for a method that is not
// redirected. The message is NoSuchAddress's; the hint says why.
func misspelt(siteRoot, canon string, err error) *apierror.Error {
	e := apierror.NoSuchAddress(siteRoot)
	switch {
	case errors.Is(err, errEncodedSlash):
		e.Hint = "An encoded slash (%2F) is part of its path segment, not a separator, and no address here has one. " + e.Hint
	case errors.Is(err, errEmptySegment):
		e.Hint = "No address here has an empty path segment (//). " + e.Hint
	default:
		e.Hint = "This path is another spelling of " + siteRoot + canon + " (RFC 3986 §6.2.2), to which only GET and HEAD are redirected: send the request there."
	}
	return e
}

// elsewhere answers a GET or HEAD whose path as written is no route's:
// raw as sent, canon its canonical form or perr why it has none. It is a
// 301 to the one address that answers for it, or the JSON 404.
func (s *Server) elsewhere(r *http.Request, pattern, raw, canon string, perr error) *entry {
	if perr != nil {
		return s.errorEntry(pattern, misspelt(s.cfg.SiteRoot, canon, perr))
	}
	if canon != raw {
		// The same address spelled otherwise (RFC 3986 §6.2.2): its
		// answer is the canonical address's, which the client gets by
		// the redirect, whatever it is (a page, the page's own redirect
		// followed here in one hop, a 410, a 400 for the query), but for
		// a 404, which needs no second request. The canonical path may
		// also be a page's other form (/countries/%64e).
		a, found := s.router.probe(r, canon)
		if !found {
			return s.slashed(r, pattern, canon)
		}
		if a.err != nil {
			e := s.asError(r, pattern, a.err)
			if e.Status == http.StatusNotFound || e.Status >= 500 {
				return s.errorEntry(pattern, e)
			}
			return s.newEntry(pattern, respond.Redirect(r, s.cfg.SiteRoot, canon, e.SurrogateKeys...))
		}
		return s.redirectEntry(r, pattern, canon, a.resp)
	}
	return s.slashed(r, pattern, canon)
}

// slashed answers the canonical path p, which is no route's: a 301 to
// p's other form (otherForm) when that answers the request itself, else
// the JSON 404, tagged with what that answer depended on so a change of
// content purges it (docs/decisions.md, cache headers). A store failure
// while asking is the failure, never a 404 (docs/decisions.md, Redis
// unreachable).
func (s *Server) slashed(r *http.Request, pattern, p string) *entry {
	missing := apierror.NoSuchAddress(s.cfg.SiteRoot)
	if other, ok := otherForm(p); ok {
		if a, found := s.router.probe(r, other); found {
			if a.err == nil {
				return s.redirectEntry(r, pattern, other, a.resp)
			}
			e := s.asError(r, pattern, a.err)
			if e.Status >= 500 {
				return s.errorEntry(pattern, e)
			}
			missing.SurrogateKeys = e.SurrogateKeys
		}
	}
	return s.errorEntry(pattern, missing)
}

// redirectEntry is the 301 to target (escaped, canonical), whose handler
// answered resp: a redirect of its own is followed here, so the client
// makes one hop (/2026/11/%61rticle to the page with its slash).
func (s *Server) redirectEntry(r *http.Request, pattern, target string, resp *respond.Response) *entry {
	if resp.Status == http.StatusMovedPermanently {
		return s.newEntry(pattern, resp)
	}
	return s.newEntry(pattern, respond.Redirect(r, s.cfg.SiteRoot, target, resp.SurrogateKeys...))
}
