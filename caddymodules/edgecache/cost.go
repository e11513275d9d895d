// What a stored entry costs: the bound the cache's max_bytes counts in.

package edgecache

import (
	"strings"
	"unsafe"
)

// Per-object overheads of the Go structures an entry lives in, measured by
// TestCostBoundsHeap (which fails when the costs fall below what the heap
// really grows by):
const (
	// entryOverhead: the entry struct with its per-second values, 64
	// bytes that were the header map's fixed part before the fields were
	// packed (kept as a margin: TestCostBoundsHeap measures 1.03× with
	// it), the tagcache item and ristretto's slot for it, rounded up to
	// allocation size classes.
	entryOverhead = int64(unsafe.Sizeof(entry{})) + int64(unsafe.Sizeof(hitValues{})) + 64 + 64 + 288
	// fieldSpanSize: one field in the packed list (fields.go): where its
	// name is and which values are its.
	fieldSpanSize = int64(unsafe.Sizeof(fieldSpan{}))
	// spanSize: one value's place in the packed block.
	spanSize = int64(unsafe.Sizeof(span{}))
	// allocSlack: what rounding one of the three allocations of packed
	// fields up to its size class adds, on average.
	allocSlack = 32
	// tagOverhead: one tag of the entry: its stamp slot in the tagcache
	// item (4 bytes), rounded up.
	tagOverhead = 8
)

// cost is what e holds in memory: its body (the stored coding's bytes, so
// each compressed variant counts its own), its key, its tags, its packed
// header fields and the overheads above. It is what
// max_bytes bounds, so that the soft memory limit derived from max_bytes
// (docs/edge-gateway.md, "Memory") holds.
func (e *entry) cost() int64 {
	n := entryOverhead + int64(len(e.body)) + int64(len(e.key)) + int64(len(e.uriTag)) + int64(len(e.upstreamStatus))
	n += int64(len(e.tags)) + tagOverhead*int64(strings.Count(e.tags, " "))
	if e.uriTag != "" {
		n += tagOverhead
	}
	n += e.header.cost()
	n += int64(len(e.vary)) * 16
	return n
}
