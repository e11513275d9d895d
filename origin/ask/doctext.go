package ask

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
)

// The index keeps no article text: at a million articles the sentences and
// their term ids would take gigabytes. An answer shows a handful of
// articles, so their text is read again when the answer is made (from the
// store, or from the corpus an index was built from in memory) and
// analysed then: splitting and scanning one article costs well under a
// millisecond, and words the index knows are looked up, not stemmed.

// Analysed texts are kept in a bounded cache (textCache), since the same
// articles come back in answer after answer (the most read, and the ones
// popular questions find) and analysing them took about a third of an
// answer's CPU (docs/decisions.md, "Analysed article texts are cached").
// An entry is used only for the same text analysed with the same
// vocabulary and entity names: it holds a fingerprint of the text it was
// made from and the textGen of the index that made it, and anything else
// is a miss. The store is still read for every answer, so a retracted or
// changed article is never quoted from the cache; a record whose stored
// bytes are those the cached analysis was made from is not even decoded.

// textCacheBytes bounds the cache of analysed texts: about 2,000 articles
// of 8 KB (an entry costs about twice its text: the sentences and their
// term ids).
const textCacheBytes = 32 << 20

// textCache is the process's cache of analysed texts, shared by every
// index (entries of another index's textGen are misses). ristretto keeps a
// hash of each key, not the key.
var textCache = sync.OnceValue(func() *ristretto.Cache[string, *cachedText] {
	c, err := ristretto.NewCache(&ristretto.Config[string, *cachedText]{
		NumCounters: 10 * textCacheBytes / 16384, MaxCost: textCacheBytes, BufferItems: 64,
	})
	if err != nil {
		panic(fmt.Sprintf("ask: the text cache's fixed configuration was refused: %v", err))
	}
	return c
})

// cachedText is one analysed article and what it was made from.
type cachedText struct {
	fingerprint uint64
	gen         uint64
	d           *doc
}

// textGens numbers the vocabularies and entity matchers docText reads: an
// index gets a new number when it is built and whenever a change adds to
// its vocabulary, so a word that had no id when a text was analysed and
// has one now makes that analysis a miss.
var textGens atomic.Uint64

func newTextGen() uint64 { return textGens.Add(1) }

// textSeed keys the fingerprints; it is the process's own, so two
// different texts cannot be made to collide from outside.
var textSeed = maphash.MakeSeed()

// storedFingerprint hashes a stored record's bytes: the fingerprint of an
// article read from the store, taken before (and instead of) decoding it.
// An engine reads from one source, so it never compares the two kinds.
func storedFingerprint(rec store.StoredArticle) uint64 { return maphash.Bytes(textSeed, rec) }

// fingerprint hashes what docText reads of an article held in memory.
func fingerprint(a *content.Article) uint64 {
	var h maphash.Hash
	h.SetSeed(textSeed)
	for _, s := range [...]string{a.Slug, a.Title, a.Dek, a.Body} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	maphash.WriteComparable(&h, a.PublishedAt.UnixNano())
	return h.Sum64()
}

// cost estimates the bytes an analysed text holds: its text, its term
// ids, its entities, a sentence header each and its span memo when full.
func (d *doc) cost() int64 {
	n := len(d.slug) + len(d.title) + len(d.url) + 4*len(d.ids) + 8*len(d.ents) + 128
	for _, s := range d.sentences {
		n += len(s.text) + 48 + spanMemoPerSentence*spanMemoEntryCost
	}
	return int64(n)
}

// cachedText returns the cached analysis of the article slug whose text
// has fingerprint fp, made by an index with ix's vocabulary, or nil.
func (ix *Index) cachedText(slug string, fp uint64) *doc {
	if t, ok := textCache().Get(slug); ok && t.fingerprint == fp && t.gen == ix.textGen {
		return t.d
	}
	return nil
}

// analyse analyses a and caches the result under fingerprint fp.
func (ix *Index) analyse(a *content.Article, fp uint64, st *stemmer) *doc {
	d := ix.docText(a, st)
	textCache().Set(a.Slug, &cachedText{fingerprint: fp, gen: ix.textGen, d: d}, d.cost())
	return d
}

// doc is the text of one article of an answer, analysed for quoting.
// Answers under way share it, so nothing in it changes once made but its
// span memo, which fills under its own lock. Answer code reads it through
// these fields:
//
//   - slug, title, url, published: what a result shows;
//   - sentences: the article's sentences in reading order (text.go);
//   - ids: the term ids of the sentences, one run per sentence, delimited
//     by each sentence's start and end (sentenceIDs, quote.go);
//   - ents: the countries and specs the sentences name.
type doc struct {
	slug      string
	title     string
	url       string
	published time.Time
	sentences []sentence
	ids       []int32
	ents      []sentEntity
	// spans memoises the answer spans of its sentences (spansOf).
	spans spanMemo
}

// spanMemo holds answerSpans' results for the sentences of one doc, by
// sentence and by the fields of the question answerSpans reads: a cached
// doc is quoted by answer after answer, and its sentences' spans were
// found again by the same regexps each time (about half of an answer's
// CPU once texts were cached). At most spanMemoPerSentence results a
// sentence on average are kept, a bound doc.cost counts, so the text
// cache's bound holds; past it, spans are found and not kept.
type spanMemo struct {
	mu sync.Mutex
	m  map[spanKey][]span
}

