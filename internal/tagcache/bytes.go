package tagcache

import (
	"encoding/binary"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/coocood/freecache"
)

// Bytes is a cache of byte values, tagged and purged like Cache, whose
// entries live in freecache's ring buffers: 256 byte arrays and their
// indexes, none of which holds a pointer, however many entries they hold.
// The garbage collector has nothing in it to mark, where Cache keeps a few
// objects an entry (docs/decisions.md, "Edge cache storage"). When full,
// freecache overwrites the least recently used of the oldest entries.
//
// A Get copies the value out of the ring, so what it returns is the
// caller's and never changes.
type Bytes struct {
	fc *freecache.Cache
	stamps
	// maxEntry is the largest key and value freecache takes as one entry
	// (a 1,024th of its size, less its entry header); longer records are
	// stored in parts.
	maxEntry int
}

// Records: a whole record is recWhole, then the fill's generation, the
// clock when it was stored, the number of stamp slots and the slots (all
// little-endian), then the value. A record longer than maxEntry is stored
// as a head (recSplit, the number of parts, the record's length and its
// xxhash) holding the first part, the other parts under partKey.
const (
	recWhole byte = iota
	recSplit

	recHeader   = 1 + 8 + 8 + 2
	splitHeader = 1 + 4 + 4 + 8
	// entryHeader is freecache's header of an entry in its ring.
	entryHeader = 24
)

// NewBytes returns a cache holding at most maxBytes of entries (keys,
// values, the record headers above and freecache's 24 bytes an entry), all
// of it allocated up front. Its indexes grow by 16 bytes an entry beyond.
func NewBytes(maxBytes int64) *Bytes {
	return &Bytes{
		fc:       freecache.NewCache(int(maxBytes)),
		stamps:   newStamps(maxBytes),
		maxEntry: int(maxBytes)/1024 - entryHeader,
	}
}

// Get returns the value stored under key, a copy of the caller's own.
func (c *Bytes) Get(key []byte) ([]byte, bool) {
	var buf []byte
	return c.GetInto(key, &buf)
}

// GetInto is Get reading the value's record into *buf, which it replaces
// with a larger one when the record does not fit: the value returned
// shares *buf's memory (but for values stored in parts).
func (c *Bytes) GetInto(key []byte, buf *[]byte) ([]byte, bool) {
	rec, err := c.fc.GetWithBuf(key, (*buf)[:0])
	if err != nil || len(rec) == 0 {
		return nil, false
	}
	if cap(rec) > cap(*buf) {
		*buf = rec
	}
	if rec[0] == recSplit {
		if rec = c.join(key, rec); rec == nil {
			return nil, false
		}
	}
	if rec[0] != recWhole || len(rec) < recHeader {
		return nil, false
	}
	gen := binary.LittleEndian.Uint64(rec[1:])
	setAt := binary.LittleEndian.Uint64(rec[9:])
	n := int(binary.LittleEndian.Uint16(rec[17:]))
	value := rec[recHeader:]
	if len(value) < 4*n {
		return nil, false
	}
	if c.cleared(gen) {
		return nil, false
	}
	for i := range n {
		// The mask keeps a slot in range whatever the ring holds.
		if c.stamped(gen, setAt, binary.LittleEndian.Uint32(value[4*i:])&uint32(c.mask)) {
			return nil, false
		}
	}
	return value[4*n:], true
}

// join reads the parts of the record whose head is head; nil when one is
// missing or from another version of the record.
func (c *Bytes) join(key, head []byte) []byte {
	if len(head) < splitHeader {
		return nil
	}
	parts := int(binary.LittleEndian.Uint32(head[1:]))
	size := int(binary.LittleEndian.Uint32(head[5:]))
	sum := binary.LittleEndian.Uint64(head[9:])
	rec := make([]byte, 0, size)
	rec = append(rec, head[splitHeader:]...)
	pk := make([]byte, 0, len(key)+12)
	for i := 1; i < parts && len(rec) <= size; i++ {
		part, err := c.fc.Get(partKey(pk[:0], key, i))
		if err != nil {
			return nil
		}
		rec = append(rec, part...)
	}
	if len(rec) != size || xxhash.Sum64(rec) != sum {
		return nil
	}
	return rec
}

// partKey is the key of part i of a record stored under key: a NUL, which
// no request target holds, then the part's number.
func partKey(dst, key []byte, i int) []byte {
	dst = append(dst, key...)
	dst = append(dst, 0, 'p')
	return strconv.AppendInt(dst, int64(i), 10)
}

// Set stores value under key with its tags, unless a purge of one of its
// tags (or a Clear) happened since generation gen. It reports whether the
// value was stored.
func (c *Bytes) Set(key, value []byte, tags []string, gen uint64) bool {
	setAt := c.clock.Load()
	var buf [16]uint32
	slots, ok := c.slots(buf[:0], tags, gen)
	if !ok || len(slots) > 1<<16-1 {
		return false
	}
	rec := make([]byte, recHeader, recHeader+4*len(slots)+len(value))
	rec[0] = recWhole
	binary.LittleEndian.PutUint64(rec[1:], gen)
	binary.LittleEndian.PutUint64(rec[9:], setAt)
	binary.LittleEndian.PutUint16(rec[17:], uint16(len(slots)))
	for _, s := range slots {
		rec = binary.LittleEndian.AppendUint32(rec, s)
	}
	rec = append(rec, value...)
	// A purge from here on stamps past gen (or setAt), which Get checks.
	// Entries do not expire: freshness is the caller's, and a stale entry
	// may still be revalidated or stand in for a failing origin.
	if len(key)+len(rec) <= c.maxEntry {
		return c.fc.Set(key, rec, 0) == nil
	}
	return c.split(key, rec)
}

// split stores rec in parts: the head under key, the others under their
// part keys. The head is written last, so that a Get finds the parts of
// the version it names (or a mismatch, which is a miss).
func (c *Bytes) split(key, rec []byte) bool {
	chunk := c.maxEntry - len(key) - 16 - splitHeader
	if chunk < 256 || len(rec) > 1<<32-1 {
		return false
	}
	parts := (len(rec) + chunk - 1) / chunk
	pk := make([]byte, 0, len(key)+12)
	for i := 1; i < parts; i++ {
		part := rec[i*chunk : min((i+1)*chunk, len(rec))]
		if c.fc.Set(partKey(pk[:0], key, i), part, 0) != nil {
			return false
		}
	}
	head := make([]byte, splitHeader, splitHeader+chunk)
	head[0] = recSplit
	binary.LittleEndian.PutUint32(head[1:], uint32(parts))
	binary.LittleEndian.PutUint32(head[5:], uint32(len(rec)))
	binary.LittleEndian.PutUint64(head[9:], xxhash.Sum64(rec))
	head = append(head, rec[:chunk]...)
	return c.fc.Set(key, head, 0) == nil
}

// Clear drops everything, and refuses the fills that started before.
func (c *Bytes) Clear() { c.clear(c.fc.Clear) }

// Len is the number of entries stored, parts of long values counted apart.
func (c *Bytes) Len() int64 { return c.fc.EntryCount() }
