package ask

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
)

// Building runs in two phases. Analysis (splitting, normalising, stemming)
// is most of the work and needs no shared state, so the articles are cut
// into one contiguous share per CPU and each share is analysed on its own,
// into term ids of a vocabulary local to the share, and its postings are
// written at once, compressed. The merge then maps the local vocabularies
// onto one, in share order, and concatenates each term's lists. Term ids
// therefore do not depend on timing, and scores never depend on term ids.
// Only the postings stay in memory: an article's analysed text is dropped
// as soon as its postings are written.

// share analyses a contiguous run of articles.
type share struct {
	st       *stemmer
	entities *entityMatcher
	surface  map[string]int32 // normalised word → local term id or -1
	ids      map[string]int32 // term → local id
	terms    []string         // local id → term
	lists    []postingList    // local id → postings
	counts   [][numFields]uint16
	touched  []int32
	// words are the words as written seen so far; last is the one
	// normalize resolved last, which scanWordsWith passes on next.
	words map[string]*wordInfo
	last  *wordInfo
	// fields are the current article's terms by field, as local ids.
	fields [numFields][]int32
	// seq and raw collect a sentence's words for entity matching, and
	// starts the positions in them of words that can start an alias or
	// are a code (wordInfo.starts).
	seq, raw []string
	starts   []int
	// lo and hi delimit the share's articles.
	lo, hi int
}

// wordInfo is what a share knows of a word as written.
type wordInfo struct {
	norm string
	// id is the local term id of norm, -1 for a word not indexed, unknown
	// (resolved) until the word is first passed on.
	id       int32
	resolved bool
	// names is true while the word may start the name of a country or
	// specification whose synthetic term the share has no id for yet: a
	// sentence with such a word is matched against the names. Once every
	// term it could name has an id, matching could add nothing.
	names bool
	// starts is true for a word that can start the name of a country or
	// specification, or is a code: entity matching looks only there.
	starts bool
}

// maxWords bounds the words as written a share remembers: an archive of
// natural text has a long tail of words seen once.
const maxWords = 1 << 18

func newShare(entities *entityMatcher, guess int) *share {
	return &share{
		st: newStemmer(), entities: entities,
		surface: make(map[string]int32, guess), ids: make(map[string]int32, guess),
		words: map[string]*wordInfo{}, starts: make([]int, 0, 64),
	}
}

func (sh *share) id(t string) int32 {
	id, ok := sh.ids[t]
	if !ok {
		id = int32(len(sh.terms))
		sh.ids[t] = id
		sh.terms = append(sh.terms, t)
		sh.counts = append(sh.counts, [numFields]uint16{})
	}
	return id
}

// normalize is normalize with the words as written remembered (see
// scanWordsWith). The key is copied: a substring would keep the whole
// article's text in memory.
//
// This lookup runs for every word of the archive. The map has no size
// hint: sized for the share's guess of terms, tens of times the words an
// archive repeats, most lookups touched a cache line of their own, a
// quarter of the build's CPU (docs/scale.md, ask index build).
func (sh *share) normalize(raw string) string {
	if wi := sh.words[raw]; wi != nil {
		sh.last = wi
		return wi.norm
	}
	wi := &wordInfo{norm: normalize(raw)}
	_, alias := sh.entities.byFirst[wi.norm]
	t, isCode := sh.entities.codes[raw]
	wi.names = alias || (len(raw) <= 3 && t != "")
	wi.starts = alias || isCode
	if len(sh.words) < maxWords {
		key := strings.Clone(raw)
		if wi.norm == raw {
			// The common case, where normalize returns raw itself: the
			// copy serves as both, so that neither keeps the article's
			// text in memory through the vocabulary.
			wi.norm = key
		}
		sh.words[key] = wi
	}
	sh.last = wi
	return wi.norm
}

// termID returns the local term id of a normalised word, -1 for a word
// not indexed.
func (sh *share) termID(w word) int32 {
	id, ok := sh.surface[w.norm]
	if !ok {
		id = -1
		if t := termOf(w, sh.st.stem); t != "" {
			id = sh.id(t)
		}
		sh.surface[w.norm] = id
	}
	return id
}