// spanKey is a sentence and the fields of a question answerSpans reads.
type spanKey struct {
	sent    int32
	kind    questionKind
	unit    unitKind
	group   bool
	obliged bool
}

// spanMemoPerSentence bounds a doc's memo at this many results a sentence;
// spanMemoEntryCost is the bytes doc.cost counts for each.
const (
	spanMemoPerSentence = 4
	spanMemoEntryCost   = 96
)

// spansOf returns answerSpans(asked, sentence i's text), memoised. The
// slice is shared: callers read it and never change it.
func (d *doc) spansOf(i int, asked question) []span {
	k := spanKey{sent: int32(i), kind: asked.kind, unit: asked.unit, group: asked.group, obliged: asked.obliged}
	d.spans.mu.Lock()
	sp, ok := d.spans.m[k]
	d.spans.mu.Unlock()
	if ok {
		return sp
	}
	sp = answerSpans(asked, d.sentences[i].text)
	d.spans.mu.Lock()
	if d.spans.m == nil {
		d.spans.m = map[spanKey][]span{}
	}
	if len(d.spans.m) < spanMemoPerSentence*len(d.sentences) {
		d.spans.m[k] = sp
	}
	d.spans.mu.Unlock()
	return sp
}

// sentEntity is a synthetic term (a country or spec) that sentence sent
// of a doc names.
type sentEntity struct {
	sent uint32
	id   int32
}

// load reads the text of every hit in one round trip and analyses it (or
// takes its cached analysis), dropping the hits whose article is no longer
// published (retracted since the snapshot was made). Articles are analysed
// on up to GOMAXPROCS goroutines: each is independent, and an answer shows
// up to 50.
func (ix *Index) load(ctx context.Context, hits []hit) ([]hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	slugs := make([]string, len(hits))
	for i, h := range hits {
		slugs[i] = ix.meta(h.doc).slug
	}
	sources, err := ix.source(ctx, slugs)
	if err != nil {
		return nil, fmt.Errorf("ask: reading %d articles: %w", len(slugs), err)
	}
	if len(sources) != len(hits) {
		return nil, fmt.Errorf("ask: reading %d articles: %d returned", len(slugs), len(sources))
	}
	// The cached analyses first; the rest are decoded (a retracted one is
	// dropped) and analysed.
	var missed []int
	articles := make([]*content.Article, len(hits))
	for i, src := range sources {
		if !src.found() {
			continue
		}
		if d := ix.cachedText(slugs[i], src.fingerprint); d != nil {
			hits[i].text = d
			continue
		}
		if articles[i], err = src.article(); err != nil {
			return nil, fmt.Errorf("ask: reading %q: %w", slugs[i], err)
		}
		if articles[i] != nil {
			missed = append(missed, i)
		}
	}
	var next atomic.Int32
	analyse := func() {
		st := newStemmer()
		for {
			k := int(next.Add(1)) - 1
			if k >= len(missed) {
				return
			}
			i := missed[k]
			hits[i].text = ix.analyse(articles[i], sources[i].fingerprint, st)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(missed)) - 1 {
		wg.Go(analyse)
	}
	analyse()
	wg.Wait()
	out := hits[:0]
	for _, h := range hits {
		if h.text != nil {
			out = append(out, h)
		}
	}
	return out, nil
}

// docText analyses an article for quoting, with the index's vocabulary: a
// word no indexed article has gets no id (no question term can match it).
func (ix *Index) docText(a *content.Article, st *stemmer) *doc {
	d := &doc{
		slug:      a.Slug,
		title:     a.Title,
		url:       ix.siteRoot + a.Path() + "/",
		published: a.PublishedAt.UTC(),
		sentences: articleSentences(a.Dek, a.Body),
	}
	// About one term in six bytes of English prose.
	d.ids = make([]int32, 0, (len(a.Dek)+len(a.Body))/6+8)
	var seq, raw []string
	for i := range d.sentences {
		s := &d.sentences[i]
		s.refersBack = s.quotable() && refersBack.MatchString(s.text)
		s.start = uint32(len(d.ids))
		seq, raw = seq[:0], raw[:0]
		named := false
		scanWords(s.text, func(w word) {
			id, ok := ix.surfaceID(w.norm)
			if !ok {
				id = -1
				if t := termOf(w, st.stem); t != "" {
					if tid, known := ix.termID(t); known {
						id = tid
					}
				}
			}
			if id >= 0 {
				d.ids = append(d.ids, id)
			}
			if !w.joined {
				seq, raw = append(seq, w.norm), append(raw, w.raw)
				if _, alias := ix.entities.byFirst[w.norm]; alias || (len(w.raw) <= 3 && ix.entities.codes[w.raw] != "") {
					named = true
				}
			}
		})
		s.end = uint32(len(d.ids))
		if named {
			for _, t := range ix.entities.match(seq, raw) {
				if id, ok := ix.termID(t); ok {
					d.ents = append(d.ents, sentEntity{sent: uint32(i), id: id})
				}
			}
		}
	}
	return d
}
