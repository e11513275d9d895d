package edgecache

import (
	"net/http"
	"strconv"

	"github.com/invoicewire/invoicewire/internal/invalidation"
)

// originCurrent reports whether a response whose header is hdr may be
// stored by an edge whose invalidation follower had seen version seen when
// the request was forwarded, and removes the origin's version field from
// hdr, which is for the edge alone (answers that bypass the cache lose it
// in stripEdgeFields).
//
// The edge and the origin each learn of a change from their own
// subscription, in either order. When the edge purges first, a request that
// misses at once can be answered from the origin's cache before the origin
// purges: stored, that old answer would stay until it expires. So a
// response reflecting an older version than the edge has seen is sent but
// not stored (docs/decisions.md, "Purges across edges and origins"). A
// response without the field (another upstream) is stored as before.
func originCurrent(hdr http.Header, seen int64) bool {
	v := hdr[invalidation.VersionHeader]
	if v == nil {
		return true
	}
	delete(hdr, invalidation.VersionHeader)
	origin, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || seen < 0 {
		return err == nil
	}
	return origin >= seen
}

// seen is the highest content version whose purge the cache's follower
// has begun, or -1 (no follower, or none seen yet): an answer older than
// that may be one the cache has just dropped.
func (s *shared) seen() int64 {
	if s.follower == nil {
		return -1
	}
	return s.follower.Purging()
}
