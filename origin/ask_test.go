package origin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// askSlugs posts q to the origin's /ask and returns the answer's slugs.
func askSlugs(t *testing.T, inst *origintest.Instance, q string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "prefer": map[string]any{"max_results": 50}})
	resp, err := inst.Server.Client().Post(inst.SiteRoot+"/ask", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /ask: %d", resp.StatusCode)
	}
	var a struct {
		Results []struct {
			Slug string `json:"slug"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range a.Results {
		if r.Slug != "" {
			out = append(out, r.Slug)
		}
	}
	return out
}

// TestAskFollowsRetraction runs the whole origin: the article retracted
// before start is never answered, and one retracted while the origin runs
// leaves the answers (docs/decisions.md, retraction and correction). The time it took is logged; speed is for
// benchmarks.
func TestAskFollowsRetraction(t *testing.T) {
	inst := origintest.Start(t)
	const q = "synthetic article e-invoicing"
	got := askSlugs(t, inst, q)
	if len(got) < origintest.Articles-1 {
		t.Fatalf("%d articles answered, want %d", len(got), origintest.Articles-1)
	}
	if slices.Contains(got, origintest.RetractedSlug) {
		t.Fatalf("the retracted %s is answered", origintest.RetractedSlug)
	}
	victim := contenttest.Article(5).Slug
	if !slices.Contains(got, victim) {
		t.Fatalf("%s is not answered before its retraction", victim)
	}
	start := time.Now()
	if _, err := inst.Publisher.Retract(context.Background(), victim, "A test retraction."); err != nil {
		t.Fatal(err)
	}
	for slices.Contains(askSlugs(t, inst, q), victim) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the retracted article is still answered")
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("the retracted article left the answers after %s", time.Since(start).Round(time.Millisecond))
}

// TestContractAskSummary publishes two real articles beside the synthetic
// corpus, whose short sentences never make a summary, and validates answers
// that carry a SearchSummary, as JSON and as a stream.
func TestContractAskSummary(t *testing.T) {
	inst := origintest.Start(t)
	c := contract.New(t)
	corpus, err := content.Load("../content")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range corpus.Articles {
		if strings.HasPrefix(a.Slug, "belgium-") {
			if _, err := inst.Publisher.SyncArticle(context.Background(), a); err != nil {
				t.Fatal(err)
			}
		}
	}
	body := `{"query":"When does Belgium require B2B e-invoices?"}`
	for _, accept := range []string{"application/json", "text/event-stream"} {
		t.Run(accept, func(t *testing.T) {
			// The index follows the new articles within moments.
			for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
				_, got := exchange(t, c, inst, "POST", "/ask", http.Header{"Content-Type": {"application/json"}, "Accept": {accept}}, body, 200)
				if strings.Contains(string(got), `"SearchSummary"`) || t.Failed() {
					// The question asks "when": the summary carries the
					// answer span, validated against AskSummary.answer.
					if !strings.Contains(string(got), `"answer":{"text":"1 January 2026"`) {
						t.Errorf("the summary does not carry the answer span 1 January 2026: %s", got)
					}
					break
				}
				if time.Since(start) > 30*time.Second {
					t.Fatalf("no summary: %s", got)
				}
			}
		})
	}
}

// TestAskIndexBuiltOnce: an origin that starts builds its ask index once.
// The invalidation follower clears everything on its first subscription,
// and that clear used to queue a second whole build right after the first,
// which at a million articles kept two indexes and a build's garbage at the
// memory limit for minutes (docs/scale.md). The index is built before the
// origin is ready here, so a second build would follow within milliseconds;
// the counter is watched for two seconds after the first.
func TestAskIndexBuiltOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	inst := origintest.Start(t, func(c *origin.Config) { c.Registry = reg })
	builds := func() float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "invoicewire_ask_index_builds_total" {
				continue
			}
			total := 0.0
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return total
		}
		return 0
	}
	askSlugs(t, inst, "peppol")
	for deadline := time.Now().Add(10 * time.Second); builds() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ask index was never built")
		}
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := builds(); n != 1 {
			t.Fatalf("the ask index was built %v times after a start without changes, want 1", n)
		}
	}
}
