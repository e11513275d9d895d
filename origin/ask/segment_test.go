package ask

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

// exhaustive scores every posting of every term of q, as the index did
// before it pruned, and returns the best limit hits: the reference the
// pruned search must match exactly.
func exhaustive(ix *Index, q *query, limit int) []hit {
	scores := map[uint32]float32{}
	for _, t := range q.terms {
		f := float32(t.idf * (k1 + 1))
		for k, seg := range []*segment{ix.base, ix.delta} {
			off := uint32(0)
			if k == 1 {
				off = uint32(len(ix.base.docs))
			}
			var c cursor
			c.reset(seg.list(t.id))
			for d := c.doc; d != endDoc; d = c.next() {
				if _, gone := ix.dead[d]; gone && k == 0 {
					continue
				}
				scores[off+d] += f * saturation(c.imp)
			}
		}
	}
	s := &searcher{ix: ix, limit: limit}
	var all []hit
	for d, sc := range scores {
		all = append(all, hit{doc: d, score: float64(sc) * ix.boost(ix.meta(d).published)})
	}
	slices.SortFunc(all, s.better)
	return all[:min(limit, len(all))]
}

// TestPrunedSearchIsExact: MaxScore and block-max skipping never change an
// answer: for questions of rare, common and absent words, at several
// depths, the pruned search returns exactly the hits and scores of scoring
// every posting. Two corpora: synthetic text with a long-tailed vocabulary,
// and an archive recombined from the real articles, whose small vocabulary
// makes most question terms common (the case where pruning does the most).
func TestPrunedSearchIsExact(t *testing.T) {
	base, err := content.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	// Under the race detector a third of the articles: the archive's
	// common words still span 15 and more blocks of postings, which is
	// what block-max skipping needs to skip.
	richN, archiveN := 3000, 6000
	if underRace {
		richN, archiveN = 1000, 2000
	}
	rich, archive := contenttest.RichCorpus(richN), contenttest.Archive(base, archiveN, 15)
	// Newest first, as the store lists them and the origin indexes them:
	// recency then bounds whole runs of articles.
	newestFirst(archive.Articles)
	questions := append(slices.Clone(benchQuestions), "invoice e-invoicing", "the", "Peppol invoice update penalties")
	for _, ev := range []string{"testdata/eval.json", "testdata/eval-paraphrased.json"} {
		questions = append(questions, evalQueries(t, ev)[:20]...)
	}
	for _, tc := range []struct {
		desc string
		c    Corpus
	}{
		{desc: "synthetic", c: Corpus{Articles: rich.Articles, Countries: rich.Countries, Specs: rich.Specs, Synonyms: rich.Synonyms}},
		{desc: "archive", c: Corpus{Articles: archive.Articles, Countries: archive.Countries, Specs: archive.Specs, Synonyms: base.Synonyms}},
	} {
		t.Run(tc.desc, func(t *testing.T) { checkPrunedSearch(t, tc.c, questions) })
	}
}

