// The writers between the origin's response and the client: recorder on
// the cache's path, stripWriter on the bypass.

package edgecache

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/invoicewire/invoicewire/internal/invalidation"
)

// recorder receives the origin's response on a miss. It buffers responses
// it may store (or must keep, for stale-if-error) and streams everything
// else to the client as it arrives (event streams, no-store bodies, bodies
// over the size bound).
type recorder struct {
	client    http.ResponseWriter // nil for background refreshes
	header    http.Header
	maxBody   int64
	buffer    bool // buffer even what will not be stored
	storable  func(int, http.Header) bool
	statusFor func(stored bool) []string
	// compressible, when set (for a client served identity), is the
	// encode handler's rule (Handler.compressible): a response sent as
	// received that it would have compressed for another client gets
	// Vary: Accept-Encoding, as a stored one does (RFC 9110 §12.5.5).
	compressible func(status int, hdr http.Header, n int, head []byte) bool
	// precondition, when set, is asked before a response that is not
	// stored is sent as received (the client's writer, status, header, body length or -1, the
	// body's start when known): the client's If-Match and
	// If-Unmodified-Since were not forwarded (forwardRequest), so the edge
	// evaluates them here, writes the 412 itself when they are false, and
	// reports that it did. The body that follows is then dropped.
	precondition func(client http.ResponseWriter, status int, hdr http.Header, n int, head []byte, cacheStatus []string) bool
	refused      bool

	status           int
	wroteHeader      bool
	storableResponse bool
	buffering        bool
	passedThrough    bool
	overflow         bool
	buf              bytes.Buffer
}

func (rc *recorder) Header() http.Header { return rc.header }

func (rc *recorder) WriteHeader(status int) {
	if rc.wroteHeader {
		return
	}
	if status < 200 {
		// Interim responses go straight through (103 Early Hints).
		if rc.client != nil && status != http.StatusSwitchingProtocols {
			copyHeader(rc.client.Header(), rc.header)
			stripEdgeFields(rc.client.Header())
			rc.client.WriteHeader(status)
		}
		return
	}
	rc.wroteHeader = true
	rc.status = status
	rc.storableResponse = rc.storable(status, rc.header)
	rc.buffering = rc.storableResponse || rc.buffer
	if !rc.buffering {
		rc.passThrough(rc.announcedLength(), nil)
		return
	}
	// The body is buffered in one allocation of its announced length
	// rather than grown by doubling and copied once more to be stored
	// (body).
	if cl, err := strconv.ParseInt(rc.header.Get("Content-Length"), 10, 64); err == nil && cl > 0 && cl <= rc.maxBody {
		rc.buf.Grow(int(cl))
	}
}

// body is the buffered body, to be stored. The buffer's own array is used
// when it holds little more than the body (it was sized by Content-Length,
// WriteHeader): an entry's cost counts the body's length, and a copy would
// be rounded to the same allocation size class. Otherwise it is copied.
func (rc *recorder) body() []byte {
	b := rc.buf.Bytes()
	if cap(b)-len(b) <= len(b)/8+64 {
		return b[:len(b):len(b)]
	}
	return bytes.Clone(b)
}

// announcedLength is the body's length as the header announces it
// (announcedLength).
func (rc *recorder) announcedLength() int { return announcedLength(rc.status, rc.header) }

// announcedLength is the length of the body of a response with status and
// header hdr as the header announces it: its Content-Length, none for a 204
// or 304, else -1 (not known).
func announcedLength(status int, hdr http.Header) int {
	if cl, err := strconv.Atoi(hdr.Get("Content-Length")); err == nil && cl >= 0 {
		return cl
	}
	if status == http.StatusNoContent || status == http.StatusNotModified {
		return 0
	}
	return -1
}

// passThrough starts sending the response to the client as it comes: n is
// the body's length (-1: not known), head its start when known.
func (rc *recorder) passThrough(n int, head []byte) {
	rc.buffering = false
	rc.passedThrough = true
	if rc.client == nil {
		return
	}
	var cacheStatus []string
	if rc.statusFor != nil {
		cacheStatus = rc.statusFor(false)
	}
	rc.sendHeader(rc.status, cacheStatus, n, head)
}

// sendHeader sends the origin's header to the client, without the fields
// meant for this cache, with cacheStatus (when not nil) as Cache-Status,
// and with Vary: Accept-Encoding when compressible says so of a body of n
// bytes (-1: not known) starting with head.
func (rc *recorder) sendHeader(status int, cacheStatus []string, n int, head []byte) {
	if rc.precondition != nil && rc.precondition(rc.client, status, rc.header, n, head, cacheStatus) {
		rc.refused = true
		return
	}
	hdr := rc.client.Header()
	copyHeader(hdr, rc.header)
	if rc.compressible != nil && rc.compressible(status, rc.header, n, head) {
		hdr["Vary"] = withVaryMember(hdr["Vary"], "Accept-Encoding")
	}
	stripEdgeFields(hdr)
	if cacheStatus != nil {
		hdr["Cache-Status"] = cacheStatus
	}
	rc.client.WriteHeader(status)
}

