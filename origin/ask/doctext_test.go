package ask

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
)

// TestAnalysedTextsCached: an article's analysis is reused only for the
// same text under the same vocabulary. A text changed in the store (read
// before the index applied its change) is analysed again, and so is every
// text once a change gives a word an id it did not have, since the cached
// analysis dropped that word; a change that adds no word keeps the
// analyses.
func TestAnalysedTextsCached(t *testing.T) {
	corpus, err := content.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	ix := buildIndex(Corpus{Articles: corpus.Articles, Countries: corpus.Countries, Specs: corpus.Specs}, testSiteRoot)
	original := corpus.Articles[0]
	// The same article with one more sentence, of a word no article has.
	const word = "zorblaxic"
	edited := *original
	edited.Body += "\n\nThe zorblaxic register opens next spring.\n"

	// analyse analyses a with ix and waits for the cache to take the
	// result (ristretto admits entries asynchronously).
	analyse := func(ix *Index, a *content.Article) *doc {
		fp := fingerprint(a)
		d := ix.cachedText(a.Slug, fp)
		if d == nil {
			d = ix.analyse(a, fp, newStemmer())
			textCache().Wait()
		}
		return d
	}
	first := analyse(ix, original)
	afterEdit := ix.with([]change{{slug: edited.Slug, a: &edited}})
	wordID, known := afterEdit.surfaceID(word)
	if !known {
		t.Fatalf("%q has no id after the change that adds it", word)
	}
	unchanged := *corpus.Articles[1]
	afterNoNewWord := afterEdit.with([]change{{slug: unchanged.Slug, a: &unchanged}})

	for _, tc := range []struct {
		desc      string
		ix        *Index
		a         *content.Article
		wantSame  bool // the cached analysis of original, by ix
		wantWord  bool // the analysis has the word's sentence
		wantWrdID bool // ... and the word's id
	}{
		{desc: "same text, same index: the cached analysis", ix: ix, a: original, wantSame: true},
		{desc: "same text, a copy of the article: the cached analysis", ix: ix, a: new(*original), wantSame: true},
		{desc: "text changed in the store, index not yet told: analysed again", ix: ix, a: &edited, wantWord: true},
		{desc: "change adds the word: analysed again, the word has its id", ix: afterEdit, a: &edited, wantWord: true, wantWrdID: true},
		{desc: "change adds no word: the analysis under the vocabulary before it", ix: afterNoNewWord, a: &edited, wantWord: true, wantWrdID: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			d := analyse(tc.ix, tc.a)
			if same := d == first; same != tc.wantSame {
				t.Errorf("cached analysis reused: %v, want %v", same, tc.wantSame)
			}
			hasWord := slices.ContainsFunc(d.sentences, func(s sentence) bool { return strings.Contains(s.text, word) })
			if hasWord != tc.wantWord {
				t.Errorf("a sentence with %q: %v, want %v", word, hasWord, tc.wantWord)
			}
			if hasID := slices.Contains(d.ids, wordID); hasID != tc.wantWrdID {
				t.Errorf("term id of %q among the analysis's ids: %v, want %v", word, hasID, tc.wantWrdID)
			}
			// Whatever the cache did, the analysis is the one made now.
			if want := tc.ix.docText(tc.a, newStemmer()); !sameDoc(d, want) {
				t.Errorf("analysis differs from the text analysed afresh")
			}
		})
	}
	if afterNoNewWord.textGen != afterEdit.textGen {
		t.Errorf("a change that adds no word changed the index's text generation: its analyses would all be made again")
	}
}

// sameDoc reports whether two analyses hold the same text, ids and
// entities.
func sameDoc(a, b *doc) bool {
	return a.slug == b.slug && a.title == b.title && a.url == b.url && a.published.Equal(b.published) &&
		slices.Equal(a.sentences, b.sentences) && slices.Equal(a.ids, b.ids) && slices.Equal(a.ents, b.ents)
}

