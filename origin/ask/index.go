package ask

import (
	"cmp"
	"context"
	"math"
	"runtime"
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
	// ids are the term ids of the sentences, one run per sentence; ents
	// are the countries and specs the sentences name (see sentEntity).
	// Snippets and summaries score sentences from these without analysing
	// text again.
	ids  []int32
	ents []sentEntity
}

// sentEntity is a synthetic term (a country or spec) that sentence sent
// of a doc names.
type sentEntity struct {
	sent uint32
	id   int32
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
	synonyms *synonymTable
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
	// Synonyms are the editors' groups of words that mean the same
	// (content/aliases.yaml's terms).
	Synonyms [][]string
}

// Building runs in two phases. Analysis (splitting, normalising, stemming)
// is most of the work and needs no shared state, so the articles are cut
// into one contiguous share per CPU and each share is analysed on its own,
// into term ids of a vocabulary local to the share. The merge then maps the
// local vocabularies onto one, in share order, and counts the postings.
// Term ids therefore do not depend on timing, and scores never depend on
// term ids.

// analysed is one article after analysis: its terms per field as ids of
// its share's vocabulary. The dek and body fields are the doc's sentence
// ids, kept in the doc itself.
type analysed struct {
	title, tags, entities []int32
}

// share analyses a contiguous run of articles.
type share struct {
	st       *stemmer
	entities *entityMatcher
	surface  map[string]surface // normalised word → what it is
	ids      map[string]int32   // term → local id
	terms    []string           // local id → term
	docs     []analysed
	// lo and hi delimit the share's articles.
	lo, hi int
	// seq and raw collect a sentence's words for entity matching.
	seq, raw []string
}

// surface is what a normalised word is: its local term id (-1 for none) and
// whether an entity alias starts with it.
type surface struct {
	id    int32
	alias bool
}

func (sh *share) id(t string) int32 {
	id, ok := sh.ids[t]
	if !ok {
		id = int32(len(sh.terms))
		sh.ids[t] = id
		sh.terms = append(sh.terms, t)
	}
	return id
}

// text appends the local term ids of text to dst. It reports whether the
// text may name an entity: a word that starts an alias, or a word in
// capitals that may be a country code.
func (sh *share) text(dst []int32, text string, words bool) ([]int32, bool) {
	named := false
	if words {
		sh.seq, sh.raw = sh.seq[:0], sh.raw[:0]
	}
	scanWords(text, func(w word) {
		sf, ok := sh.surface[w.norm]
		if !ok {
			sf.id = -1
			if t := termOf(w, sh.st.stem); t != "" {
				sf.id = sh.id(t)
			}
			_, sf.alias = sh.entities.byFirst[w.norm]
			sh.surface[w.norm] = sf
		}
		if sf.id >= 0 {
			dst = append(dst, sf.id)
		}
		if words && !w.joined {
			sh.seq, sh.raw = append(sh.seq, w.norm), append(sh.raw, w.raw)
			if sf.alias || (len(w.raw) <= 3 && sh.entities.codes[w.raw] != "") {
				named = true
			}
		}
	})
	return dst, named
}

func (sh *share) analyse(a *content.Article, d *doc) {
	var out analysed
	out.title, _ = sh.text(nil, a.Title, false)
	out.tags, _ = sh.text(nil, strings.Join(a.Tags, " "), false)
	out.tags, _ = sh.text(out.tags, a.Kicker, false)
	var ent []int32
	for _, cc := range a.Countries {
		ent = append(ent, sh.id(countryTerm(strings.ToLower(cc))))
	}
	for _, sp := range a.Specs {
		ent = append(ent, sh.id(specTerm(sp)))
	}
	out.entities, _ = sh.text(ent, sectionWords[a.Section], false)
	// About one term in six bytes of English prose.
	d.ids = make([]int32, 0, (len(a.Dek)+len(a.Body))/6+8)
	for i := range d.sentences {
		s := &d.sentences[i]
		s.start = uint32(len(d.ids))
		var named bool
		d.ids, named = sh.text(d.ids, s.text, true)
		s.end = uint32(len(d.ids))
		if named {
			for _, t := range sh.entities.match(sh.seq, sh.raw) {
				d.ents = append(d.ents, sentEntity{sent: uint32(i), id: sh.id(t)})
			}
		}
	}
	if cap(d.ids) > len(d.ids)+len(d.ids)/4 {
		d.ids = append([]int32(nil), d.ids...) // the estimate was generous
	}
	sh.docs = append(sh.docs, out)
}

