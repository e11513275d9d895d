package ask

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// The index is BM25F (Robertson and Zaragoza, "The Probabilistic Relevance
// Framework: BM25 and Beyond", 2009, §3.6): a term's frequencies in the
// fields of an article are weighted, length-normalised per field and summed
// into one pseudo-frequency, which is then saturated once with k1. Because
// the field lengths are known when the index is built, each posting stores
// that pseudo-frequency directly and a query only adds up
// idf·(k1+1)·w/(w+k1) over the postings of its terms.

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

// doc is one indexed article.
type doc struct {
	slug      string
	title     string
	url       string
	published time.Time
	// lang is the primary language subtag of the article's locale.
	lang string
	// boost is the recency multiplier.
	boost     float64
	sentences []sentence
}

// posting is one article containing a term, with the term's BM25F
// pseudo-frequency there.
type posting struct {
	doc uint32
	w   float32
}

// Index is an immutable BM25F index of the published articles. It is safe
// for concurrent use; the engine replaces it whole when content changes.
type Index struct {
	docs   []doc
	bySlug map[string]uint32
	// terms maps a term to its id; names, postings and idf are indexed by
	// id.
	terms    map[string]int32
	names    []string
	postings [][]posting
	idf      []float64
	// surface maps every normalised word seen at build time to its term id
	// (-1 for a stop word), so quoting code finds a sentence's terms without
	// stemming again.
	surface  map[string]int32
	entities *entityMatcher
	langs    map[string]bool
	// maxIDF is the idf of a term no article contains.
	maxIDF float64
	// seq is the engine's change counter when the build began.
	seq uint64
	// scratch holds score arrays for reuse across queries.
	scratch sync.Pool
}

// Corpus is what an index is built from: the published articles and the
// registries their country and spec links point into.
type Corpus struct {
	Articles  []*content.Article
	Countries []*content.Country
	Specs     []*content.Spec
}

type rawPosting struct {
	doc uint32
	tf  [numFields]uint16
}

type builder struct {
	ix      *Index
	st      *stemmer
	counts  [][numFields]uint16
	touched []int32
	raw     [][]rawPosting
	lens    [][numFields]uint32
}

// buildIndex indexes c. siteRoot makes the articles' absolute URLs.
func buildIndex(c Corpus, siteRoot string) *Index {
	ix := &Index{
		bySlug:   make(map[string]uint32, len(c.Articles)),
		terms:    map[string]int32{},
		surface:  map[string]int32{},
		entities: newEntityMatcher(c.Countries, c.Specs),
		langs:    map[string]bool{},
	}
	b := &builder{ix: ix, st: newStemmer()}
	var newest time.Time
	for _, a := range c.Articles {
		if a.PublishedAt.After(newest) {
			newest = a.PublishedAt
		}
	}
	for _, a := range c.Articles {
		if _, dup := ix.bySlug[a.Slug]; dup {
			continue
		}
		id := uint32(len(ix.docs))
		ix.bySlug[a.Slug] = id
		d := doc{
			slug:      a.Slug,
			title:     a.Title,
			url:       siteRoot + a.Path() + "/",
			published: a.PublishedAt.UTC(),
			lang:      primaryLanguage(a.Locale),
			sentences: articleSentences(a.Dek, a.Body),
		}
		age := newest.Sub(a.PublishedAt)
		d.boost = 1 + recencyWeight*math.Exp2(-float64(age)/float64(recencyHalfLife))
		ix.langs[d.lang] = true

		var lens [numFields]uint32
		b.addText(fieldTitle, a.Title, &lens)
		b.addText(fieldDek, a.Dek, &lens)
		b.addText(fieldTags, strings.Join(a.Tags, " ")+" "+a.Kicker, &lens)
		for _, cc := range a.Countries {
			b.addTerm(fieldEntities, countryTerm(strings.ToLower(cc)), &lens)
		}
		for _, s := range a.Specs {
			b.addTerm(fieldEntities, specTerm(s), &lens)
		}
		b.addText(fieldEntities, sectionWords[a.Section], &lens)
		for _, s := range d.sentences {
			if s.kind != kindDek {
				b.addText(fieldBody, s.text, &lens)
			}
		}
		b.lens = append(b.lens, lens)
		for _, t := range b.touched {
			b.raw[t] = append(b.raw[t], rawPosting{doc: id, tf: b.counts[t]})
			b.counts[t] = [numFields]uint16{}
		}
		b.touched = b.touched[:0]
		ix.docs = append(ix.docs, d)
	}
	b.finish()
	n := len(ix.docs)
	ix.scratch.New = func() any { return &scratch{scores: make([]float32, n)} }
	return ix
}

func (b *builder) termID(t string) int32 {
	id, ok := b.ix.terms[t]
	if !ok {
		id = int32(len(b.raw))
		b.ix.terms[t] = id
		b.raw = append(b.raw, nil)
		b.counts = append(b.counts, [numFields]uint16{})
	}
	return id
}

// surfaceID returns the term id of a word, stemming each distinct word once.
func (b *builder) surfaceID(w word) int32 {
	if id, ok := b.ix.surface[w.norm]; ok {
		return id
	}
	id := int32(-1)
	if t := termOf(w, b.st.stem); t != "" {
		id = b.termID(t)
	}
	b.ix.surface[w.norm] = id
	return id
}