// unnamed reports whether a word that may start a name (wordInfo.names)
// can still name a term the share has no id for, and forgets that it may
// once it cannot.
func (sh *share) unnamed(wi *wordInfo, raw string) bool {
	for _, p := range sh.entities.byFirst[wi.norm] {
		if _, ok := sh.ids[p.term]; !ok {
			return true
		}
	}
	if t := sh.entities.codes[raw]; t != "" && len(raw) <= 3 {
		if _, ok := sh.ids[t]; !ok {
			return true
		}
	}
	wi.names = false
	return false
}

// text appends the local term ids of text to dst. With words, it also
// gives the countries and specs a sentence names an id: quoting counts
// them as terms of the sentence (doctext.go), and a question that names
// one must find it in the vocabulary. The ids are all the index keeps of
// them, so text whose names all have ids already is not matched.
func (sh *share) text(dst []int32, text string, words bool) []int32 {
	sh.seq, sh.raw, sh.starts = sh.seq[:0], sh.raw[:0], sh.starts[:0]
	named := false
	scanWordsWith(text, sh.normalize, func(w word) {
		var id int32
		if w.joined {
			id = sh.termID(w)
		} else {
			wi := sh.last
			if !wi.resolved {
				wi.id, wi.resolved = sh.termID(w), true
			}
			id = wi.id
			if words {
				if wi.starts {
					sh.starts = append(sh.starts, len(sh.seq))
				}
				sh.seq, sh.raw = append(sh.seq, w.norm), append(sh.raw, w.raw)
				if wi.names && !named && sh.unnamed(wi, w.raw) {
					named = true
				}
			}
		}
		if id >= 0 {
			dst = append(dst, id)
		}
	})
	if named {
		for _, t := range sh.entities.matchAt(sh.seq, sh.raw, sh.starts) {
			sh.id(t)
		}
	}
	return dst
}

// analyse fills sh.fields with the terms of a's fields. The body is
// analysed a markdown block at a time, not a sentence at a time as answers
// quote it: the words are the same, and a name is not split by the end of
// a sentence.
func (sh *share) analyse(a *content.Article) {
	for f := range sh.fields {
		sh.fields[f] = sh.fields[f][:0]
	}
	sh.fields[fieldTitle] = sh.text(sh.fields[fieldTitle], a.Title, false)
	for _, t := range a.Tags {
		sh.fields[fieldTags] = sh.text(sh.fields[fieldTags], t, false)
	}
	sh.fields[fieldTags] = sh.text(sh.fields[fieldTags], a.Kicker, false)
	ent := sh.fields[fieldEntities]
	for _, cc := range a.Countries {
		ent = append(ent, sh.id(countryTerm(strings.ToLower(cc))))
	}
	for _, sp := range a.Specs {
		ent = append(ent, sh.id(specTerm(sp)))
	}
	sh.fields[fieldEntities] = sh.text(ent, sectionWords[a.Section], false)
	sh.fields[fieldDek] = sh.text(sh.fields[fieldDek], a.Dek, true)
	for _, b := range markdownBlocks(a.Body) {
		sh.fields[fieldBody] = sh.text(sh.fields[fieldBody], b.text, true)
	}
}

// count counts sh.fields into sh.counts, listing the terms in sh.touched,
// and returns the field lengths.
func (sh *share) count() (lens [numFields]uint32) {
	sh.touched = sh.touched[:0]
	for f, ids := range sh.fields {
		for _, id := range ids {
			c := &sh.counts[id]
			if *c == ([numFields]uint16{}) {
				sh.touched = append(sh.touched, id)
			}
			if c[f] < math.MaxUint16 {
				c[f]++
			}
		}
		lens[f] = uint32(len(ids))
	}
	return lens
}

// impacts calls fn with the impact of every term of the article just
// counted, whose field lengths are lens, and clears the counts. A term
// found only in fields of weight zero adds nothing and gets no posting.
func (sh *share) impacts(lens [numFields]uint32, avg *[numFields]float64, fn func(id int32, imp uint8)) {
	var norm [numFields]float64
	for f := range numFields {
		norm[f] = 1 - fieldB[f] + fieldB[f]*float64(lens[f])/avg[f]
	}
	for _, t := range sh.touched {
		w := 0.0
		for f, tf := range sh.counts[t] {
			w += fieldWeight[f] * float64(tf) / norm[f]
		}
		if w > 0 {
			fn(t, impactOf(w))
		}
		sh.counts[t] = [numFields]uint16{}
	}
}