// builder counts term frequencies one article at a time.
type builder struct {
	counts  [][numFields]uint16 // by term id, zero between articles
	touched []int32             // the terms counted for this article
}

// buildIndex indexes c. siteRoot makes the articles' absolute URLs.
func buildIndex(c Corpus, siteRoot string) *Index {
	ix := &Index{
		bySlug:   make(map[string]uint32, len(c.Articles)),
		entities: newEntityMatcher(c.Countries, c.Specs),
		synonyms: newSynonymTable(c.Synonyms),
		langs:    map[string]bool{},
	}
	var newest time.Time
	for _, a := range c.Articles {
		if a.PublishedAt.After(newest) {
			newest = a.PublishedAt
		}
	}
	var articles []*content.Article
	for _, a := range c.Articles {
		if _, dup := ix.bySlug[a.Slug]; dup {
			continue
		}
		ix.bySlug[a.Slug] = uint32(len(articles))
		articles = append(articles, a)
	}
	ix.docs = make([]doc, len(articles))

	// Analysis, one share per CPU.
	n := max(1, min(runtime.GOMAXPROCS(0), len(articles)/256))
	shares := make([]*share, n)
	var wg sync.WaitGroup
	for k := range shares {
		// Sized for an archive's vocabulary, so the maps rarely grow.
		guess := 1024 + 8*len(articles)/n
		sh := &share{st: newStemmer(), entities: ix.entities, surface: make(map[string]surface, guess), ids: make(map[string]int32, guess),
			lo: k * len(articles) / n, hi: (k + 1) * len(articles) / n}
		shares[k] = sh
		wg.Go(func() {
			for i := sh.lo; i < sh.hi; i++ {
				a := articles[i]
				d := &ix.docs[i]
				*d = doc{
					slug:      a.Slug,
					title:     a.Title,
					url:       siteRoot + a.Path() + "/",
					published: a.PublishedAt.UTC(),
					lang:      primaryLanguage(a.Locale),
					sentences: articleSentences(a.Dek, a.Body),
				}
				age := newest.Sub(a.PublishedAt)
				d.boost = 1 + recencyWeight*math.Exp2(-float64(age)/float64(recencyHalfLife))
				sh.analyse(a, d)
			}
		})
	}
	wg.Wait()

	// Merge, in share order: one vocabulary, global term ids everywhere.
	words, terms := 0, 0
	for _, sh := range shares {
		words += len(sh.surface)
		terms += len(sh.terms)
	}
	ix.surface = make(map[string]int32, words)
	ix.terms = make(map[string]int32, terms)
	var all []*analysed
	for _, sh := range shares {
		global := make([]int32, len(sh.terms))
		for lid, t := range sh.terms {
			id, ok := ix.terms[t]
			if !ok {
				id = int32(len(ix.names))
				ix.terms[t] = id
				ix.names = append(ix.names, t)
			}
			global[lid] = id
		}
		for w, sf := range sh.surface {
			if _, ok := ix.surface[w]; !ok {
				if sf.id >= 0 {
					ix.surface[w] = global[sf.id]
				} else {
					ix.surface[w] = -1
				}
			}
		}
		for k := range sh.docs {
			ad := &sh.docs[k]
			for _, ids := range [][]int32{ad.title, ad.tags, ad.entities} {
				for i, lid := range ids {
					ids[i] = global[lid]
				}
			}
			all = append(all, ad)
		}
		for i := sh.lo; i < sh.hi; i++ {
			d := &ix.docs[i]
			for k, lid := range d.ids {
				d.ids[k] = global[lid]
			}
			for k := range d.ents {
				d.ents[k].id = global[d.ents[k].id]
			}
		}
	}
	for i := range ix.docs {
		ix.langs[ix.docs[i].lang] = true
	}
	finish(ix, all)
	nd := len(ix.docs)
	ix.scratch.New = func() any { return &scratch{scores: make([]float32, nd)} }
	return ix
}

