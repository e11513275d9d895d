package origin

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// entry is a response ready to be written: its headers are complete and
// shared read-only by every request that hits it, so a hit copies no bytes
// and allocates nothing of its own.
type entry struct {
	status       int
	header       http.Header // for the full response
	header304    http.Header // for If-None-Match and If-Modified-Since hits (RFC 9110 §15.4.5)
	body         []byte
	expires      time.Time // zero: valid until a purge
	etag         string
	lastMod      time.Time // zero: no Last-Modified, If-Modified-Since never matches
	lastModField []string  // lastMod as the Last-Modified field, sent when due (modifiedAt)
	tags         []string
	uncached     bool
	requests     prometheus.Counter
	latency      prometheus.Observer
}

var (
	// corsMethods are the preflight's Allow-Methods for routes answered
	// through the response path: every method any of them takes.
	corsMethods        = []string{"GET, HEAD, POST, DELETE, OPTIONS"}
	noStoreValue       = []string{respond.NoStore}
	contentSignalValue = []string{respond.ContentSignal}
)

func (s *Server) newEntry(rte string, resp *respond.Response) *entry {
	h := http.Header{}
	for k, v := range resp.Header {
		h[k] = v
	}
	cc := resp.CacheControl
	if cc == "" {
		cc = respond.CacheRead
	}
	if resp.ContentType != "" {
		// Empty answers (204, a revocation's 200) have no media type.
		h["Content-Type"] = []string{resp.ContentType}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(resp.Body))}
	h["Cache-Control"] = []string{cc}
	respond.SharedHeaders(h)
	if keys := headerSurrogateKeys(resp.SurrogateKeys); keys != "" {
		h["Surrogate-Key"] = []string{keys}
	}
	if resp.Vary != "" {
		h["Vary"] = []string{resp.Vary}
	}
	e := &entry{status: resp.Status, header: h, body: resp.Body, tags: resp.SurrogateKeys, expires: resp.Expires, uncached: resp.Uncached}
	if resp.Status == http.StatusOK {
		// Every page, twin, feed, llms.txt and calendar states the
		// site's AI-use preference, whichever handler made it.
		if respond.CarriesContent(resp.ContentType) {
			h["Content-Signal"] = contentSignalValue
		}
		e.etag = httpheader.ETag(resp.Body)
		h["ETag"] = []string{e.etag}
		if !resp.LastModified.IsZero() {
			// Sent by write, once it is no later than the answer's Date.
			e.lastMod = resp.LastModified.UTC().Truncate(time.Second)
			e.lastModField = []string{e.lastMod.Format(http.TimeFormat)}
		}
		e.header304 = http.Header{}
		for k, v := range h {
			if k != "Content-Length" && k != "Content-Type" {
				e.header304[k] = v
			}
		}
	}
	status := strconv.Itoa(resp.Status)
	e.requests = s.metrics.requests.WithLabelValues(rte, status)
	e.latency = s.metrics.latency.WithLabelValues(rte)
	return e
}

// headerSurrogateKeys joins the keys that may travel in a Surrogate-Key
// field: each must be a run of visible ASCII (RFC 9110 §5.5 field content,
// without the spaces that separate keys). Keys come from request paths (the
// 404 of an unknown slug is tagged with it), so a key carrying a control
// byte or a space is left out rather than emitted: the edge refuses a
// response with an invalid field and answers 503 to what was a client's
// mistake. Such a key names no content that could ever be purged; the
// origin's own cache still tags the entry with it.
func headerSurrogateKeys(keys []string) string {
	n := 0
	for _, k := range keys {
		if validSurrogateKey(k) {
			n++
		}
	}
	if n == len(keys) {
		return strings.Join(keys, " ")
	}
	valid := make([]string, 0, n)
	for _, k := range keys {
		if validSurrogateKey(k) {
			valid = append(valid, k)
		}
	}
	return strings.Join(valid, " ")
}

func validSurrogateKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (s *Server) errorEntry(rte string, e *apierror.Error) *entry {
	resp := &respond.Response{Status: e.Status, ContentType: "application/json", Body: e.Body(), Header: e.Header, SurrogateKeys: e.SurrogateKeys}
	switch {
	case e.Status >= 500:
		resp.CacheControl = respond.NoStore
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusMethodNotAllowed:
		resp.CacheControl = respond.NoStore
	default:
		// 400, 404, 410: the answer is fixed until the content changes.
		resp.CacheControl = respond.CacheError
	}
	return s.newEntry(rte, resp)
}

