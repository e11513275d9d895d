package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
)

// corpusDir is the real editorial corpus.
const corpusDir = "../../content"

// evalSet is testdata/eval.json: questions with graded relevance judgments
// written before the ranking code (2 answers the question, 1 is useful
// context).
type evalSet struct {
	Questions []struct {
		ID       string         `json:"id"`
		Query    string         `json:"query"`
		Relevant map[string]int `json:"relevant"`
	} `json:"questions"`
}

func loadEval(t testing.TB) *evalSet {
	t.Helper()
	raw, err := os.ReadFile("testdata/eval.json")
	if err != nil {
		t.Fatal(err)
	}
	var set evalSet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("testdata/eval.json: %v", err)
	}
	return &set
}

func realCorpus(t testing.TB) Corpus {
	t.Helper()
	c, err := loadRealCorpus()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func loadRealCorpus() (Corpus, error) {
	c, err := content.Load(corpusDir)
	if err != nil {
		return Corpus{}, fmt.Errorf("loading %s: %w", corpusDir, err)
	}
	return Corpus{Articles: c.Articles, Countries: c.Countries, Specs: c.Specs}, nil
}

// evalScores are the figures of one run over the eval set.
type evalScores struct {
	NDCG5, MRR, Recall10 float64
}

// ndcg is nDCG@k with gain 2^grade-1 and the usual log2 discount.
func ndcg(ranked []string, rel map[string]int, k int) float64 {
	dcg := 0.0
	for i, slug := range ranked[:min(k, len(ranked))] {
		dcg += (math.Exp2(float64(rel[slug])) - 1) / math.Log2(float64(i+2))
	}
	var grades []int
	for _, g := range rel {
		grades = append(grades, g)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(grades)))
	idcg := 0.0
	for i, g := range grades[:min(k, len(grades))] {
		idcg += (math.Exp2(float64(g)) - 1) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func reciprocalRank(ranked []string, rel map[string]int) float64 {
	for i, slug := range ranked {
		if rel[slug] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

func recall(ranked []string, rel map[string]int, k int) float64 {
	found := 0
	for _, slug := range ranked[:min(k, len(ranked))] {
		if rel[slug] > 0 {
			found++
		}
	}
	return float64(found) / float64(len(rel))
}

// runEval answers every question of set with e and scores the rankings.
func runEval(t testing.TB, e *Engine, set *evalSet, verbose bool) evalScores {
	var sum evalScores
	for _, q := range set.Questions {
		ans, err := e.Ask(context.Background(), Request{Query: q.Query})
		if err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		var ranked []string
		for _, r := range ans.Results {
			ranked = append(ranked, r.Slug)
		}
		n, m, r := ndcg(ranked, q.Relevant, 5), reciprocalRank(ranked, q.Relevant), recall(ranked, q.Relevant, 10)
		sum.NDCG5 += n
		sum.MRR += m
		sum.Recall10 += r
		if verbose {
			var top []string
			for i, r := range ans.Results[:min(5, len(ans.Results))] {
				top = append(top, fmt.Sprintf("%d:%s(%d,g%d)", i+1, r.Slug, r.Score, q.Relevant[r.Slug]))
			}
			fmt.Printf("%-13s nDCG@5 %.2f RR %.2f R@10 %.2f summary=%v  %s\n", q.ID, n, m, r, ans.Summary != nil, strings.Join(top, " "))
		}
	}
	n := float64(len(set.Questions))
	return evalScores{sum.NDCG5 / n, sum.MRR / n, sum.Recall10 / n}
}

// TestEval checks the eval set against the corpus and reports the ranking
// quality on it. The figures are a measurement, not a pass mark (issue 8):
// `make eval-ask` prints them; IW_EVAL_VERBOSE=1 adds one line per question.
func TestEval(t *testing.T) {
	set := loadEval(t)
	c := realCorpus(t)
	slugs := map[string]bool{}
	for _, a := range c.Articles {
		slugs[a.Slug] = true
	}
	if len(set.Questions) < 40 {
		t.Errorf("the eval set has %d questions; issue 8 asks for at least 40", len(set.Questions))
	}
	for _, q := range set.Questions {
		if len(q.Relevant) == 0 {
			t.Errorf("%s: no relevant article", q.ID)
		}
		for slug, g := range q.Relevant {
			if !slugs[slug] || g < 1 || g > 2 {
				t.Errorf("%s: %s graded %d: not an article of the corpus, or a grade outside 1..2", q.ID, slug, g)
			}
		}
	}
	e := New(Config{SiteRoot: "http://localhost:8080"})
	e.Use(c)
	s := runEval(t, e, set, os.Getenv("IW_EVAL_VERBOSE") != "")
	fmt.Printf("ask eval: %d questions, %d articles: nDCG@5 %.3f  MRR %.3f  recall@10 %.3f\n", len(set.Questions), len(c.Articles), s.NDCG5, s.MRR, s.Recall10)
}