// finish counts the postings of every article, all term ids now global,
// and stores them with their BM25F pseudo-frequencies. The first pass
// finds each term's document frequency and the fields' average lengths; the
// second writes each posting once, into one array sized by the first.
func finish(ix *Index, all []*analysed) {
	nt := len(ix.names)
	b := &builder{counts: make([][numFields]uint16, nt)}
	df := make([]int32, nt)
	lens := make([][numFields]uint32, len(ix.docs))
	var avg [numFields]float64
	for i := range ix.docs {
		lens[i] = b.countDoc(all[i], &ix.docs[i])
		for _, t := range b.touched {
			if b.weighted(t) {
				df[t]++
			}
			b.counts[t] = [numFields]uint16{}
		}
		for f := range numFields {
			avg[f] += float64(lens[i][f])
		}
	}
	n := float64(len(ix.docs))
	for f := range numFields {
		avg[f] /= max(n, 1)
		if avg[f] == 0 {
			avg[f] = 1
		}
	}
	total := 0
	for _, c := range df {
		total += int(c)
	}
	store := make([]posting, total)
	ix.postings = make([][]posting, nt)
	ix.idf = make([]float64, nt)
	for t, c := range df {
		ix.postings[t] = store[:0:c]
		store = store[c:]
		ix.idf[t] = math.Log(1 + (n-float64(c)+0.5)/(float64(c)+0.5))
	}
	// The length normalisation of each field of each article.
	var norm [numFields]float64
	for i := range ix.docs {
		b.countDoc(all[i], &ix.docs[i])
		for f := range numFields {
			norm[f] = 1 - fieldB[f] + fieldB[f]*float64(lens[i][f])/avg[f]
		}
		for _, t := range b.touched {
			if b.weighted(t) {
				w := 0.0
				for f, tf := range b.counts[t] {
					w += fieldWeight[f] * float64(tf) / norm[f]
				}
				ix.postings[t] = append(ix.postings[t], posting{doc: uint32(i), w: float32(w)})
			}
			b.counts[t] = [numFields]uint16{}
		}
	}
	ix.maxIDF = math.Log(1 + (n+0.5)/0.5)
}

// countDoc counts the terms of one article into b.counts, listing them in
// b.touched, and returns its field lengths.
func (b *builder) countDoc(ad *analysed, d *doc) (lens [numFields]uint32) {
	b.touched = b.touched[:0]
	for _, id := range ad.title {
		b.add(id, fieldTitle, &lens)
	}
	for _, id := range ad.tags {
		b.add(id, fieldTags, &lens)
	}
	for _, id := range ad.entities {
		b.add(id, fieldEntities, &lens)
	}
	for _, s := range d.sentences {
		f := fieldBody
		if s.kind == kindDek {
			f = fieldDek
		}
		for _, id := range d.ids[s.start:s.end] {
			b.add(id, f, &lens)
		}
	}
	return lens
}

func (b *builder) add(id int32, field int, lens *[numFields]uint32) {
	c := &b.counts[id]
	if *c == ([numFields]uint16{}) {
		b.touched = append(b.touched, id)
	}
	if c[field] < math.MaxUint16 {
		c[field]++
	}
	lens[field]++
}

// weighted reports whether term t, as counted, occurs in a field of weight
// above zero: a posting that adds nothing is not stored, so every stored
// weight is above zero.
func (b *builder) weighted(t int32) bool {
	for f, tf := range b.counts[t] {
		if tf > 0 && fieldWeight[f] > 0 {
			return true
		}
	}
	return false
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
	// synonymOf is 1 + the position of the question's term this one stands
	// in for (a synonym added by expand, synonyms.go), 0 for a term of the
	// question itself.
	synonymOf int
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
	// norm is the score on the 0–100 scale of docs/decisions.md (ask).
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
			// Every posting weighs more than zero (finish drops the
			// others), so a score of zero means "not touched yet".
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