func (rc *recorder) Write(b []byte) (int, error) {
	if !rc.wroteHeader {
		rc.WriteHeader(http.StatusOK)
	}
	if rc.buffering {
		if int64(rc.buf.Len()+len(b)) <= rc.maxBody {
			return rc.buf.Write(b)
		}
		// Too big to store: send what we have and stream the rest.
		rc.overflow = true
		rc.storableResponse = false
		if rc.client == nil {
			rc.buffering = false
			rc.passedThrough = true
			return len(b), nil
		}
		// The body is longer than the buffer; how much longer is not
		// known yet.
		head := rc.buf.Bytes()
		if len(head) == 0 {
			head = b
		}
		rc.passThrough(-1, head)
		if !rc.refused {
			if _, err := rc.client.Write(rc.buf.Bytes()); err != nil {
				return 0, err
			}
		}
		rc.buf.Reset()
	}
	if rc.client == nil || rc.refused {
		return len(b), nil
	}
	return rc.client.Write(b)
}

// FlushError passes flushes through once the response streams, so event
// streams reach the client event by event.
func (rc *recorder) FlushError() error {
	if rc.passedThrough && rc.client != nil && !rc.refused {
		return http.NewResponseController(rc.client).Flush()
	}
	return nil
}

// Flush implements http.Flusher.
func (rc *recorder) Flush() { _ = rc.FlushError() }

// flushBuffered sends a buffered response that is not stored.
func (rc *recorder) flushBuffered(cacheStatus string) {
	if rc.client == nil {
		return
	}
	status := rc.status
	if status == 0 {
		status = http.StatusOK
	}
	rc.sendHeader(status, []string{cacheStatus}, rc.buf.Len(), rc.buf.Bytes())
	if !rc.refused {
		_, _ = rc.client.Write(rc.buf.Bytes())
	}
}

// copyHeader sets (not adds) every field of src on dst: fields that outer
// handlers set before the response (Vary, say) are replaced by the
// origin's, never doubled.
func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// stripEdgeFields removes the origin's fields meant for this cache alone
// from a response on its way to the client: Surrogate-Key and
// Surrogate-Control (docs/decisions.md, cache headers), and the content
// version of the answer (invalidation.VersionHeader), which only an edge
// deciding whether to store compares (docs/decisions.md, "Purges across
// edges and origins"). Every path that sends an origin's answer on calls
// it, whether or not the cache looked at the answer.
func stripEdgeFields(h http.Header) {
	delete(h, "Surrogate-Key")
	delete(h, "Surrogate-Control")
	delete(h, invalidation.VersionHeader)
}

// stripWriter removes the fields meant for the edge (stripEdgeFields) from
// responses that bypass the cache, and adds Vary: Accept-Encoding where
// the encode handler behind it left an answer in identity that it
// compresses for other clients (varyOnCoding). It records the final
// status for invalidation.
type stripWriter struct {
	*caddyhttp.ResponseWriterWrapper
	// compressible is the encode handler's rule (Handler.compressible).
	compressible func(status int, hdr http.Header, n int, head []byte) bool
	once         sync.Once
	status       int
}

func (sw *stripWriter) WriteHeader(status int) {
	if status >= 200 {
		sw.once.Do(func() { sw.finalHeader(status, nil) })
	}
	sw.ResponseWriterWrapper.WriteHeader(status)
}

func (sw *stripWriter) Write(b []byte) (int, error) {
	sw.once.Do(func() { sw.finalHeader(http.StatusOK, b) })
	return sw.ResponseWriterWrapper.Write(b)
}

// finalHeader prepares the final response's header, whose body starts
// with head when known.
func (sw *stripWriter) finalHeader(status int, head []byte) {
	sw.status = status
	hdr := sw.Header()
	stripEdgeFields(hdr)
	if sw.varyOnCoding(status, hdr, head) {
		hdr["Vary"] = withVaryMember(hdr["Vary"], "Accept-Encoding")
	}
}

// varyOnCoding reports whether a response passed by the cache, as the
// encode handler behind it hands it on, lacks the Vary: Accept-Encoding
// that its representation calls for (RFC 9110 §12.5.5), as a stored or
// fetched one gets it (recorder.compressible). The encode handler adds the
// member only when it compresses, and to every 304 of a client it serves
// a coding; a client served identity (no coding accepted, or none the edge
// offers) gets neither. So it is added here to an identity answer the
// encode handler would compress for another client (a compressed one has
// its Content-Encoding and is not compressible again), and to every 304,
// which carries the Vary its 200 would (RFC 9110 §15.4.5) but has no body
// to judge by, as the encode handler gives every 304 it.
func (sw *stripWriter) varyOnCoding(status int, hdr http.Header, head []byte) bool {
	if sw.compressible == nil {
		return false
	}
	if status == http.StatusNotModified {
		return true
	}
	return sw.compressible(status, hdr, announcedLength(status, hdr), head)
}

// Interface guards
var _ http.Flusher = (*recorder)(nil)
