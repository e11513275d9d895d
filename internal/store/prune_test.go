package store_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

func TestSyncRemovesRegistryEntries(t *testing.T) {
	onBackends(t, testSyncRemovesRegistryEntries)
}

// testSyncRemovesRegistryEntries syncs a corpus, then one that lacks a
// registry entry: with Publisher.Prune the entry is removed, its surrogate
// keys purged and the removal reported, unless a published article with
// no file in the tree (Prune.Unfiled) still cites it; then the sync is
// refused, naming the registry file, the entry and the article, and no
// registry changes. Without Prune (a library caller syncing part of a
// tree) the entry stays.
func testSyncRemovesRegistryEntries(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	// article-00001 (Germany) cites the source aade and the spec
	// peppol-bis-billing-3; no article cites kpmg-tnf, en-16931 or jp.
	base := func() *content.Corpus {
		c := contenttest.Corpus(4)
		c.Sources = append(c.Sources, &content.Source{Slug: "aade", Name: "AADE", Homepage: "https://www.aade.gr", TrustTier: "official"})
		a := c.Articles[1]
		a.Sources = append(a.Sources, content.Citation{Source: "aade", Name: "AADE", URL: "https://www.aade.gr/news"})
		a.Specs = []string{"peppol-bis-billing-3"}
		return c
	}
	without := func(c *content.Corpus, entry string) {
		kind, id, _ := strings.Cut(entry, " ")
		switch kind {
		case "source":
			c.Sources = slices.DeleteFunc(c.Sources, func(s *content.Source) bool { return s.Slug == id })
		case "country":
			c.Countries = slices.DeleteFunc(c.Countries, func(x *content.Country) bool { return x.Code == id })
		case "spec":
			c.Specs = slices.DeleteFunc(c.Specs, func(s *content.Spec) bool { return s.Slug == id })
		}
	}
	// fileGone drops an article's file from the corpus: it stays
	// published.
	fileGone := func(c *content.Corpus, slug string) {
		c.Articles = slices.DeleteFunc(c.Articles, func(a *content.Article) bool { return a.Slug == slug })
	}
	for _, tc := range []struct {
		desc   string
		remove []string // "kind id"
		// gone are the articles whose file is gone from the tree;
		// unfiled those of them that Prune is told of.
		gone, unfiled []string
		retract       string
		noPrune       bool
		wantErr       []string // substrings of the error; none: success
	}{
		{desc: "an unreferenced source", remove: []string{"source kpmg-tnf"}},
		{desc: "an unreferenced spec", remove: []string{"spec en-16931"}},
		{desc: "an unreferenced country", remove: []string{"country jp"}},
		{desc: "one of each at once", remove: []string{"source kpmg-tnf", "country jp", "spec en-16931"}},
		{desc: "a source an unfiled article cites", remove: []string{"source kpmg-tnf", "source aade"}, gone: []string{"article-00001"}, unfiled: []string{"article-00001"},
			wantErr: []string{`source "aade"`, "sources.yaml", `"article-00001"`}},
		{desc: "a spec an unfiled article cites", remove: []string{"spec peppol-bis-billing-3"}, gone: []string{"article-00001"}, unfiled: []string{"article-00001"},
			wantErr: []string{`spec "peppol-bis-billing-3"`, "specs.yaml", `"article-00001"`}},
		{desc: "a country an unfiled article cites, found by its index", remove: []string{"country jp", "country de"}, gone: []string{"article-00001"},
			wantErr: []string{`country "de"`, "countries.yaml", `"article-00001"`}},
		{desc: "a source an unfiled but retracted article cites", remove: []string{"source aade"},
			gone: []string{"article-00001"}, unfiled: []string{"article-00001"}, retract: "article-00001"},
		{desc: "without Prune the entry stays", remove: []string{"source kpmg-tnf"}, noPrune: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if err := redistest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() }); err != nil {
				t.Fatal(err)
			}
			p := newPublisher(rdb)
			if err := p.SyncCorpus(ctx, base(), nil); err != nil {
				t.Fatal(err)
			}
			next := base()
			for _, e := range tc.remove {
				without(next, e)
			}
			for _, slug := range tc.gone {
				fileGone(next, slug)
			}
			if tc.retract != "" {
				if _, err := p.Retract(ctx, tc.retract, "Wrong."); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.noPrune {
				p.Prune = &store.Prune{Unfiled: tc.unfiled}
			}
			before := registries(t, rdb)
			changedBefore, err := p.Store.ChangedAt(ctx, store.TagSite)
			if err != nil {
				t.Fatal(err)
			}
			var reported []string
			err = p.SyncRegistries(ctx, next, func(kind, id string, o store.Outcome) {
				if o.Removed {
					reported = append(reported, kind+" "+id)
				}
			})
			if tc.wantErr != nil {
				if err == nil {
					t.Fatal("sync succeeded, want it refused")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %s", err, w)
					}
				}
				if after := registries(t, rdb); !maps.Equal(before, after) || reported != nil {
					t.Fatalf("a refused sync changed the registries (reported %q)", reported)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.remove
			if tc.noPrune {
				want = nil
			}
			slices.Sort(want)
			slices.Sort(reported)
			if !slices.Equal(reported, want) {
				t.Fatalf("reported removals %q, want %q", reported, want)
			}
			for _, e := range tc.remove {
				if present := hasEntry(t, p.Store, e); present != tc.noPrune {
					t.Errorf("%s: stored = %v after the sync, want %v", e, present, tc.noPrune)
				}
			}
			if changed, err := p.Store.ChangedAt(ctx, store.TagSite); err != nil || (!tc.noPrune && !changed.After(changedBefore)) {
				t.Errorf("the site's key was not purged by the removal: %v, %v", changed, err)
			}
		})
	}
}

// hasEntry reports whether the store serves the registry entry "kind id",
// read as the origin reads it: the list and the single entry.
func hasEntry(t *testing.T, st *store.Store, entry string) bool {
	t.Helper()
	ctx := context.Background()
	kind, id, _ := strings.Cut(entry, " ")
	var listed bool
	var err error
	switch kind {
	case "source":
		var all []*content.Source
		all, err = st.Sources(ctx)
		listed = slices.ContainsFunc(all, func(s *content.Source) bool { return s.Slug == id })
		if err == nil {
			return listed
		}
	case "country":
		var all []*content.Country
		if all, err = st.Countries(ctx); err == nil {
			listed = slices.ContainsFunc(all, func(c *content.Country) bool { return c.Code == id })
			_, err = st.Country(ctx, id)
		}
	case "spec":
		var all []*content.Spec
		if all, err = st.Specs(ctx); err == nil {
			listed = slices.ContainsFunc(all, func(s *content.Spec) bool { return s.Slug == id })
			_, err = st.Spec(ctx, id)
		}
	}
	one := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if one != listed {
		t.Fatalf("%s: listed %v but found by itself %v", entry, listed, one)
	}
	return listed
}

// registries reads the three registry hashes whole.
func registries(t *testing.T, rdb redis.UniversalClient) map[string]string {
	t.Helper()
	return redistest.Hashes(t, rdb, "iw:{content}:countries", "iw:{content}:specs", "iw:{content}:sources")
}