// sampleSize bounds the articles whose field lengths give the averages
// BM25F normalises by: a fixed sample estimates them closely, and lets
// every posting be written in the same pass as its article is analysed.
// A corpus this small or smaller is measured whole.
const sampleSize = 4096

// averages returns the average field lengths of sample.
func averages(sample []*content.Article, entities *entityMatcher) [numFields]float64 {
	avg := [numFields]float64{1, 1, 1, 1, 1}
	if len(sample) == 0 {
		return avg
	}
	avg = [numFields]float64{}
	sh := newShare(entities, 1024)
	for _, a := range sample {
		sh.analyse(a)
		for f := range numFields {
			avg[f] += float64(len(sh.fields[f]))
		}
	}
	for f := range numFields {
		avg[f] /= float64(len(sample))
		if avg[f] == 0 {
			avg[f] = 1
		}
	}
	return avg
}

// articleSource reads the articles of an answer in one go (one round trip
// to the store, however many articles an answer shows). The result is
// aligned with slugs.
type articleSource func(ctx context.Context, slugs []string) ([]sourced, error)

// sourced is one article an articleSource read: a stored record, decoded
// only when its analysed text is not cached, or an article in memory.
type sourced struct {
	// fingerprint identifies the text: the same fingerprint, the same
	// text (doctext.go).
	fingerprint uint64
	stored      store.StoredArticle
	inMemory    *content.Article
}

// found reports whether the article exists (published or not).
func (s sourced) found() bool { return s.stored != nil || s.inMemory != nil }

// article returns the article, nil when it is no longer published.
func (s sourced) article() (*content.Article, error) {
	if s.stored == nil {
		return s.inMemory, nil
	}
	rec, err := s.stored.Decode()
	if err != nil || rec.Retracted() {
		return nil, err
	}
	return &rec.Article, nil
}

// inMemory returns article a, held in memory, as an articleSource does
// (a nil a: not found).
func inMemory(a *content.Article) sourced {
	if a == nil {
		return sourced{}
	}
	return sourced{fingerprint: fingerprint(a), inMemory: a}
}

// corpusSource serves the articles of a corpus held in memory.
func corpusSource(articles []*content.Article) articleSource {
	bySlug := make(map[string]*content.Article, len(articles))
	for _, a := range articles {
		if _, dup := bySlug[a.Slug]; !dup {
			bySlug[a.Slug] = a
		}
	}
	return func(_ context.Context, slugs []string) ([]sourced, error) {
		out := make([]sourced, len(slugs))
		for i, slug := range slugs {
			out[i] = inMemory(bySlug[slug])
		}
		return out, nil
	}
}

// articleRange reads the articles at positions lo to hi of a listing; it
// may return fewer (the listing changed meanwhile).
type articleRange func(ctx context.Context, lo, hi int) ([]*content.Article, error)

// buildIndex indexes c, reading texts for answers from c itself. siteRoot
// makes the articles' absolute URLs.
func buildIndex(c Corpus, siteRoot string) *Index {
	return buildWith(c, siteRoot, corpusSource(c.Articles))
}

// buildWith indexes c; answers read the articles' text from source.
func buildWith(c Corpus, siteRoot string, source articleSource) *Index {
	read := func(_ context.Context, lo, hi int) ([]*content.Article, error) { return c.Articles[lo:hi], nil }
	ix, _ := buildPaged(context.Background(), c, len(c.Articles), read, siteRoot, source)
	return ix
}

