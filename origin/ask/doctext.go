package ask

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// The index keeps no article text: at a million articles the sentences and
// their term ids would take gigabytes. An answer shows a handful of
// articles, so their text is read again when the answer is made (from the
// store, or from the corpus an index was built from in memory) and
// analysed then: splitting and scanning one article costs well under a
// millisecond, and words the index knows are looked up, not stemmed.

// doc is the text of one article of an answer, analysed for quoting.
// Answer code reads it through these fields:
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
}

// sentEntity is a synthetic term (a country or spec) that sentence sent
// of a doc names.
type sentEntity struct {
	sent uint32
	id   int32
}

// load reads the text of every hit in one round trip and analyses it,
// dropping the hits whose article is no longer published (retracted since
// the snapshot was made). Articles are analysed on up to GOMAXPROCS
// goroutines: each is independent, and an answer shows up to 50.
func (ix *Index) load(ctx context.Context, hits []hit) ([]hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	slugs := make([]string, len(hits))
	for i, h := range hits {
		slugs[i] = ix.meta(h.doc).slug
	}
	articles, err := ix.source(ctx, slugs)
	if err != nil {
		return nil, fmt.Errorf("ask: reading %d articles: %w", len(slugs), err)
	}
	if len(articles) != len(hits) {
		return nil, fmt.Errorf("ask: reading %d articles: %d returned", len(slugs), len(articles))
	}
	var next atomic.Int32
	analyse := func() {
		st := newStemmer()
		for {
			i := int(next.Add(1)) - 1
			if i >= len(hits) {
				return
			}
			if a := articles[i]; a != nil {
				hits[i].text = ix.docText(a, st)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(hits)) - 1 {
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
