package edgecache

import "strconv"

// forward is why a request went to the origin: the fwd parameter of
// Cache-Status (RFC 9211 §2.2). The cache's decisions compare these values;
// String renders them, and cacheStatus renders the whole member, in this
// file only.
type forward uint8

const (
	// fwdURIMiss: nothing is stored for the request target.
	fwdURIMiss forward = iota + 1
	// fwdVaryMiss: something is stored for the target, not for the
	// request's values of the fields its Vary names.
	fwdVaryMiss
	// fwdStale: the stored response is stale and may not be served so.
	fwdStale
	// fwdRequest: the request asked for validation (no-cache, max-age,
	// min-fresh).
	fwdRequest
	// fwdMethod: a method the cache does not serve (anything but GET and
	// HEAD).
	fwdMethod
	// fwdBypass: a request the cache may not answer (Authorization).
	fwdBypass
)

// String is the reason's token in Cache-Status.
func (f forward) String() string {
	switch f {
	case fwdURIMiss:
		return "uri-miss"
	case fwdVaryMiss:
		return "vary-miss"
	case fwdStale:
		return "stale"
	case fwdRequest:
		return "request"
	case fwdMethod:
		return "method"
	case fwdBypass:
		return "bypass"
	}
	return "bypass"
}

// miss reports whether nothing usable was stored: the cache had no
// response to revalidate.
func (f forward) miss() bool { return f == fwdURIMiss || f == fwdVaryMiss }

// forwarded describes a response that went to the origin, for its
// Cache-Status member.
type forwarded struct {
	fwd forward
	// status is the origin's status (fwd-status), when it differs from the
	// one sent to the client or tells what the cache did with it; 0 omits
	// it. It is only ever a status the origin sent: RFC 9211 §2.3 defines
	// fwd-status as the status the next hop returned, and a refused
	// connection or a timeout returned none.
	status int
	// stored: the response was stored.
	stored bool
	// collapsed: the request waited for another's fetch of the same key
	// and is answered with its response.
	collapsed bool
	// staleIfError: the origin failed and a stale response stands in.
	staleIfError bool
	// noResponse: the forward got no response (the origin refused the
	// connection or did not answer in time), so the answer is the edge's
	// own error. Without it such a miss would read like one the origin
	// answered with that status. staleIfError, when also set, is the
	// detail given.
	noResponse bool
}

// cacheStatus renders the cache's Cache-Status member for a forwarded
// response (RFC 9211 §2).
func (h *Handler) cacheStatus(f forwarded) string {
	s := h.Name + "; fwd=" + f.fwd.String()
	if f.status != 0 {
		s += "; fwd-status=" + strconv.Itoa(f.status)
	}
	if f.stored {
		s += "; stored"
	}
	if f.collapsed {
		s += "; collapsed"
	}
	switch {
	case f.staleIfError:
		s += "; detail=stale-if-error"
	case f.noResponse:
		// RFC 9211 §2.8: detail carries what the other parameters
		// cannot, here why no fwd-status is given.
		s += "; detail=no-response"
	}
	return s
}

// appendHitStatus appends the cache's Cache-Status member for a response
// served from the cache (RFC 9211 §2.1 hit, §2.4 ttl: negative once stale),
// after the members of the caches upstream, if any.
func appendHitStatus(b []byte, name, upstream string, ttl int64) []byte {
	if upstream != "" {
		b = append(b, upstream...)
		b = append(b, ", "...)
	}
	b = append(b, name...)
	b = append(b, "; hit; ttl="...)
	return strconv.AppendInt(b, ttl, 10)
}
