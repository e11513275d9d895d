package ask

import (
	"math"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// The index is BM25F (Robertson and Zaragoza, "The Probabilistic Relevance
// Framework: BM25 and Beyond", 2009, §3.6): a term's frequencies in the
// fields of an article are weighted, length-normalised per field and summed
// into one pseudo-frequency, which is then saturated once with k1. Because
// the field lengths are known when the index is built, each posting stores
// the saturated pseudo-frequency w/(w+k1) directly, as a one-byte impact
// (postings.go), and a query only adds up idf·(k1+1)·impact over the
// postings of its terms. The average field lengths are estimated once per
// base build from a sample (averages); idf is computed at query time from
// the document frequencies of the segments, so it follows every change.

// Fields of an article, in the order of fieldWeight.
const (
	fieldTitle    = iota // the headline
	fieldDek             // the standfirst
	fieldTags            // tags and kicker
	fieldEntities        // synthetic country and spec terms, section name
	fieldBody            // the text
	numFields
)

// Ranking parameters. The title counts most: a headline names what an
// article is about; dek, tags and the editors' country and spec links are
// summaries too; the body says everything else once among many words.
// Short fields get a milder length normalisation (b) than the body.
var (
	fieldWeight = [numFields]float64{fieldTitle: 3, fieldDek: 1.5, fieldTags: 1.5, fieldEntities: 1.5, fieldBody: 1}
	fieldB      = [numFields]float64{fieldTitle: 0.5, fieldDek: 0.5, fieldTags: 0.5, fieldEntities: 0.5, fieldBody: 0.75}
)

const (
	// k1 saturates term frequency (the usual 1.2).
	k1 = 1.2
	// recencyWeight and recencyHalfLife make the boost mild: the newest
	// article scores at most 10% more than an old one of equal relevance,
	// and half of that after six months. Age is measured from the newest
	// article in the index, not from the clock, so an answer depends on the
	// corpus alone and is reproducible.
	recencyWeight   = 0.1
	recencyHalfLife = 182 * 24 * time.Hour
	// minSpecificity is the least total idf a question needs to score 100:
	// about that of one word found in a tenth of the articles. A question
	// made only of words every article uses ("invoice") matches them all
	// fully, but says too little for any of them to be a strong answer.
	minSpecificity = 2.0
)

// docMeta is what ranking keeps in memory of one article: its slug (for
// updates and stable ties), its publication time (recency and ties) and its
// language. The text is not kept: the few articles an answer shows are read
// again from the store when it is made (doctext.go).
type docMeta struct {
	slug      string
	lang      string
	published int64 // Unix nanoseconds, UTC
}

// segment is a run of indexed articles with their posting lists. An Index
// has an immutable base segment, built from the whole corpus, and a small
// delta segment rebuilt with every change (live.go).
type segment struct {
	docs   []docMeta
	bySlug map[string]uint32
	// lists are the posting lists by term id (the base's vocabulary);
	// byTerm holds them instead in a delta, which has few terms.
	lists  []postingList
	byTerm map[int32]*postingList
	// newestIn is the newest publication time of each run of boostRun
	// documents: the largest recency boost the run can have, a bound that
	// lets a search skip old articles when recency decides the top
	// (search.go). The base lists articles newest first, as the store does,
	// so the bound is tight.
	newestIn []int64
}

// boostRun is the number of documents newestIn bounds together.
const boostRun = 256

// index fills newestIn from docs.
func (s *segment) index() {
	s.newestIn = make([]int64, (len(s.docs)+boostRun-1)/boostRun)
	for i := range s.docs {
		s.newestIn[i/boostRun] = max(s.newestIn[i/boostRun], s.docs[i].published)
	}
}

// boostBound is the largest recency boost of the documents of s's run of
// boostRun that holds doc d, and the last document of that run.
func (ix *Index) boostBound(s *segment, d uint32) (float64, uint32) {
	r := d / boostRun
	if int(r) >= len(s.newestIn) {
		return maxBoost, endDoc
	}
	return ix.boost(s.newestIn[r]), (r+1)*boostRun - 1
}

// list returns the posting list of term id, nil when the segment has none.
func (s *segment) list(id int32) *postingList {
	if s == nil || id < 0 {
		return nil
	}
	if s.byTerm != nil {
		return s.byTerm[id]
	}
	if int(id) < len(s.lists) {
		return &s.lists[id]
	}
	return nil
}

// vocabulary maps terms to ids and normalised words to the term they
// index. The base's is built with it; terms first seen in later changes get
// the ids that follow, in a small vocabulary copied on every change that
// adds one.
type vocabulary struct {
	terms map[string]int32
	names []string
	// surface maps every normalised word seen to its term id (-1 for a stop
	// word), so quoting code finds a sentence's terms without stemming
	// again.
	surface map[string]int32
	// from is the id of names[0].
	from int32
}

// Index is a BM25F index of the published articles: an immutable snapshot,
// safe for concurrent use. A change makes a new snapshot that shares the
// base segment and the base vocabulary with the old one (see live.go).
type Index struct {
	base, delta *segment
	// vocab is the base's vocabulary; added holds terms first seen after
	// it was built.
	vocab, added *vocabulary
	// dead are base articles deleted or replaced by a delta article since
	// the base was built.
	dead map[uint32]struct{}
	// builtDead are the tombstones the build itself left (articles read
	// twice): a merge would not remove them.
	builtDead int
	// pending are the delta's articles as analysed, by slug, so the delta
	// is rebuilt with one more or one less.
	pending map[string]*deltaDoc
	// avg are the average field lengths the base was built with; delta
	// articles are weighted with them too.
	avg      [numFields]float64
	entities *entityMatcher
	synonyms *synonymTable
	// langs counts the live articles by language.
	langs map[string]int
	// newest is the newest publication time indexed (Unix nanoseconds):
	// recency is measured from it.
	newest int64
	// source reads an article's text for snippets and summaries.
	source   articleSource
	siteRoot string
	// seq is the engine's change counter when the base build began.
	seq uint64
	// textGen identifies vocab, added and entities for the cache of
	// analysed texts (doctext.go): it changes whenever they do.
	textGen uint64
}

// Corpus is what an index is built from: the published articles and the
// registries their country and spec links point into.
type Corpus struct {
	Articles  []*content.Article
	Countries []*content.Country
	Specs     []*content.Spec
	// Synonyms are the editors' groups of words that mean the same
	// (content/aliases.yaml's terms).
	Synonyms [][]string
}

// primaryLanguage returns the lowercase primary subtag of a BCP 47 tag
// ("en-GB" → "en"), "en" for an empty tag.
func primaryLanguage(tag string) string {
	p, _, _ := strings.Cut(tag, "-")
	p, _, _ = strings.Cut(p, "_")
	if p == "" {
		return "en"
	}
	return strings.ToLower(p)
}

// Len is the number of indexed articles.
func (ix *Index) Len() int { return len(ix.base.docs) - len(ix.dead) + len(ix.delta.docs) }

// Terms is the number of distinct terms indexed.
func (ix *Index) Terms() int { return len(ix.vocab.names) + len(ix.added.names) }

// termID returns the id of term t.
func (ix *Index) termID(t string) (int32, bool) {
	if id, ok := ix.vocab.terms[t]; ok {
		return id, true
	}
	id, ok := ix.added.terms[t]
	return id, ok
}

// surfaceID returns the term id of a normalised word (-1 for a stop
// word); ok is false for a word no indexed article has.
func (ix *Index) surfaceID(norm string) (int32, bool) {
	if id, ok := ix.vocab.surface[norm]; ok {
		return id, true
	}
	id, ok := ix.added.surface[norm]
	return id, ok
}

// termText returns the term of an id.
func (ix *Index) termText(id int32) string {
	if int(id) < len(ix.vocab.names) {
		return ix.vocab.names[id]
	}
	return ix.added.names[id-ix.added.from]
}

// docCount is the N of idf: every article in the segments, including base
// articles deleted since the base was built, as in df (see idfOf).
func (ix *Index) docCount() float64 { return float64(len(ix.base.docs) + len(ix.delta.docs)) }

// idfOf is the idf of term id. Its document frequency is counted from the
// segments' posting lists, so it follows every change without a rebuild;
// a base article deleted or replaced still counts until the next merge
// rebuilds the base (Lucene does the same until it merges segments), which
// moves an idf by one article in the whole corpus.
func (ix *Index) idfOf(id int32) float64 {
	df := 0.0
	if l := ix.base.list(id); l != nil {
		df += float64(l.df)
	}
	if l := ix.delta.list(id); l != nil {
		df += float64(l.df)
	}
	n := ix.docCount()
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// maxIDF is the idf of a term no article contains.
func (ix *Index) maxIDF() float64 {
	n := ix.docCount()
	return math.Log(1 + (n+0.5)/0.5)
}

// meta returns the metadata of a document of the snapshot: base documents
// first, then the delta's.
func (ix *Index) meta(d uint32) *docMeta {
	if nb := uint32(len(ix.base.docs)); d >= nb {
		return &ix.delta.docs[d-nb]
	}
	return &ix.base.docs[d]
}

// lookup returns the live document of slug.
func (ix *Index) lookup(slug string) (uint32, bool) {
	if d, ok := ix.delta.bySlug[slug]; ok {
		return uint32(len(ix.base.docs)) + d, true
	}
	d, ok := ix.base.bySlug[slug]
	if !ok {
		return 0, false
	}
	if _, gone := ix.dead[d]; gone {
		return 0, false
	}
	return d, true
}

// hasLanguage reports whether an indexed article is in language lang.
func (ix *Index) hasLanguage(lang string) bool { return ix.langs[lang] > 0 }

// contains reports whether document d contains term id.
func (ix *Index) contains(id int32, d uint32) bool {
	if nb := uint32(len(ix.base.docs)); d >= nb {
		l := ix.delta.list(id)
		return l != nil && l.contains(d-nb)
	}
	l := ix.base.list(id)
	return l != nil && l.contains(d)
}

// boost is the recency multiplier of an article published at published.
func (ix *Index) boost(published int64) float64 {
	age := float64(ix.newest - published)
	return 1 + recencyWeight*math.Exp2(-age/float64(recencyHalfLife))
}

// maxBoost is the largest boost: an upper bound for pruning.
const maxBoost = 1 + recencyWeight

// heapBytes is the memory the postings and document table hold, for
// benchmarks and the build log (maps are estimated).
func (ix *Index) heapBytes() int {
	n := 0
	for _, s := range []*segment{ix.base, ix.delta} {
		for i := range s.lists {
			n += s.lists[i].bytes()
		}
		for _, l := range s.byTerm {
			n += l.bytes()
		}
		n += cap(s.docs) * 40
		for i := range s.docs {
			n += len(s.docs[i].slug)
		}
	}
	return n
}

// qterm is one distinct term of a question.
type qterm struct {
	text string
	// id is the term's id, or -1 when no article contains it.
	id  int32
	idf float64
	// synonymOf is 1 + the position of the question's term this one stands
	// in for (a synonym added by expand, synonyms.go), 0 for a term of the
	// question itself.
	synonymOf int
	// replaced is true for a word no article contains whose synonym
	// stands in for it (expand, synonyms.go): the question's subject is
	// then in the corpus after all.
	replaced bool
}

// query is an analysed question.
type query struct {
	terms []qterm
	// pos maps a known term id to its position in terms.
	pos map[int32]int
	// idfSum is the sum of the terms' idf; bestScore is the score of an
	// article that matched every term as strongly as BM25 allows.
	idfSum    float64
	bestScore float64
	// entities is true when the question names a country or a spec.
	entities bool
	// stats, when not nil, counts the search's work (benchmarks).
	stats *searchStats
}

// parse analyses a question: its words as the index sees them, plus the
// synthetic terms of the countries and specifications it names.
func (ix *Index) parse(text string) *query {
	q := &query{pos: map[int32]int{}}
	maxIDF := ix.maxIDF()
	var seq, raw []string
	var st *stemmer
	seen := map[string]bool{}
	add := func(t string, id int32) {
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		idf := maxIDF
		if id >= 0 {
			idf = ix.idfOf(id)
			q.pos[id] = len(q.terms)
		}
		q.terms = append(q.terms, qterm{text: t, id: id, idf: idf})
	}
	scanWords(text, func(w word) {
		if !w.joined {
			seq = append(seq, w.norm)
			raw = append(raw, w.raw)
		}
		if id, ok := ix.surfaceID(w.norm); ok {
			if id >= 0 {
				add(ix.termText(id), id)
			}
			return
		}
		if st == nil {
			st = newStemmer()
		}
		t := termOf(w, st.stem)
		id, ok := ix.termID(t)
		if !ok {
			id = -1
		}
		add(t, id)
	})
	for _, t := range ix.entities.match(seq, raw) {
		id, ok := ix.termID(t)
		if !ok {
			// A country or spec no article is filed under adds nothing,
			// and should not lower the scores of those that match.
			continue
		}
		add(t, id)
		q.entities = true
	}
	for _, t := range q.terms {
		q.idfSum += t.idf
	}
	q.bestScore = max(q.idfSum, minSpecificity) * (k1 + 1)
	return q
}

// hit is one scored article.
type hit struct {
	doc   uint32
	score float64
	// norm is the score on the 0–100 scale of docs/decisions.md (ask).
	norm int
	// text is the article's text, read when the hit is kept (Index.load).
	text *doc
}

// normalize100 puts a score on the 0–100 scale: the share of the best score
// a question allows (every term matched, BM25's saturation reached),
// rounded. It says how completely and how strongly an article answers the
// words of the question, so it can be compared across questions; a vague
// question (see minSpecificity) cannot score high.
func normalize100(score, best float64) int {
	if best <= 0 {
		return 0
	}
	return int(math.Round(min(100, 100*score/best)))
}
