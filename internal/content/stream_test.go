package content

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// streamTree is the valid fixture tree plus articles in 2024's first
// months; extra files are added over it.
func streamTree(t *testing.T, extra map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, name := range []string{"sources.yaml", "countries.yaml", "specs.yaml", "aliases.yaml", "articles/2025/12/fixture-article.md"} {
		b, err := os.ReadFile(filepath.Join("testdata/valid", name))
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: b}
	}
	file := func(slug, at, section, title string) string {
		return fmt.Sprintf("---\ntitle: %q\nsection: %s\naudience: [biz]\ncountries: [be]\npublished_at: %s\nsources:\n  - source: kpmg-tnf\n    url: https://kpmg.com/x.html\n---\nBody of %s.\n", title, section, at, slug)
	}
	for _, a := range []struct{ slug, at string }{
		{"jan-late", "2024-01-20T09:00:00Z"}, {"jan-early", "2024-01-03T09:00:00Z"}, {"jan-b-same-time", "2024-01-20T09:00:00Z"},
		{"feb-one", "2024-02-01T09:00:00Z"}, {"feb-two", "2024-02-11T09:00:00Z"},
	} {
		fsys["articles/"+a.at[:4]+"/"+a.at[5:7]+"/"+a.slug+".md"] = &fstest.MapFile{Data: []byte(file(a.slug, a.at, "mandates", "A title"))}
	}
	for name, body := range extra {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

// TestStream checks what Stream hands to Publish and when: months oldest
// first, each sorted by date then slug, joined up to Batch; the registries
// before any article; nothing once a problem is found, while every problem
// is still reported; nothing at all when the listing shows a duplicate.
func TestStream(t *testing.T) {
	bad := func(section, title string) string {
		return fmt.Sprintf("---\ntitle: %q\nsection: %s\naudience: [biz]\npublished_at: 2024-03-05T09:00:00Z\nsources:\n  - source: kpmg-tnf\n    url: https://kpmg.com/x.html\n---\nBody.\n", title, section)
	}
	for _, tc := range []struct {
		desc       string
		extra      map[string]string
		batch      int
		want       [][]string
		registries bool
		errs       []string
	}{
		{desc: "one call per month, oldest first", registries: true,
			want: [][]string{{"jan-early", "jan-b-same-time", "jan-late"}, {"feb-one", "feb-two"}, {"fixture-article"}}},
		{desc: "months joined up to the batch", batch: 4, registries: true,
			want: [][]string{{"jan-early", "jan-b-same-time", "jan-late", "feb-one", "feb-two"}, {"fixture-article"}}},
		{desc: "a bad month stops the publishing; every problem reported", batch: 4, registries: true,
			extra: map[string]string{
				"articles/2024/03/bad-section.md": bad("gossip", "A title"),
				"articles/2024/03/bad-title.md":   strings.Replace(bad("mandates", ""), "2024-03-05", "2024-03-06", 1),
			},
			want: [][]string{{"jan-early", "jan-b-same-time", "jan-late", "feb-one", "feb-two"}},
			errs: []string{"articles/2024/03/bad-section.md: section", "articles/2024/03/bad-title.md: title"}},
		{desc: "a bad month in the first batch: nothing written", batch: 100,
			extra: map[string]string{"articles/2024/03/bad-section.md": bad("gossip", "A title")},
			errs:  []string{"articles/2024/03/bad-section.md: section"}},
		{desc: "a duplicate slug publishes nothing",
			extra: map[string]string{"articles/2024/03/feb-one.md": bad("mandates", "Again")},
			errs:  []string{"articles/2024/03/feb-one.md: slug: duplicate of articles/2024/02/feb-one.md"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var got [][]string
			registries := false
			_, err := streamFS(streamTree(t, tc.extra), StreamOptions{
				Batch: tc.batch,
				Registries: func(c *Corpus) error {
					if len(got) > 0 {
						t.Error("registries handed over after articles")
					}
					registries = len(c.Sources) > 0 && len(c.Countries) > 0
					return nil
				},
				Publish: func(articles []*Article) error {
					var slugs []string
					for _, a := range articles {
						slugs = append(slugs, a.Slug)
					}
					got = append(got, slugs)
					return nil
				},
			})
			if registries != tc.registries {
				t.Errorf("registries handed over: %v, want %v", registries, tc.registries)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("published %q, want %q", got, tc.want)
			}
			var le *LoadError
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &le) || len(le.Errs) != len(tc.errs) {
				t.Fatalf("err = %v, want %d problems", err, len(tc.errs))
			}
			for i, want := range tc.errs {
				if !strings.HasPrefix(le.Errs[i].Error(), want) {
					t.Errorf("problem %d = %q, want it to start with %q", i, le.Errs[i], want)
				}
			}
		})
	}
}

// TestStreamCitedUnchanged: an article a milestone cites is parsed even
// when Unchanged names it, since the milestone copies its title and path;
// it is then counted as unchanged and not handed to Publish, like any
// unchanged file. One that changed is published.
func TestStreamCitedUnchanged(t *testing.T) {
	for _, tc := range []struct {
		desc          string
		unchanged     bool
		wantPublished []string
		wantUnchanged int
	}{
		{desc: "unchanged: counted, not published", unchanged: true, wantUnchanged: 6},
		{desc: "changed: published", wantPublished: []string{"fixture-article"}, wantUnchanged: 5},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var (
				mu        sync.Mutex // Unchanged is asked on several goroutines
				asked     []string
				published []string
			)
			c, err := streamFS(streamTree(t, nil), StreamOptions{
				Unchanged: func(p string, _ fs.FileInfo, _ []byte) bool {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, p)
					return tc.unchanged || !strings.HasSuffix(p, "/fixture-article.md")
				},
				Publish: func(articles []*Article) error {
					for _, a := range articles {
						published = append(published, a.Slug)
					}
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(asked, "articles/2025/12/fixture-article.md") {
				t.Errorf("Unchanged was not asked of the cited article (asked of %q)", asked)
			}
			if !slices.Equal(published, tc.wantPublished) || c.Unchanged != tc.wantUnchanged {
				t.Errorf("published %q, %d unchanged; want %q, %d", published, c.Unchanged, tc.wantPublished, tc.wantUnchanged)
			}
			reports := c.Countries[0].Milestones[0].Reports
			if len(reports) != 1 || reports[0].Slug != "fixture-article" || reports[0].Title == "" {
				t.Errorf("the milestone's reports are %+v, want the cited article's", reports)
			}
		})
	}
}
