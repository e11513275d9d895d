// An entry as the cache stores it: one byte record, held in the store's
// ring buffers (internal/tagcache.Bytes) rather than as Go objects the
// collector marks (docs/decisions.md, "Edge cache storage").

package edgecache

import (
	"encoding/binary"
	"time"
	"unsafe"
)

// recordVersion starts every record, so that a change of the layout below
// reads an older record as absent instead of as garbage.
const recordVersion = 2

const (
	flagMarker byte = 1 << iota
	flagMustRevalidate
	flagLastMod
)

// marshal appends e's record to b: the version and flags, the body's
// length, the status, the times and durations, the strings, the Vary list,
// the packed header fields' offsets, the slot of dict holding the rest of
// the fields (0: none; headerdict.go), then the body to the end. A nil
// dict keeps every field in the record.
func (e *entry) marshal(b []byte, dict *headerDict) []byte {
	hdr, ref := e.header, uint32(0)
	if dict != nil {
		own, others := e.header.split()
		if ref = dict.intern(&others); ref != 0 {
			hdr = own
		}
	}
	var flags byte
	if e.marker {
		flags |= flagMarker
	}
	if e.mustRevalidate {
		flags |= flagMustRevalidate
	}
	if !e.lastMod.IsZero() {
		flags |= flagLastMod
	}
	b = append(b, recordVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(e.body)))
	b = binary.AppendUvarint(b, uint64(e.status))
	b = appendTime(b, e.respTime)
	if !e.lastMod.IsZero() {
		b = appendTime(b, e.lastMod)
	}
	for _, d := range [...]time.Duration{e.initialAge, e.lifetime, e.swr, e.sie} {
		b = binary.AppendVarint(b, int64(d))
	}
	for _, s := range [...]string{e.key, e.coding, e.etag, e.tags, e.uriTag, e.upstreamStatus, hdr.block} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(e.vary)))
	for _, v := range e.vary {
		b = appendString(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(hdr.list)))
	for _, f := range hdr.list {
		for _, n := range [...]uint32{f.name.at, f.name.n, f.first, f.count} {
			b = binary.AppendUvarint(b, uint64(n))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(hdr.values)))
	for _, v := range hdr.values {
		b = binary.AppendUvarint(b, uint64(v.at))
		b = binary.AppendUvarint(b, uint64(v.n))
	}
	b = binary.AppendUvarint(b, uint64(ref))
	return append(b, e.body...)
}

// recordSize is at most about the length of e's record (every field in
// it), to size its buffer.
func (e *entry) recordSize() int {
	n := 64 + len(e.key) + len(e.coding) + len(e.etag) + len(e.tags) + len(e.uriTag) +
		len(e.upstreamStatus) + len(e.header.block) + 4*5*len(e.header.list) + 2*5*len(e.header.values) + len(e.body)
	for _, v := range e.vary {
		n += 5 + len(v)
	}
	return n
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// unmarshalEntry reads a record made by marshal; nil when it is not one.
// The entry's body shares rec's memory, and so do its strings unless
// copyFields is set (they then share one copy of the part of rec before the
// body). rec must not change while they do: a hit copies the record once,
// out of the store, instead of once a field. dict is the dictionary the
// record was made with; a record naming a set it does not hold is not one.
func unmarshalEntry(rec []byte, copyFields bool, dict *headerDict) *entry {
	d := recordReader{rec: rec}
	if len(rec) < 2 || rec[0] != recordVersion {
		return nil
	}
	flags := rec[1]
	d.at = 2
	bodyAt := len(rec) - int(d.uvarint(uint64(len(rec))))
	if d.bad || bodyAt < d.at {
		return nil
	}
	if copyFields {
		d.strs = string(rec[:bodyAt])
	} else {
		d.strs = unsafe.String(unsafe.SliceData(rec), bodyAt)
	}
	e := &entry{marker: flags&flagMarker != 0, mustRevalidate: flags&flagMustRevalidate != 0}
	e.status = int(d.uvarint(999))
	e.respTime = d.time()
	if flags&flagLastMod != 0 {
		e.lastMod = d.time()
	}
	for _, p := range [...]*time.Duration{&e.initialAge, &e.lifetime, &e.swr, &e.sie} {
		*p = time.Duration(d.varint())
	}
	for _, p := range [...]*string{&e.key, &e.coding, &e.etag, &e.tags, &e.uriTag, &e.upstreamStatus, &e.header.block} {
		*p = d.str()
	}
	if n := d.count(1); n > 0 {
		e.vary = make([]string, n)
		for i := range e.vary {
			e.vary[i] = d.str()
		}
	}
	block := uint64(len(e.header.block))
	if n := d.count(4); n > 0 {
		e.header.list = make([]fieldSpan, n)
	}
	for i := range e.header.list {
		f := &e.header.list[i]
		f.name = span{uint32(d.uvarint(block)), 0}
		f.name.n = uint32(d.uvarint(block - uint64(f.name.at)))
		f.first, f.count = uint32(d.uvarint(1<<32-1)), uint32(d.uvarint(1<<32-1))
	}
	if n := d.count(2); n > 0 {
		e.header.values = make([]span, n)
	}
	for i := range e.header.values {
		v := &e.header.values[i]
		v.at = uint32(d.uvarint(block))
		v.n = uint32(d.uvarint(block - uint64(v.at)))
	}
	for _, f := range e.header.list {
		if uint64(f.first)+uint64(f.count) > uint64(len(e.header.values)) {
			return nil
		}
	}
	if ref := d.uvarint(dictSlots); ref != 0 {
		if e.header.shared = dict.lookup(ref); e.header.shared == nil {
			return nil
		}
	}
	if d.bad || d.at != bodyAt {
		return nil
	}
	e.body = rec[bodyAt:len(rec):len(rec)]
	return e
}

// recordReader reads a record's numbers and strings, remembering whether
// one ran past the end or past its bound.
type recordReader struct {
	rec []byte
	// strs is the part of rec before the body, or a copy of it, which the
	// strings read are cut from.
	strs string
	at   int
	bad  bool
}

// uvarint reads an unsigned number no larger than limit.
func (d *recordReader) uvarint(limit uint64) uint64 {
	v, n := binary.Uvarint(d.rec[min(d.at, len(d.rec)):])
	if n <= 0 || v > limit {
		d.bad = true
		return 0
	}
	d.at += n
	return v
}

func (d *recordReader) varint() int64 {
	v, n := binary.Varint(d.rec[min(d.at, len(d.rec)):])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.at += n
	return v
}

func (d *recordReader) time() time.Time {
	sec := d.varint()
	return time.Unix(sec, int64(d.uvarint(999_999_999)))
}

// count reads the length of a list whose items take at least itemSize
// bytes each, so that a bad record cannot make a large allocation.
func (d *recordReader) count(itemSize int) int {
	n := d.uvarint(uint64(len(d.rec)))
	if n > uint64(d.left()/itemSize) {
		d.bad = true
		return 0
	}
	return int(n)
}

// left is the number of bytes not read yet.
func (d *recordReader) left() int { return len(d.rec) - min(d.at, len(d.rec)) }

// str reads a string (see unmarshalEntry for the memory it shares).
func (d *recordReader) str() string {
	n := d.uvarint(uint64(len(d.rec)))
	if d.bad || n == 0 {
		return ""
	}
	if d.at+int(n) > len(d.strs) {
		d.bad = true
		return ""
	}
	s := d.strs[d.at : d.at+int(n)]
	d.at += int(n)
	return s
}
