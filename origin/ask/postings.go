package ask

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
)

// Postings are stored compressed, in blocks of up to blockSize articles in
// document order. A block holds, per posting, the gap to the previous
// article as a uvarint (none for the block's first, whose id is in the
// block's header) and one byte of impact. The header also keeps the block's
// last article and its largest impact, so a top-k search skips whole blocks
// that cannot reach the current threshold without decoding them (block-max
// pruning: Ding and Suel, "Faster top-k document retrieval using block-max
// indexes", SIGIR 2011). About 2.2 bytes a posting against 8 for a plain
// (uint32, float32) pair.

// blockSize is the most postings a block holds (it fits block.n).
const blockSize = 128

// endDoc is a cursor's document once its list is exhausted.
const endDoc = math.MaxUint32

// Impacts are BM25's saturated term frequency w/(w+k1), in (0, 1),
// quantised to a byte: score-at-a-time and impact-ordered engines store
// 8-bit impacts with no measurable loss of effectiveness (Anh and Moffat,
// "Simplified similarity scoring using term ranks", SIGIR 2005; Crane et
// al., "A comparison of document-at-a-time and score-at-a-time query
// evaluation", WSDM 2017). Every stored impact is at least 1.
func impactOf(w float64) uint8 {
	q := math.Round(255 * w / (w + k1))
	return uint8(min(255, max(1, q)))
}

// saturation is the inverse of impactOf: BM25's w/(w+k1) for an impact.
func saturation(imp uint8) float32 { return float32(imp) / 255 }

// postingBlock is the header of one block of a posting list.
type postingBlock struct {
	first, last uint32 // the block's first and last article
	off         uint32 // where its postings start in the list's data
	n           uint8  // postings in the block, 1 to blockSize
	max         uint8  // the largest impact in the block
}

// postingList is the articles that contain one term, in document order.
type postingList struct {
	blocks []postingBlock
	data   []byte
	// df is the number of postings.
	df int32
	// max is the largest impact of the list.
	max uint8
}

// add appends a posting; doc must be above every doc added before.
func (pl *postingList) add(doc uint32, imp uint8) {
	pl.df++
	pl.max = max(pl.max, imp)
	if k := len(pl.blocks); k > 0 && pl.blocks[k-1].n < blockSize {
		b := &pl.blocks[k-1]
		pl.data = binary.AppendUvarint(pl.data, uint64(doc-b.last))
		pl.data = append(pl.data, imp)
		b.last, b.n, b.max = doc, b.n+1, max(b.max, imp)
		return
	}
	pl.blocks = append(pl.blocks, postingBlock{first: doc, last: doc, off: uint32(len(pl.data)), n: 1, max: imp})
	pl.data = append(pl.data, imp)
}

// appendList appends the postings of o, whose articles all come after
// those of pl. Blocks are self-contained, so o's are copied as they are (a
// short last block of pl stays short).
func (pl *postingList) appendList(o *postingList) {
	if o.df == 0 {
		return
	}
	base := uint32(len(pl.data))
	for _, b := range o.blocks {
		b.off += base
		pl.blocks = append(pl.blocks, b)
	}
	pl.data = append(pl.data, o.data...)
	pl.df += o.df
	pl.max = max(pl.max, o.max)
}

// bytes is the memory the list holds.
func (pl *postingList) bytes() int { return cap(pl.blocks)*16 + cap(pl.data) }

// contains reports whether doc is in the list. The block that may hold
// it is found by binary search on the headers' last articles, and only
// that block's gaps are read: the answer asks this of every question term
// for every article it shows, and the lists of common terms have
// thousands of blocks at a million articles.
func (pl *postingList) contains(doc uint32) bool {
	bi, _ := slices.BinarySearchFunc(pl.blocks, doc, func(b postingBlock, doc uint32) int { return cmp.Compare(b.last, doc) })
	if bi == len(pl.blocks) || pl.blocks[bi].first > doc {
		return false
	}
	b := &pl.blocks[bi]
	data := pl.data[b.off:]
	d, p := b.first, 1
	for k := 1; k < int(b.n) && d < doc; k++ {
		gap, w := binary.Uvarint(data[p:])
		d += uint32(gap)
		p += w + 1
	}
	return d == doc
}

// cursor walks a posting list. The zero cursor is exhausted.
type cursor struct {
	pl *postingList
	// bi is the block decoded into docs and imps; i the position in it.
	bi, i, n int
	doc      uint32
	imp      uint8
	// sb is the block a shallow move last found (blockAt), never behind bi.
	sb   int
	docs [blockSize]uint32
	imps [blockSize]uint8
}

// reset points c at the first posting of pl.
func (c *cursor) reset(pl *postingList) {
	c.pl, c.bi, c.sb = pl, 0, 0
	if pl == nil || len(pl.blocks) == 0 {
		c.doc, c.n, c.i = endDoc, 0, 0
		return
	}
	c.decode(0)
}

// decode loads block bi and moves to its first posting.
func (c *cursor) decode(bi int) {
	b := &c.pl.blocks[bi]
	data := c.pl.data[b.off:]
	d := b.first
	c.docs[0], c.imps[0] = d, data[0]
	p := 1
	for k := 1; k < int(b.n); k++ {
		// Most gaps take one byte: read those without binary.Uvarint's
		// loop (decoding is a fifth of a search's time).
		if g := data[p]; g < 0x80 {
			d += uint32(g)
			p++
		} else {
			gap, w := binary.Uvarint(data[p:])
			d += uint32(gap)
			p += w
		}
		c.docs[k], c.imps[k] = d, data[p]
		p++
	}
	c.bi, c.i, c.n = bi, 0, int(b.n)
	c.sb = max(c.sb, bi)
	c.doc, c.imp = c.docs[0], c.imps[0]
}

// next moves to the next posting and returns its document.
func (c *cursor) next() uint32 {
	if c.doc == endDoc {
		return endDoc
	}
	c.i++
	if c.i < c.n {
		c.doc, c.imp = c.docs[c.i], c.imps[c.i]
		return c.doc
	}
	if c.bi+1 >= len(c.pl.blocks) {
		c.doc = endDoc
		return endDoc
	}
	c.decode(c.bi + 1)
	return c.doc
}

// seek moves to the first posting at or after doc and returns its
// document. Blocks that end before doc are skipped undecoded.
func (c *cursor) seek(doc uint32) uint32 {
	if c.doc >= doc {
		return c.doc
	}
	if c.pl.blocks[c.bi].last < doc {
		bi := c.bi + 1
		for bi < len(c.pl.blocks) && c.pl.blocks[bi].last < doc {
			bi++
		}
		if bi == len(c.pl.blocks) {
			c.doc = endDoc
			return endDoc
		}
		c.decode(bi)
	}
	for c.docs[c.i] < doc {
		c.i++
	}
	c.doc, c.imp = c.docs[c.i], c.imps[c.i]
	return c.doc
}

// blockAt returns, without decoding, the largest impact the list can have
// at doc and the last document to which that bound applies: the header of
// the block that covers doc, or 0 up to the start of the next block when
// doc falls in a gap between blocks.
func (c *cursor) blockAt(doc uint32) (maxImp uint8, until uint32) {
	if c.pl == nil || c.doc == endDoc {
		return 0, endDoc
	}
	bs := c.pl.blocks
	for c.sb < len(bs) && bs[c.sb].last < doc {
		c.sb++
	}
	if c.sb == len(bs) {
		return 0, endDoc
	}
	b := &bs[c.sb]
	if b.first > doc {
		return 0, b.first - 1
	}
	return b.max, b.last
}