// buildPaged indexes the n articles read gives (c's articles are not
// read; its registries are), one page at a time per share, so an archive
// is never held in memory whole: only the postings stay.
func buildPaged(ctx context.Context, c Corpus, n int, read articleRange, siteRoot string, source articleSource) (*Index, error) {
	ix := &Index{
		entities: newEntityMatcher(c.Countries, c.Specs),
		synonyms: newSynonymTable(c.Synonyms),
		langs:    map[string]int{},
		source:   source,
		siteRoot: siteRoot,
		dead:     map[uint32]struct{}{},
		pending:  map[string]*deltaDoc{},
		delta:    &segment{bySlug: map[string]uint32{}, byTerm: map[int32]*postingList{}},
		added:    &vocabulary{terms: map[string]int32{}, surface: map[string]int32{}},
		textGen:  newTextGen(),
	}
	base := &segment{docs: make([]docMeta, n), bySlug: make(map[string]uint32, n)}
	ix.base = base
	// The sample: evenly spaced runs of articles.
	var sample []*content.Article
	const runs = 8
	for k := range runs {
		lo := k * n / runs
		page, err := read(ctx, lo, min(n, lo+sampleSize/runs, (k+1)*n/runs))
		if err != nil {
			return nil, err
		}
		sample = append(sample, page...)
	}
	ix.avg = averages(sample, ix.entities)
	sample = nil

	// Analysis, one share per CPU, each reading its own run of pages.
	const page = 500
	shares := make([]*share, max(1, min(runtime.GOMAXPROCS(0), n/256)))
	errs := make([]error, len(shares))
	newest := make([]int64, len(shares))
	var wg sync.WaitGroup
	for k := range shares {
		// Sized for an archive's vocabulary, so the maps rarely grow.
		sh := newShare(ix.entities, 1024+min(8*n/len(shares), 1<<16))
		sh.lo, sh.hi = k*n/len(shares), (k+1)*n/len(shares)
		shares[k] = sh
		wg.Go(func() {
			for lo := sh.lo; lo < sh.hi; lo += page {
				articles, err := read(ctx, lo, min(lo+page, sh.hi))
				if err != nil {
					errs[k] = err
					return
				}
				for j, a := range articles[:min(len(articles), sh.hi-lo)] {
					i := lo + j
					base.docs[i] = docMeta{slug: a.Slug, lang: primaryLanguage(a.Locale), published: a.PublishedAt.UnixNano()}
					newest[k] = max(newest[k], base.docs[i].published)
					sh.analyse(a)
					sh.impacts(sh.count(), &ix.avg, func(id int32, imp uint8) {
						if int(id) >= len(sh.lists) {
							sh.lists = append(sh.lists, make([]postingList, int(id)+1-len(sh.lists))...)
						}
						sh.lists[id].add(uint32(i), imp)
					})
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	ix.newest = slices.Max(newest)

	// Merge, in share order: one vocabulary, global term ids everywhere.
	// Each global list is allocated once at its final size, and a share's
	// lists are let go as they are copied, so the merge holds little more
	// than the postings once.
	words, terms := 0, 0
	for _, sh := range shares {
		words += len(sh.surface)
		terms += len(sh.terms)
	}
	v := &vocabulary{surface: make(map[string]int32, words), terms: make(map[string]int32, terms)}
	globals := make([][]int32, len(shares))
	var sizes []struct{ blocks, data int }
	for k, sh := range shares {
		global := make([]int32, len(sh.terms))
		for lid, t := range sh.terms {
			id, ok := v.terms[t]
			if !ok {
				id = int32(len(v.names))
				v.terms[t] = id
				v.names = append(v.names, t)
				sizes = append(sizes, struct{ blocks, data int }{})
			}
			global[lid] = id
			if lid < len(sh.lists) {
				sizes[id].blocks += len(sh.lists[lid].blocks)
				sizes[id].data += len(sh.lists[lid].data)
			}
		}
		globals[k] = global
		for w, id := range sh.surface {
			if _, ok := v.surface[w]; !ok {
				if id >= 0 {
					id = global[id]
				}
				v.surface[w] = id
			}
		}
	}
	base.lists = make([]postingList, len(v.names))
	for id, sz := range sizes {
		base.lists[id] = postingList{blocks: make([]postingBlock, 0, sz.blocks), data: make([]byte, 0, sz.data)}
	}
	for k, sh := range shares {
		for lid := range sh.lists {
			base.lists[globals[k][lid]].appendList(&sh.lists[lid])
			sh.lists[lid] = postingList{}
		}
		shares[k] = nil
	}
	ix.vocab = v
	ix.added.from = int32(len(v.names))
	// An article read twice (the listing moved between pages) counts once,
	// and a position no article was read at (the listing shrank) holds
	// none: both are tombstones from the start.
	for i := range base.docs {
		d := &base.docs[i]
		if _, dup := base.bySlug[d.slug]; dup || d.slug == "" {
			ix.dead[uint32(i)] = struct{}{}
			continue
		}
		base.bySlug[d.slug] = uint32(i)
		ix.langs[d.lang]++
	}
	ix.builtDead = len(ix.dead)
	base.index()
	return ix, nil
}
