// The header fields stored responses have in common, stored once.

package edgecache

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
)

// Most of a stored response's fields are the same as those of many other
// responses: the security policy, CORS, cache policy and content type of
// every page, or of every article's JSON in one coding. On the article
// pages of make bench-traffic they are 832 of the 956 bytes of names and
// values a record held, beside a body of 10 KB, or 3 KB in zstd. A record
// therefore keeps only its own fields (ownField) and names the rest by a
// slot of a dictionary that holds each such set once, so the same memory
// holds more responses (docs/edge-gateway.md, "Fields stored once").
//
// The dictionary never forgets a set (a record may name it as long as the
// rings hold the record), so it must not fill with sets that do not recur:
// a set is taken on its second store, having been seen once before in a
// table of candidates, and a set that finds its slot taken by another is
// kept in the record, as every set was before. Its memory is bounded by
// maxSets sets of at most maxSharedBlock bytes.

const (
	// dictSlots is how many slots the sets are spread over by hash, many
	// more than maxSets so that few sets find their slot taken.
	dictSlots = 4096
	// maxSets is how many sets the dictionary holds at most: about one
	// per kind of response the origin serves (article JSON, page, list,
	// feed...) and coding. make bench-traffic, which asks for three kinds
	// in three codings, ends with 9.
	maxSets = 256
	// maxSharedBlock and maxSharedFields bound the sets the dictionary
	// takes: the size of their names and values, and how many fields and
	// values.
	maxSharedBlock  = 4 << 10
	maxSharedFields = 64
	// dictBytes bounds the dictionary's memory: the sets, each with its
	// offsets (a fieldSpan a field, a span a value, at most
	// maxSharedFields of each), the slots and the candidates' hashes.
	dictBytes = maxSets*(maxSharedBlock+maxSharedFields*(16+8)+64) + dictSlots*8 + 4*dictSlots*8
)

// ownField are the fields that differ from one response to the next (its
// date, validators, length, links and digests) and so stay in each record.
// A field missing here only keeps its responses' sets out of the
// dictionary: a set that never recurs is never taken.
var ownField = map[string]bool{
	"Date": true, "Etag": true, "Last-Modified": true, "Expires": true,
	"Content-Length": true, "Content-Range": true, "Content-Location": true,
	"Content-Disposition": true, "Location": true, "Link": true,
	"Content-Md5": true, "Digest": true, "Content-Digest": true, "Repr-Digest": true,
	"Signature": true, "Signature-Input": true,
}

// headerDict is the dictionary of one cache. The zero value is not ready:
// use newHeaderDict.
type headerDict struct {
	seed  maphash.Seed
	slots [dictSlots]atomic.Pointer[fields]
	// seen holds the hashes of sets stored once, by hash, to take a set
	// into its slot when it comes again.
	seen [4 * dictSlots]atomic.Uint64
	// sets counts the slots taken.
	sets atomic.Int32
}

func newHeaderDict() *headerDict { return &headerDict{seed: maphash.MakeSeed()} }

// intern returns the number (from 1) of the slot holding f, taking f into
// its empty slot when f was seen before; 0 when the record must keep f
// itself. f (packed by split, so with no shared part of its own) must not
// change afterwards.
func (d *headerDict) intern(f *fields) uint32 {
	if len(f.list) == 0 || len(f.list) > maxSharedFields || len(f.values) > maxSharedFields || len(f.block) > maxSharedBlock {
		return 0
	}
	h := maphash.String(d.seed, f.block)
	i := h % dictSlots
	slot := &d.slots[i]
	if cur := slot.Load(); cur != nil {
		if cur.equal(f) {
			return uint32(i) + 1
		}
		return 0
	}
	if seen := &d.seen[h%uint64(len(d.seen))]; seen.Load() != h {
		seen.Store(h)
		return 0
	}
	if d.sets.Add(1) > maxSets {
		d.sets.Add(-1)
		return 0
	}
	if slot.CompareAndSwap(nil, f) {
		fieldSets.Inc()
		return uint32(i) + 1
	}
	d.sets.Add(-1)
	if slot.Load().equal(f) {
		return uint32(i) + 1
	}
	return 0
}

// lookup returns the set in slot number ref (from 1), nil when there is
// none (or no dictionary).
func (d *headerDict) lookup(ref uint64) *fields {
	if d == nil || ref == 0 || ref > dictSlots {
		return nil
	}
	return d.slots[ref-1].Load()
}

// equal reports whether f and g are the same fields in the same order.
func (f *fields) equal(g *fields) bool {
	return f.block == g.block && slices.Equal(f.list, g.list) && slices.Equal(f.values, g.values)
}

// split returns f's own fields and the others, each packed anew.
func (f *fields) split() (own, others fields) {
	h := f.header(0)
	own = packFields(h, func(k string) bool { return !ownField[k] }, nil)
	others = packFields(h, func(k string) bool { return ownField[k] }, nil)
	return own, others
}