// errorAnswer is errorEntry for an error answered to a request: only a
// public read's error (a GET or HEAD without a token) may be shared, any
// other is no-store (docs/decisions.md, cache headers).
func (s *Server) errorAnswer(rte string, e *apierror.Error, publicRead bool) *entry {
	en := s.errorEntry(rte, e)
	if !publicRead {
		en.header["Cache-Control"] = noStoreValue
	}
	return en
}

// cacheable reports whether an entry may be kept: successes and the client
// errors that depend only on the request and the content.
func cacheable(status int) bool {
	switch status {
	case http.StatusOK, http.StatusMovedPermanently, http.StatusBadRequest, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

// cacheKey is the raw request target: the same bytes from the client hit the
// same entry, without building a string per request.
func cacheKey(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// ServeHTTP answers every request of the origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Read before the cache: whatever this request answers reflects every
	// purge up to this version (invalidation.VersionHeader).
	seen := s.seenVersion()
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	// A request carrying a token neither reads nor fills the shared cache:
	// owner routes answer per client, and docs/decisions.md (cache headers) keeps anything carrying a
	// token out of caches.
	authorized := r.Header["Authorization"] != nil
	cached := get && !authorized
	if cached {
		if e, ok := s.cache.Get(cacheKey(r)); ok && (e.expires.IsZero() || s.cfg.Now().Before(e.expires)) {
			s.writeSeen(w, r, e, start, seen)
			return
		}
	}
	if r.RequestURI == "*" && r.Method != http.MethodOptions {
		// The asterisk form names the server, not a resource, and only
		// OPTIONS takes it (RFC 9112 §3.2.4); read as a path it became a
		// redirect to "*/" that caches would keep.
		e := s.errorEntry("unmatched", apierror.BadRequest("The request target * is only for OPTIONS.", "Request a path, such as /api/v1/."))
		e.header["Cache-Control"] = noStoreValue
		s.write(w, r, e, start)
		return
	}
	// Routed on the path as sent, in its canonical form only (paths.go).
	raw := requestPath(r)
	canon, perr := canonicalPath(raw)
	var rte *route
	if perr == nil && canon == raw {
		rte = s.router.match(r, canon)
	}
	if rte != nil && rte.raw != nil {
		// Streams and protocol handlers: the shared part of the writer is
		// respond.Mount's.
		rte.raw.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodOptions {
		respond.Preflight(w, corsMethods)
		return
	}
	pattern := "unmatched"
	if rte != nil {
		pattern = rte.pattern
	}
	var h respond.Handler
	if rte != nil {
		h = rte.handler(r.Method)
	}
	switch {
	case rte == nil && get:
		e := s.elsewhere(r, pattern, raw, canon, perr)
		if authorized {
			// Its other address's handler read the token (docs/decisions.md, cache headers).
			e.header["Cache-Control"] = noStoreValue
		}
		s.write(w, r, e, start)
		return
	case h == nil:
		missing := apierror.NoSuchAddress(s.cfg.SiteRoot)
		if perr != nil || canon != raw {
			missing = misspelt(s.cfg.SiteRoot, canon, perr)
		}
		s.write(w, r, s.errorAnswer(pattern, s.refuseMethod(r, rte, canon, missing), get && !authorized), start)
		return
	}
	gen := s.cache.Generation()
	resp, err := h(r)
	var e *entry
	if err != nil {
		e = s.errorAnswer(pattern, s.asError(r, pattern, err), get && !authorized)
	} else {
		if resp.CacheControl == "" && !get {
			resp.CacheControl = respond.NoStore
		}
		e = s.newEntry(pattern, resp)
	}
	if cached && cacheable(e.status) && !e.uncached && e.header["Cache-Control"][0] != respond.NoStore {
		s.cache.Set(cacheKey(r), e, e.tags, int64(len(e.body))+512, gen)
	}
	s.writeSeen(w, r, e, start, seen)
}

// asError is the error a handler returned as the client is told it: a
// fault of the server is logged, and a Redis outage is the 503 of
// docs/decisions.md (Redis unreachable).
func (s *Server) asError(r *http.Request, pattern string, err error) *apierror.Error {
	ae := apierror.As(err)
	if ae.Status >= 500 {
		s.log.ErrorContext(r.Context(), "origin: request failed", "route", pattern, "method", r.Method, "err", err, "request_id", r.Header.Get("X-Request-Id"))
		if store.Unavailable(err) {
			ae = apierror.New(http.StatusServiceUnavailable, "The content store is unreachable.", "Try again in a few seconds.")
			ae.Header = http.Header{"Retry-After": {"5"}}
		}
	}
	return ae
}

// seenVersion is the content version the cache is in step with, or -1.
func (s *Server) seenVersion() int64 {
	if f := s.follower.Load(); f != nil {
		return f.Seen()
	}
	return -1
}

// writeSeen is write, with the content version the response reflects when
// it is known, for the edge's cache (invalidation.VersionHeader).
func (s *Server) writeSeen(w http.ResponseWriter, r *http.Request, e *entry, start time.Time, seen int64) {
	if seen >= 0 {
		w.Header()[invalidation.VersionHeader] = []string{strconv.FormatInt(seen, 10)}
	}
	s.write(w, r, e, start)
}

// modifiedAt is e's Last-Modified in an answer made at now: none (zero)
// while the date is later than now, since a Last-Modified is never later
// than the answer's Date (RFC 9110 §8.8.2.1). The date is never moved back
// to now instead: it would be the date of this version and of a later one,
// and a cache holding this one would answer If-Modified-Since with 304
// after the next change (docs/decisions.md, "A feed's Last-Modified").
// Such a date is a change time ahead of the clock after a burst of changes,
// or an article's date in the future.
func (e *entry) modifiedAt(now time.Time) time.Time {
	if e.lastMod.After(now) {
		return time.Time{}
	}
	return e.lastMod
}

// precondition evaluates the request's conditional fields against e as
// answered at now (modifiedAt), in the order of RFC 9110 §13.2.2, and
// returns the status to answer: 412 when If-Match, or without it
// If-Unmodified-Since, is false; 304 when If-None-Match matches, or
// without it If-Modified-Since on a GET or HEAD; else e's own status. Only a 200 has a representation to compare (an
// entry with an ETag): any other answer ignores the preconditions (RFC
// 9110 §13.2.1), so a 404 stays a 404. Writes are answered after their
// handler has run, too late to refuse them, so only reads are evaluated.
func (e *entry) precondition(r *http.Request, now time.Time) int {
	if e.etag == "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return e.status
	}
	lastMod := e.modifiedAt(now)
	if httpheader.PreconditionFailed(r.Header, e.etag, lastMod) {
		return http.StatusPreconditionFailed
	}
	if inm := r.Header["If-None-Match"]; inm != nil {
		if httpheader.MatchesETag(inm, e.etag) {
			return http.StatusNotModified
		}
		return e.status
	}
	if httpheader.NotModifiedSince(r.Header["If-Modified-Since"], lastMod) {
		return http.StatusNotModified
	}
	return e.status
}

// preconditionFailed is the body of every 412: the JSON error, never
// stored (it depends on the request's fields, not on the content).
var preconditionFailed = apierror.PreconditionFailed().Body()

func (s *Server) write(w http.ResponseWriter, r *http.Request, e *entry, start time.Time) {
	h := w.Header()
	respond.EchoRequestID(h, r)
	switch e.precondition(r, start) {
	case http.StatusNotModified:
		for k, v := range e.header304 {
			h[k] = v
		}
		s.capFreshness(h, e)
		if !e.modifiedAt(start).IsZero() {
			h["Last-Modified"] = e.lastModField
		}
		w.WriteHeader(http.StatusNotModified)
	case http.StatusPreconditionFailed:
		// An error, not the representation (RFC 9110 §15.5.13): none of
		// e's fields, and no-store like the other answers that depend on
		// the request alone (docs/decisions.md, cache headers).
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(len(preconditionFailed))}
		h["Cache-Control"] = noStoreValue
		respond.SharedHeaders(h)
		w.WriteHeader(http.StatusPreconditionFailed)
		if r.Method != http.MethodHead {
			w.Write(preconditionFailed)
		}
	default:
		for k, v := range e.header {
			h[k] = v
		}
		s.capFreshness(h, e)
		if !e.modifiedAt(start).IsZero() {
			h["Last-Modified"] = e.lastModField
		}
		w.WriteHeader(e.status)
		if r.Method != http.MethodHead {
			w.Write(e.body)
		}
	}
	e.requests.Inc()
	e.latency.Observe(time.Since(start).Seconds())
}

// capFreshness sets h's Cache-Control for an entry that expires by itself
// (respond.Response.Expires: /mandates and its twin at the next midnight
// UTC, the news sitemap when its oldest entry leaves the window). The
// origin's cache drops such an entry then, but the shared Cache-Control
// would let the edge keep it an hour and browsers five minutes longer, and
// serve it stale for a day more; so each answer is fresh at most until the
// expiry (RFC 9111 §5.2.2.1, §5.2.2.10) and may be served stale only
// within it (RFC 5861 §3). It is worked out per answer, since one entry
// answers until it expires; any other entry keeps its shared headers.
func (s *Server) capFreshness(h http.Header, e *entry) {
	if e.expires.IsZero() {
		return
	}
	if cc := h["Cache-Control"]; len(cc) == 1 {
		h["Cache-Control"] = []string{cappedCacheControl(cc[0], e.expires.Sub(s.cfg.Now()))}
	}
}

// cappedCacheControl is cc with max-age and s-maxage at most left (whole
// seconds, never below 0) and stale-while-revalidate at most what is left
// after the longer of the two, dropped when nothing is; other directives
// are kept as they are.
func cappedCacheControl(cc string, left time.Duration) string {
	secs := max(int64(left/time.Second), 0)
	var out []string
	fresh := int64(-1)
	swr := -1
	for _, d := range strings.Split(cc, ",") {
		d = strings.TrimSpace(d)
		name, val, hasVal := strings.Cut(d, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		switch {
		case !hasVal || err != nil:
		case strings.EqualFold(name, "max-age"), strings.EqualFold(name, "s-maxage"):
			n = min(n, secs)
			fresh = max(fresh, n)
			d = name + "=" + strconv.FormatInt(n, 10)
		case strings.EqualFold(name, "stale-while-revalidate"):
			swr = len(out)
		}
		out = append(out, d)
	}
	if swr >= 0 {
		name, val, _ := strings.Cut(out[swr], "=")
		n, _ := strconv.ParseInt(val, 10, 64)
		if n = min(n, secs-max(fresh, 0)); n > 0 {
			out[swr] = name + "=" + strconv.FormatInt(n, 10)
		} else {
			out = slices.Delete(out, swr, swr+1)
		}
	}
	return strings.Join(out, ", ")
}

// refuseMethod answers a method no route of this path takes. On /api/v1 a
// write without a valid bearer token is a 401 first (docs/decisions.md (bearer tokens): "future
// write surfaces"); with a valid token it is the plain 405 (or missing, the
// 404, for a path no route has). A route with a token of its own (a
// client's registration access token) counts that one as valid too.
//
// A 405 says the resource exists (RFC 9110 §15.5.6: its Allow lists what the
// resource takes), so a path a wildcard route's GET does not find, such as
// /api/v1/articles/no-such-slug or the site's /{year}/{month}/{file} taking
// /a/b/c, answers that GET's 404 or 410 instead, as its GET would.
func (s *Server) refuseMethod(r *http.Request, rte *route, canon string, missing *apierror.Error) *apierror.Error {
	write := r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodDelete
	ownCredential := rte != nil && rte.credential != nil && rte.credential(r) == nil
	if write && !ownCredential && (strings.HasPrefix(r.URL.Path, "/api/v1/") || r.URL.Path == "/api/v1") {
		raw, present := token.FromHeader(r.Header)
		if !present {
			return token.Unauthorized(s.cfg.SiteRoot, r.Method, false)
		}
		if token.Malformed(r.Header) {
			return token.MalformedToken(s.cfg.SiteRoot)
		}
		if _, err := token.Lookup(r.Context(), s.store.Client(), raw, time.Now()); err != nil {
			if !errors.Is(err, token.ErrInvalid) {
				return apierror.As(err)
			}
			return token.Unauthorized(s.cfg.SiteRoot, r.Method, true)
		}
	}
	if rte == nil {
		return missing
	}
	if a, found := s.router.probe(r, canon); found && a.err != nil {
		if ae := apierror.As(a.err); ae.Status == http.StatusNotFound || ae.Status == http.StatusGone {
			return ae
		}
	}
	e := apierror.New(http.StatusMethodNotAllowed, "Method "+r.Method+" is not allowed here.", "This resource answers "+rte.allow[0]+".")
	e.Header = http.Header{"Allow": rte.allow}
	return e
}