// TestLoadReadsTheStoreFirst: with the text cache, an answer still reads
// its articles from the store: an unchanged record is answered from the
// cache, one edited in the store before the index was told is analysed
// again, and one retracted meanwhile is dropped, never quoted from the
// cache.
func TestLoadReadsTheStoreFirst(t *testing.T) {
	st, pub, a := published(t)
	ctx := context.Background()
	e := mustNew(t, Config{Store: st, SiteRoot: testSiteRoot, Log: quiet})
	if err := e.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	ix := e.idx.Load()
	id, ok := ix.lookup(a.Slug)
	if !ok {
		t.Fatal("the article is not indexed")
	}
	load := func() []hit {
		t.Helper()
		hits, err := ix.load(ctx, []hit{{doc: id}})
		if err != nil {
			t.Fatal(err)
		}
		textCache().Wait()
		return hits
	}
	first := load()
	if len(first) != 1 {
		t.Fatalf("%d hits loaded, want 1", len(first))
	}
	edited := *a
	edited.Body += "\n\nThe zorblaxic register opens next spring.\n"
	for _, tc := range []struct {
		desc     string
		change   func() error
		wantHits int
		wantSame bool // the first load's analysis
		wantWord bool // a sentence of the edit
	}{
		{desc: "unchanged: the cached analysis", change: func() error { return nil }, wantHits: 1, wantSame: true},
		{desc: "edited in the store: analysed again", change: func() error {
			_, err := pub.SyncArticle(ctx, &edited)
			return err
		}, wantHits: 1, wantWord: true},
		{desc: "retracted in the store: dropped", change: func() error {
			_, err := pub.Retract(ctx, a.Slug, "The agency denied the report.")
			return err
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if err := tc.change(); err != nil {
				t.Fatal(err)
			}
			hits := load()
			if len(hits) != tc.wantHits {
				t.Fatalf("%d hits loaded, want %d", len(hits), tc.wantHits)
			}
			if len(hits) == 0 {
				return
			}
			d := hits[0].text
			if same := d == first[0].text; same != tc.wantSame {
				t.Errorf("the first analysis reused: %v, want %v", same, tc.wantSame)
			}
			hasWord := slices.ContainsFunc(d.sentences, func(s sentence) bool { return strings.Contains(s.text, "zorblaxic") })
			if hasWord != tc.wantWord {
				t.Errorf("the edit's sentence analysed: %v, want %v", hasWord, tc.wantWord)
			}
		})
	}
}

// TestSpanMemo: a doc's memoised spans are answerSpans' for every sentence
// and question profile, read concurrently by answers under way; the memo
// tells apart profiles that differ in any field answerSpans reads, and
// stops at the size doc.cost counts for it.
func TestSpanMemo(t *testing.T) {
	corpus, err := content.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	ix := buildIndex(Corpus{Articles: corpus.Articles, Countries: corpus.Countries, Specs: corpus.Specs}, testSiteRoot)
	var profiles []question
	for _, kind := range []questionKind{askWhat, askWhen, askName, askReason} {
		profiles = append(profiles, question{kind: kind})
	}
	// Neighbours differ in one field: up the units, to a group, down the
	// units again.
	for unit := unitAny; unit <= unitCode; unit++ {
		profiles = append(profiles, question{kind: askAmount, unit: unit})
	}
	for unit := unitCode + 1; unit > unitAny; unit-- {
		profiles = append(profiles, question{kind: askAmount, unit: unit - 1, group: true})
	}
	profiles = append(profiles, question{kind: askYesNo}, question{kind: askYesNo, obliged: true})
	// with returns the first article whose body has each of parts: the
	// cases need sentences whose spans differ by profile.
	with := func(parts ...string) *content.Article {
		t.Helper()
		for _, a := range corpus.Articles {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(a.Body, p) }) {
				return a
			}
		}
		t.Fatalf("no article has all of %q", parts)
		return nil
	}
	for _, tc := range []struct {
		desc string
		a    *content.Article
	}{
		{desc: "amounts of money and shares", a: with("€", "%")},
		{desc: "dates and durations", a: with("January", " days")},
		{desc: "versions", a: with("3.0", "version")},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			// check asks every sentence of d for asked's spans, twice, from
			// two answers at once (the race detector watches the memo).
			check := func(d *doc, asked question) {
				t.Helper()
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						for range 2 {
							for i := range d.sentences {
								if got, want := d.spansOf(i, asked), answerSpans(asked, d.sentences[i].text); !slices.Equal(got, want) {
									t.Errorf("sentence %d, %+v: memo %v, answerSpans %v", i, asked, got, want)
									return
								}
							}
						}
					})
				}
				wg.Wait()
			}
			// Each profile after the one before it on one doc, in
			// pairs, so the memo holds both and must tell them apart.
			for k := 1; k < len(profiles); k++ {
				d := ix.docText(tc.a, newStemmer())
				check(d, profiles[k-1])
				check(d, profiles[k])
			}
			// Every profile on one doc: the memo fills to its bound and
			// stops there, and answers stay right past it.
			d := ix.docText(tc.a, newStemmer())
			for _, asked := range profiles {
				check(d, asked)
			}
			if n, limit := len(d.spans.m), spanMemoPerSentence*len(d.sentences); n != limit {
				t.Errorf("%d results memoised, want the bound %d", n, limit)
			}
		})
	}
}