func (b *builder) addText(field int, text string, lens *[numFields]uint32) {
	scanWords(text, func(w word) {
		if id := b.surfaceID(w); id >= 0 {
			b.count(id, field, lens)
		}
	})
}

func (b *builder) addTerm(field int, term string, lens *[numFields]uint32) {
	b.count(b.termID(term), field, lens)
}

func (b *builder) count(id int32, field int, lens *[numFields]uint32) {
	c := &b.counts[id]
	if *c == ([numFields]uint16{}) {
		b.touched = append(b.touched, id)
	}
	if c[field] < math.MaxUint16 {
		c[field]++
	}
	lens[field]++
}

// finish turns the raw counts into BM25F pseudo-frequencies, now that the
// average field lengths are known, and computes each term's idf.
func (b *builder) finish() {
	ix := b.ix
	n := float64(len(ix.docs))
	var avg [numFields]float64
	for _, l := range b.lens {
		for f := range numFields {
			avg[f] += float64(l[f])
		}
	}
	for f := range numFields {
		avg[f] /= max(n, 1)
		if avg[f] == 0 {
			avg[f] = 1
		}
	}
	total := 0
	for _, list := range b.raw {
		total += len(list)
	}
	all := make([]posting, total)
	ix.postings = make([][]posting, len(b.raw))
	ix.idf = make([]float64, len(b.raw))
	for t, list := range b.raw {
		df := float64(len(list))
		ix.idf[t] = math.Log(1 + (n-df+0.5)/(df+0.5))
		ps := all[:len(list):len(list)]
		all = all[len(list):]
		for i, rp := range list {
			l := &b.lens[rp.doc]
			w := 0.0
			for f := range numFields {
				if rp.tf[f] > 0 {
					w += fieldWeight[f] * float64(rp.tf[f]) / (1 - fieldB[f] + fieldB[f]*float64(l[f])/avg[f])
				}
			}
			ps[i] = posting{doc: rp.doc, w: float32(w)}
		}
		ix.postings[t] = ps
		b.raw[t] = nil
	}
	ix.names = make([]string, len(b.raw))
	for t, id := range ix.terms {
		ix.names[id] = t
	}
	ix.maxIDF = math.Log(1 + (n+0.5)/0.5)
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
func (ix *Index) Len() int { return len(ix.docs) }

// qterm is one distinct term of a question.
type qterm struct {
	text string
	// id is the term's id, or -1 when no article contains it.
	id  int32
	idf float64
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
}

// parse analyses a question: its words as the index sees them, plus the
// synthetic terms of the countries and specifications it names.
func (ix *Index) parse(text string) *query {
	q := &query{pos: map[int32]int{}}
	var seq, raw []string
	var st *stemmer
	seen := map[string]bool{}
	add := func(t string, id int32) {
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		idf := ix.maxIDF
		if id >= 0 {
			idf = ix.idf[id]
			q.pos[id] = len(q.terms)
		}
		q.terms = append(q.terms, qterm{text: t, id: id, idf: idf})
	}
	scanWords(text, func(w word) {
		if !w.joined {
			seq = append(seq, w.norm)
			raw = append(raw, w.raw)
		}
		if id, ok := ix.surface[w.norm]; ok {
			if id >= 0 {
				add(ix.names[id], id)
			}
			return
		}
		if st == nil {
			st = newStemmer()
		}
		t := termOf(w, st.stem)
		id, ok := ix.terms[t]
		if !ok {
			id = -1
		}
		add(t, id)
	})
	for _, t := range ix.entities.match(seq, raw) {
		id, ok := ix.terms[t]
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
	// norm is the score on the 0–100 scale of D22.
	norm int
}

type scratch struct {
	scores  []float32
	touched []uint32
}

// search scores every article that contains a term of q and returns the
// best limit of those accept lets through, best first. Ties go to the newer
// article, then to the slug that sorts first, so answers are stable.
func (ix *Index) search(ctx context.Context, q *query, accept func(d uint32) bool, limit int) ([]hit, error) {
	if limit <= 0 || len(ix.docs) == 0 {
		return nil, nil
	}
	sc := ix.scratch.Get().(*scratch)
	defer func() {
		for _, d := range sc.touched {
			sc.scores[d] = 0
		}
		sc.touched = sc.touched[:0]
		ix.scratch.Put(sc)
	}()
	for _, t := range q.terms {
		if t.id < 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f := float32(t.idf * (k1 + 1))
		for _, p := range ix.postings[t.id] {
			if sc.scores[p.doc] == 0 {
				sc.touched = append(sc.touched, p.doc)
			}
			sc.scores[p.doc] += f * p.w / (p.w + k1)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	better := func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		da, db := &ix.docs[a.doc], &ix.docs[b.doc]
		if c := db.published.Compare(da.published); c != 0 {
			return c
		}
		return strings.Compare(da.slug, db.slug)
	}
	// Keep the best limit in a small sorted slice: limit is at most 50.
	top := make([]hit, 0, limit+1)
	for _, d := range sc.touched {
		if accept != nil && !accept(d) {
			continue
		}
		h := hit{doc: d, score: float64(sc.scores[d]) * ix.docs[d].boost}
		if len(top) == limit && better(h, top[len(top)-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, h, better)
		top = slices.Insert(top, i, h)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	for i := range top {
		top[i].norm = normalize100(top[i].score, q.bestScore)
	}
	return top, nil
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
