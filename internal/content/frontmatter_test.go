package content

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"gopkg.in/yaml.v3"
)

// libraryFrontMatter decodes front as parseArticle does without the fast
// path.
func libraryFrontMatter(front []byte) (Article, error) {
	var a Article
	dec := yaml.NewDecoder(bytes.NewReader(front))
	dec.KnownFields(true)
	err := dec.Decode(&a)
	return a, err
}

// frontMatterSeeds are the front matters of the test trees and hand-made
// ones at the edges of the fast path's subset.
func frontMatterSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, dir := range []string{"testdata", "../../content/articles"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".md" {
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if front, _, ok := splitFrontMatter(raw); ok {
				seeds = append(seeds, front)
			}
			return nil
		})
	}
	for _, s := range []string{
		"slug: a\ntitle: 'It''s: here'\ndek: \"quoted\"\nsection: specs\naudience:\n    - ap\n    - biz\ncountries: [\"no\", de]\ntags: []\npublished_at: 2025-01-02T03:04:05Z\nupdated_at: 2025-01-03T03:04:05.5+02:00\nsources:\n    - source: x\n      url: https://e.com/a#b\ncorrections:\n    - date: 2025-01-03T03:04:05Z\n      text: Fixed.\n",
		"title: null\n", "title: ~\n", "title: 12\n", "title: true\n", "title: a: b\n", "title: a #c\n", "title: a:\n",
		"title: x\n  continued\n", "title: x\ntitle: y\n", "unknown: 1\n", "tags:\n- a\n- b\nslug: s\n", "tags:\n  - a\n - b\n",
		"published_at: 2025-1-2\n", "published_at: '2025-01-02T03:04:05Z'\n", "published_at: 2025-01-02 03:04:05\n",
		"sources:\n  - source: a\n    url: b\n  - url: c\n", "sources:\n  - source: a\n    name: b\n", "countries: [a, ]\n",
		"countries: [a b, 'c']\n", "title: \"a\\\"b\"\n", "title: 'a\n", "title: a\u2028b\n", "title: \u00e9t\u00e9\n",
		"corrections:\n    - date: 2025-01-03T03:04:05Z\n      text: Fixed.\n      withdraws: [\"a, b\", 'c', d]\n",
		"corrections:\n    - date: 2025-01-03T03:04:05Z\n      withdraws: []\n      text: Fixed.\n", "corrections:\n    - date: 2025-01-03T03:04:05Z\n      text: Fixed.\n      withdraws:\n        - a\n",
		"tags: [a]x\n", "", "\n", "title: x\n\nslug: y\n", "title: x\n   \nslug: y\n", "tags:\n  - ~\n", "tags:\n  -\n",
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// TestFrontMatterFastPathCovers shows that the fast path takes the test
// trees' articles (else it would speed nothing up) and agrees with yaml.v3
// on every seed it takes.
func TestFrontMatterFastPathCovers(t *testing.T) {
	taken := 0
	for _, front := range frontMatterSeeds(t) {
		if checkFastFrontMatter(t, front) {
			taken++
		}
	}
	if taken < 20 {
		t.Fatalf("the fast path took %d front matters of the test trees; want most of them", taken)
	}
}

// checkFastFrontMatter fails t when the fast path takes front and yaml.v3
// does not decode it to the same Article, and reports whether it took it.
func checkFastFrontMatter(t testing.TB, front []byte) bool {
	var fast Article
	if !fastFrontMatter(front, &fast) {
		if !reflect.DeepEqual(fast, Article{}) {
			t.Fatalf("the fast path declined %q but wrote %+v", front, fast)
		}
		return false
	}
	lib, err := libraryFrontMatter(front)
	if err != nil {
		t.Fatalf("the fast path took %q, which yaml.v3 rejects: %v", front, err)
	}
	if !reflect.DeepEqual(fast, lib) {
		t.Fatalf("front matter %q:\nfast path %#v\nyaml.v3   %#v", front, fast, lib)
	}
	return true
}

// FuzzFrontMatterFastPath checks that whatever front matter the fast path
// accepts, yaml.v3 decodes, with unknown fields refused, to the very same
// Article (docs/decisions.md, "Article front matter has a fast path,
// checked against yaml.v3"): the library stays the
// authority and the fast path only ever answers as it would.
func FuzzFrontMatterFastPath(f *testing.F) {
	for _, s := range frontMatterSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, front []byte) {
		checkFastFrontMatter(t, front)
	})
}

// articlePathRE is what matchArticlePath replaces.
var articlePathRE = regexp.MustCompile(`^articles/(\d{4})/(\d{2})/([^/]+)\.md$`)

// FuzzArticlePath checks matchArticlePath against the regular expression
// it replaces.
func FuzzArticlePath(f *testing.F) {
	for _, s := range []string{"articles/2025/01/a.md", "articles/2025/01/.md", "articles/2025/1/a.md", "articles/2025/01/a/b.md",
		"articles/２025/01/a.md", "articles/2025/01/a.md\n", "articles/2025/01/\n.md", "x/articles/2025/01/a.md", "articles/2025/01/a.mdx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		var got []string
		if f, ok := matchArticlePath(p); ok {
			got = []string{p, f.year, f.month, f.slug}
		}
		if want := articlePathRE.FindStringSubmatch(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("matchArticlePath(%q) = %q; the expression gives %q", p, got, want)
		}
	})
}
