package content

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// FuzzArticleFile feeds whole article files — front matter and body — to
// the loader, beside the valid registries: nothing panics, a bad file is a
// *LoadError naming it (never another error), and an accepted one yields
// exactly one article with the slug of its path and a body ending in a
// newline.
func FuzzArticleFile(f *testing.F) {
	base := fstest.MapFS{}
	for _, name := range []string{"sources.yaml", "countries.yaml", "specs.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata/valid", name))
		if err != nil {
			f.Fatal(err)
		}
		base[name] = &fstest.MapFile{Data: b}
	}
	valid, err := os.ReadFile("testdata/valid/articles/2025/12/fixture-article.md")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte("---\ntitle: x\n---"))
	f.Add([]byte("\ufeff---\r\ntitle: [\r\n---\r\nbody"))
	f.Add([]byte("---\ntitle: &a [*a, *a]\nunknown_field: 1\n---\n"))
	f.Add([]byte("---\npublished_at: 99999-99-99\nsources: {}\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("no front matter"))
	const path = "articles/2025/12/fuzzed.md"
	f.Fuzz(func(t *testing.T, file []byte) {
		fsys := fstest.MapFS{path: &fstest.MapFile{Data: file}}
		for k, v := range base {
			fsys[k] = v
		}
		c, err := LoadFS(fsys)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || len(le.Errs) == 0 {
				t.Fatalf("error %v (%T); want a *LoadError naming the file", err, err)
			}
			return
		}
		if len(c.Articles) != 1 || c.Articles[0].Slug != "fuzzed" {
			t.Fatalf("accepted %d articles (%+v); want the one at %s", len(c.Articles), c.Articles, path)
		}
		if b := c.Articles[0].Body; b == "" || b[len(b)-1] != '\n' {
			t.Fatalf("body %q does not end in a newline", b)
		}
	})
}