// newestFirst sorts articles as the store lists them.
func newestFirst(articles []*content.Article) {
	slices.SortStableFunc(articles, func(a, b *content.Article) int {
		if c := b.PublishedAt.Compare(a.PublishedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
}

// evalQueries returns the questions of an evaluation set.
func evalQueries(t testing.TB, path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Questions []struct {
			Query string `json:"query"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, q := range set.Questions {
		out = append(out, q.Query)
	}
	return out
}

func checkPrunedSearch(t *testing.T, c Corpus, questions []string) {
	ix := buildIndex(c, testSiteRoot)
	// Some changes, so the delta and the tombstones are searched too.
	var changes []change
	for i := range 40 {
		a := *c.Articles[i*7]
		if i%3 == 0 {
			changes = append(changes, change{slug: a.Slug})
			continue
		}
		a.Title += " invoice penalties update"
		changes = append(changes, change{slug: a.Slug, a: &a})
	}
	ix = ix.with(changes)
	for _, question := range questions {
		for _, limit := range []int{1, 3, 10, 50} {
			q := ix.parse(question)
			ix.expand(q)
			q.stats = &searchStats{}
			got, err := ix.search(context.Background(), q, nil, limit)
			if err != nil {
				t.Fatal(err)
			}
			// Every hit was scored, and every scored document visited once.
			if st, docs := *q.stats, len(ix.base.docs)+len(ix.delta.docs); len(got) > st.scored || st.scored > st.visited || st.visited > docs {
				t.Fatalf("%q top %d: %d hits, %d scored, %d visited of %d documents", question, limit, len(got), st.scored, st.visited, docs)
			}
			want := exhaustive(ix, q, limit)
			if len(got) != len(want) {
				t.Fatalf("%q top %d: %d hits, want %d", question, limit, len(got), len(want))
			}
			for i := range got {
				if got[i].doc != want[i].doc || got[i].score != want[i].score {
					t.Fatalf("%q top %d: hit %d is %d (%.6f), want %d (%.6f)", question, limit, i, got[i].doc, got[i].score, want[i].doc, want[i].score)
				}
			}
		}
	}
}

// TestIncrementalChanges applies an edit, a retraction, a restoration and a
// new article to an index, one change each, and checks each is answered at
// once, with the base left as it was and document frequencies updated.
func TestIncrementalChanges(t *testing.T) {
	c := contenttest.Corpus(60)
	ix := buildIndex(Corpus{Articles: c.Articles, Countries: c.Countries, Specs: c.Specs, Synonyms: c.Synonyms}, testSiteRoot)
	base := ix.base
	find := func(ix *Index, question string) []string {
		t.Helper()
		q := ix.parse(question)
		hits, err := ix.search(context.Background(), q, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, ix.meta(h.doc).slug)
		}
		return out
	}
	edited := *c.Articles[5]
	edited.Title = "Quokkaland mandates structured invoices"
	if got := find(ix, "quokkaland"); len(got) != 0 {
		t.Fatalf("quokkaland found %v before the edit", got)
	}
	gone := c.Articles[9]
	fresh := contenttest.Article(500)
	fresh.Slug, fresh.Title = "wombatia-joins-peppol", "Wombatia joins Peppol"
	fresh.Dek, fresh.Body = "The wombatian tax office will accept Peppol invoices.", "Wombatia announced the change.\n"

	for _, tc := range []struct {
		desc     string
		change   change
		question string
		slug     string
		found    bool
		size     int
	}{
		{desc: "edit", change: change{slug: edited.Slug, a: &edited}, question: "quokkaland", slug: edited.Slug, found: true, size: 60},
		{desc: "retraction", change: change{slug: gone.Slug}, question: gone.Title, slug: gone.Slug, found: false, size: 59},
		{desc: "restoration", change: change{slug: gone.Slug, a: gone}, question: gone.Title, slug: gone.Slug, found: true, size: 60},
		{desc: "new article", change: change{slug: fresh.Slug, a: fresh}, question: "wombatia", slug: fresh.Slug, found: true, size: 61},
		{desc: "edit again", change: change{slug: edited.Slug, a: c.Articles[5]}, question: "quokkaland", slug: edited.Slug, found: false, size: 61},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			prev := ix
			ix = ix.with([]change{tc.change})
			if ix.base != base {
				t.Fatal("the base segment was rebuilt")
			}
			if ix.Len() != tc.size {
				t.Errorf("Len %d, want %d", ix.Len(), tc.size)
			}
			got := find(ix, tc.question)
			if has := slices.Contains(got, tc.slug); has != tc.found {
				t.Errorf("%q answers %v; %s there: %v, want %v", tc.question, got, tc.slug, has, tc.found)
			}
			if tc.found && got[0] != tc.slug {
				t.Errorf("%q answers %v, want %s first", tc.question, got, tc.slug)
			}
			if prev == ix {
				t.Fatal("with changed its receiver")
			}
		})
	}
	// The new article's words count in document frequency: its rare word is
	// in one article, a common one's count grew by one.
	id, ok := ix.termID("wombatia")
	if !ok {
		t.Fatal("the new article's word is not in the vocabulary")
	}
	if l := ix.delta.list(id); l == nil || l.df != 1 {
		t.Errorf("wombatia df %v, want 1", l)
	}
	if ix.idfOf(id) >= ix.maxIDF() {
		t.Errorf("idf of a word one article has (%.3f) is not below that of an unknown word (%.3f)", ix.idfOf(id), ix.maxIDF())
	}
	if _, ok := ix.lookup(gone.Slug); !ok {
		t.Error("the restored article is not found by slug")
	}
}

// TestDocTextMatchesBuild: the text read at answer time is analysed into
// the same term ids the build indexed, so quoting matches question terms.
func TestDocTextMatchesBuild(t *testing.T) {
	base, err := content.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	ix := buildIndex(Corpus{Articles: base.Articles, Countries: base.Countries, Specs: base.Specs}, testSiteRoot)
	st := newStemmer()
	for _, a := range base.Articles[:10] {
		d := ix.docText(a, st)
		doc, _ := ix.lookup(a.Slug)
		for _, id := range d.ids {
			if strings.HasPrefix(ix.termText(id), "cc:") {
				continue
			}
			if !ix.contains(id, doc) {
				t.Fatalf("%s: term %q of its text is not in its postings", a.Slug, ix.termText(id))
			}
		}
		if len(d.sentences) == 0 || d.url != testSiteRoot+a.Path()+"/" {
			t.Errorf("%s: %d sentences, url %s", a.Slug, len(d.sentences), d.url)
		}
	}
}
