package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// syncTree is a copy of the repository's content tree, to be synced into a
// test's Redis, one of its articles that no milestone cites and one that a
// milestone cites.
type syncTree struct {
	rs  redistest.Backend
	dir string
	// n counts the article files, every one of which a sync with nothing
	// changed counts as unchanged; byStat those that no milestone cites,
	// which it can know unchanged by their stat alone (the cited ones are
	// read and parsed, since a milestone copies their title and path).
	n, byStat int
	a         *content.Article
	file      string
	cited     string // the file of an article a milestone cites
}

func newSyncTree(t *testing.T) *syncTree {
	t.Helper()
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "content"))); err != nil {
		t.Fatal(err)
	}
	c, err := content.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, cty := range c.Countries {
		for _, m := range cty.Milestones {
			for _, slug := range m.Articles {
				pinned[slug] = true
			}
		}
	}
	st := &syncTree{rs: rs, dir: dir, n: len(c.Articles), byStat: len(c.Articles) - len(pinned)}
	fileOf := func(a *content.Article) string {
		return filepath.Join(dir, "articles", a.PublishedAt.Format("2006"), a.PublishedAt.Format("01"), a.Slug+".md")
	}
	for _, x := range c.Articles {
		if !pinned[x.Slug] {
			st.a = x
		} else {
			st.cited = fileOf(x)
		}
	}
	if st.byStat < 10 || st.a == nil || st.cited == "" {
		t.Fatalf("only %d articles that no milestone cites, cited one %q; the test needs more", st.byStat, st.cited)
	}
	st.file = fileOf(st.a)
	return st
}

// sync runs iwctl sync on the tree and returns its output.
func (st *syncTree) sync(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"sync", st.dir}, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestSyncSkipsUnchangedFiles checks that a sync parses only the files that
// changed since the last one (and those milestones cite, which it still
// counts as unchanged and does not publish again), that a registry change
// makes it parse every file again, and that a skipped file is still
// checked for duplicate slugs. n counts the files.
func TestSyncSkipsUnchangedFiles(t *testing.T) {
	st := newSyncTree(t)
	rs, dir, n, a, file := st.rs, st.dir, st.n, st.a, st.file
	sync := func() string { return st.sync(t) }
	sync()

	for _, tc := range []struct {
		desc string
		edit func() error
		want []string
	}{
		{desc: "nothing changed: every file skipped", edit: func() error { return nil },
			want: []string{fmt.Sprintf("%d articles (%d files unchanged since the last sync)", n, n), "; 0 changed, 0 events"}},
		{desc: "one file edited: only it is parsed", edit: func() error {
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			return os.WriteFile(file, append(b, []byte("\nOne more sentence.\n")...), 0o644)
		}, want: []string{"(" + strconv.Itoa(n-1) + " files unchanged since the last sync)"}},
		{desc: "the edit is published", edit: func() error { return nil },
			want: []string{"(" + strconv.Itoa(n) + " files unchanged since the last sync)"}},
		{desc: "a cited article edited: only it is published", edit: func() error {
			b, err := os.ReadFile(st.cited)
			if err != nil {
				return err
			}
			return os.WriteFile(st.cited, append(b, []byte("\nOne more sentence.\n")...), 0o644)
		}, want: []string{fmt.Sprintf("%d articles (%d files unchanged since the last sync)", n, n-1), "; 1 changed, 0 events"}},
		{desc: "the cited article's edit is recorded", edit: func() error { return nil },
			want: []string{fmt.Sprintf("%d articles (%d files unchanged since the last sync)", n, n), "; 0 changed, 0 events"}},
		{desc: "a registry changed: every file parsed again", edit: func() error {
			f, err := os.OpenFile(filepath.Join(dir, "sources.yaml"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("\n# a comment\n")
			return err
		}, want: []string{"(0 files unchanged since the last sync)"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if err := tc.edit(); err != nil {
				t.Fatal(err)
			}
			out := sync()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output %q does not contain %q", out, w)
				}
			}
		})
	}
	rec, err := store.New(rs.Client()).Article(context.Background(), a.Slug)
	if err != nil || !strings.Contains(rec.Body, "One more sentence.") {
		t.Fatalf("the edited article was not published: %v", err)
	}

	// A copy of a skipped file under another month is a duplicate slug.
	dup := filepath.Join(dir, "articles", "2020", "01", a.Slug+".md")
	os.MkdirAll(filepath.Dir(dup), 0o755)
	b, _ := os.ReadFile(file)
	os.WriteFile(dup, b, 0o644)
	err = run(context.Background(), []string{"sync", dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("err = %v, want a duplicate slug", err)
	}
}

// TestSyncValidatesWholeTreeFirst checks that a tree larger than a
// publishing batch is validated as a whole before anything is written
// (docs/architecture.md): 1,100 valid articles and one broken file write
// nothing and emit no event. Once it is fixed the tree is published; an
// article whose file is then deleted stays published, with a warning.
func TestSyncValidatesWholeTreeFirst(t *testing.T) {
	st := newSyncTree(t)
	rdb := st.rs.Client()
	ctx := context.Background()
	tmpl, err := os.ReadFile(st.file)
	if err != nil {
		t.Fatal(err)
	}
	published := regexp.MustCompile(`(?m)^published_at: .*$`)
	if !published.Match(tmpl) || bytes.Contains(tmpl, []byte("updated_at:")) || bytes.Contains(tmpl, []byte("corrections:")) {
		t.Fatalf("%s is not a usable template", st.file)
	}
	bulk := filepath.Join(st.dir, "articles", "2019", "01")
	if err := os.MkdirAll(bulk, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 1100
	if n <= syncBatch {
		t.Fatal("the test needs more articles than a batch")
	}
	for i := range n {
		at := fmt.Sprintf("published_at: 2019-01-%02dT09:%02d:00Z", 1+i%28, i%60)
		b := published.ReplaceAll(tmpl, []byte(at))
		if err := os.WriteFile(filepath.Join(bulk, fmt.Sprintf("bulk-article-%04d.md", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken := filepath.Join(st.dir, "articles", "2026", "11", "broken-one.md")
	os.MkdirAll(filepath.Dir(broken), 0o755)
	if err := os.WriteFile(broken, []byte("---\ntitle: Broken\n---\nNo section, no date.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	err = run(ctx, []string{"sync", st.dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "broken-one.md") {
		t.Fatalf("sync of a tree with a broken file: %v, want the file named", err)
	}
	keys, kerr := redistest.Keys(ctx, rdb, "iw:{content}:*")
	if kerr != nil {
		t.Fatal(kerr)
	}
	if events, _ := rdb.XLen(ctx, events.Stream).Result(); events != 0 || len(keys) != 0 {
		t.Fatalf("a tree with a broken file wrote %d events and %d content keys (e.g. %q), want none", events, len(keys), keys[:min(3, len(keys))])
	}

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	st.sync(t)
	total, err := store.New(rdb).ArticleCount(ctx)
	if err != nil || total < n {
		t.Fatalf("after the fix: %d articles published (%v), want at least %d", total, err, n)
	}

	gone := filepath.Join(bulk, "bulk-article-0007.md")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	out := st.sync(t)
	if !strings.Contains(out, "warning: article bulk-article-0007 is published but has no file") ||
		!strings.Contains(out, "warning: 1 published articles have no file") {
		t.Fatalf("a deleted file was not warned of:\n%s", out)
	}
	if rec, err := store.New(rdb).Article(ctx, "bulk-article-0007"); err != nil || rec.Retracted() {
		t.Fatalf("the article whose file was deleted: %v, %v; want it still published", rec, err)
	}
}
