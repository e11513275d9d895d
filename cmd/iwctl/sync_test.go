package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// TestSyncRemovesRegistryEntries checks that an entry deleted from
// sources.yaml, specs.yaml or countries.yaml (with its aliases.yaml line)
// is removed by the next sync, which names it and counts it, and that one
// a published article without a file still cites is refused, naming the
// registry file, the entry and the article, with nothing changed.
func TestSyncRemovesRegistryEntries(t *testing.T) {
	st := newSyncTree(t)
	ctx := context.Background()
	rdb := st.rs.Client()
	s := store.New(rdb)
	st.sync(t)
	c, err := content.Load(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	// citedBy maps "kind id" to the articles citing the entry.
	citedBy := map[string][]string{}
	pinned := map[string]bool{}
	for _, cty := range c.Countries {
		for _, m := range cty.Milestones {
			for _, slug := range m.Articles {
				pinned[slug] = true
			}
		}
	}
	for _, a := range c.Articles {
		var cites []string
		for _, src := range a.Sources {
			cites = append(cites, "source "+src.Source)
		}
		for _, sp := range a.Specs {
			cites = append(cites, "spec "+sp)
		}
		for _, cc := range a.Countries {
			cites = append(cites, "country "+cc)
		}
		for _, k := range cites {
			if !slices.Contains(citedBy[k], a.Slug) {
				citedBy[k] = append(citedBy[k], a.Slug)
			}
		}
	}
	entries := map[string][]string{}
	for _, src := range c.Sources {
		entries["source"] = append(entries["source"], src.Slug)
	}
	for _, sp := range c.Specs {
		entries["spec"] = append(entries["spec"], sp.Slug)
	}
	for _, cty := range c.Countries {
		entries["country"] = append(entries["country"], cty.Code)
	}

	for _, tc := range []struct {
		desc string
		kind string
		// cited: the entry is cited by exactly one article, which no
		// milestone cites and whose file is deleted with the entry.
		cited bool
		// add, when set, is an entry added to the tree and synced first
		// (every country of content/ is cited), with its aliases line.
		add, alias string
	}{
		{desc: "an unreferenced source", kind: "source"},
		{desc: "an unreferenced spec", kind: "spec"},
		{desc: "an unreferenced country", kind: "country",
			add:   "- code: ca\n  name: Canada\n  mandate_status: voluntary\n  authority: Canada Revenue Agency\n",
			alias: "  ca: [Canadian, Canadians]\n"},
		{desc: "a source cited by a published article without a file", kind: "source", cited: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			// The first entry of the kind whose removal leaves a valid
			// tree (another registry entry may cite it).
			candidates := entries[tc.kind]
			if tc.add != "" {
				addEntry(t, st.dir, registryFile[tc.kind], tc.add, tc.alias)
				if out := st.sync(t); !strings.Contains(out, ": updated\n") {
					t.Fatalf("the added entry was not published:\n%s", out)
				}
				kv := strings.Fields(strings.SplitN(tc.add, "\n", 2)[0])
				candidates = []string{kv[len(kv)-1]}
			}
			var id, article string
			var undo func()
			for _, e := range candidates {
				by := citedBy[tc.kind+" "+e]
				if tc.cited != (len(by) == 1 && !pinned[by[0]]) || (!tc.cited && len(by) > 0) {
					continue
				}
				files := []string{registryFile[tc.kind], "aliases.yaml"}
				if tc.cited {
					files = append(files, articleFile(t, st.dir, by[0]))
				}
				undo = keep(t, st.dir, files...)
				removeEntry(t, st.dir, tc.kind, e)
				if tc.cited {
					os.Remove(filepath.Join(st.dir, files[2]))
				}
				if _, err := content.Load(st.dir); err == nil {
					id = e
					if tc.cited {
						article = by[0]
					}
					break
				}
				undo()
			}
			if id == "" {
				t.Fatalf("no %s of content/ can be removed for this case", tc.kind)
			}
			defer undo()
			t.Logf("removing %s %s", tc.kind, id)
			before := registryHashes(t, rdb)
			var out bytes.Buffer
			err := run(ctx, []string{"sync", st.dir}, &out)
			if tc.cited {
				if err == nil {
					t.Fatalf("sync removed %s %s, which %s cites:\n%s", tc.kind, id, article, out.String())
				}
				t.Log(err)
				for _, w := range []string{registryFile[tc.kind], fmt.Sprintf("%s %q", tc.kind, id), fmt.Sprintf("%q", article)} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %s", err, w)
					}
				}
				if !maps.Equal(before, registryHashes(t, rdb)) {
					t.Error("a refused sync changed the registries")
				}
				if rec, err := s.Article(ctx, article); err != nil || rec.Retracted() {
					t.Errorf("the article without a file: %v, %v; want it still published", rec, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{fmt.Sprintf("  %s %s: removed\n", tc.kind, id), "; 1 changed (1 removed), 0 events"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q does not contain %q", out.String(), w)
				}
			}
			var gone error
			switch tc.kind {
			case "source":
				all, err := s.Sources(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if slices.ContainsFunc(all, func(src *content.Source) bool { return src.Slug == id }) {
					gone = fmt.Errorf("still listed")
				}
			case "spec":
				_, gone = s.Spec(ctx, id)
			case "country":
				_, gone = s.Country(ctx, id)
			}
			if !errors.Is(gone, store.ErrNotFound) && (tc.kind != "source" || gone != nil) {
				t.Errorf("%s %s after the sync: %v, want it gone", tc.kind, id, gone)
			}
			// Restored, it is published again.
			undo()
			if out := st.sync(t); !strings.Contains(out, fmt.Sprintf("  %s %s: updated\n", tc.kind, id)) {
				t.Errorf("the restored entry was not published again:\n%s", out)
			}
		})
	}
}

// addEntry appends entry to a registry file and alias, when not empty,
// under the "countries:" or "specs:" key of aliases.yaml.
func addEntry(t *testing.T, dir, file, entry, alias string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\n" + entry)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if alias == "" {
		return
	}
	key := map[string]string{"countries.yaml": "countries:\n", "specs.yaml": "specs:\n"}[file]
	path := filepath.Join(dir, "aliases.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("\n"+key))
	if at < 0 {
		t.Fatalf("aliases.yaml has no %q", key)
	}
	at += 1 + len(key)
	b = slices.Concat(b[:at], []byte(alias), b[at:])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

var registryFile = map[string]string{"source": "sources.yaml", "spec": "specs.yaml", "country": "countries.yaml"}

// keep saves the files of dir named and returns a function that puts them
// back.
func keep(t *testing.T, dir string, files ...string) func() {
	t.Helper()
	saved := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		saved[f] = b
	}
	return func() {
		for f, b := range saved {
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// removeEntry deletes a registry entry from its file (the list item that
// begins "- slug: id" or "- code: id", up to the next unindented line) and
// a spec's or country's line from aliases.yaml.
func removeEntry(t *testing.T, dir, kind, id string) {
	t.Helper()
	field := "slug"
	if kind == "country" {
		field = "code"
	}
	edit := func(file string, drop func(lines []string, i int) int) {
		path := filepath.Join(dir, file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(b), "\n")
		for i := range lines {
			if n := drop(lines, i); n > 0 {
				lines = slices.Delete(lines, i, i+n)
				if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("%s has no entry %s", file, id)
	}
	edit(registryFile[kind], func(lines []string, i int) int {
		if strings.TrimSpace(lines[i]) != "- "+field+": "+id {
			return 0
		}
		n := 1
		for i+n < len(lines) && (lines[i+n] == "\n" || strings.HasPrefix(lines[i+n], " ")) {
			n++
		}
		return n
	})
	if kind != "source" {
		edit("aliases.yaml", func(lines []string, i int) int {
			if strings.HasPrefix(lines[i], "  "+id+":") {
				return 1
			}
			return 0
		})
	}
}

// articleFile is the path of an article's file under dir, relative to it.
func articleFile(t *testing.T, dir, slug string) string {
	t.Helper()
	var found string
	filepath.WalkDir(filepath.Join(dir, "articles"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == slug+".md" {
			found, _ = filepath.Rel(dir, p)
		}
		return err
	})
	if found == "" {
		t.Fatalf("no file for article %s", slug)
	}
	return found
}

// registryHashes reads the three registry hashes whole.
func registryHashes(t *testing.T, rdb redis.UniversalClient) map[string]string {
	t.Helper()
	return redistest.Hashes(t, rdb, "iw:{content}:countries", "iw:{content}:specs", "iw:{content}:sources")
}

// TestSyncReportsMovedArticles checks that a sync names each article whose
// address moved (its published_at now in another month, so its old
// address answers 301), old path and new, as no event does; and that an
// edit within the month is no move.
func TestSyncReportsMovedArticles(t *testing.T) {
	st := newSyncTree(t)
	st.sync(t)
	a := st.a
	oldPath := a.Path()
	// The first of the month before, at the same time: no correction or
	// updated_at of the article is before it.
	moved := time.Date(a.PublishedAt.Year(), a.PublishedAt.Month()-1, 1, 9, 0, 0, 0, time.UTC)
	newPath := "/" + moved.Format("2006/01") + "/" + a.Slug
	newFile := filepath.Join(st.dir, "articles", moved.Format("2006"), moved.Format("01"), a.Slug+".md")
	publishedAt := regexp.MustCompile(`(?m)^published_at: .*$`)
	for _, tc := range []struct {
		desc    string
		edit    func() error
		want    []string
		notWant string
	}{
		{desc: "an edit within the month is no move", edit: func() error {
			b, err := os.ReadFile(st.file)
			if err != nil {
				return err
			}
			return os.WriteFile(st.file, append(b, []byte("\nOne more sentence.\n")...), 0o644)
		}, want: []string{"  article " + a.Slug + ": updated\n", "; 1 changed, 0 events"}, notWant: "moved"},
		{desc: "a file moved to another month names both addresses", edit: func() error {
			b, err := os.ReadFile(st.file)
			if err != nil {
				return err
			}
			if !publishedAt.Match(b) {
				return fmt.Errorf("%s has no published_at line", st.file)
			}
			b = publishedAt.ReplaceAll(b, []byte("published_at: "+moved.Format(time.RFC3339)))
			if err := os.MkdirAll(filepath.Dir(newFile), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(newFile, b, 0o644); err != nil {
				return err
			}
			return os.Remove(st.file)
		}, want: []string{"  article " + a.Slug + ": updated, moved " + oldPath + " → " + newPath + "\n", "; 1 changed (1 moved), 0 events"}},
		{desc: "the move is reported once", edit: func() error { return nil },
			want: []string{"; 0 changed, 0 events"}, notWant: "moved"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if err := tc.edit(); err != nil {
				t.Fatal(err)
			}
			out := st.sync(t)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output %q does not contain %q", out, w)
				}
			}
			if tc.notWant != "" && strings.Contains(out, tc.notWant) {
				t.Fatalf("output %q contains %q", out, tc.notWant)
			}
		})
	}
	rec, err := store.New(st.rs.Client()).Article(context.Background(), a.Slug)
	if err != nil || rec.Path() != newPath {
		t.Fatalf("the moved article: %v, %v; want it at %s", rec, err, newPath)
	}
}

// failingWriter refuses every write, as stdout redirected to a full disk
// does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A sync whose report cannot be written fails: its summary and warnings
// would otherwise be lost while it exits 0.
func TestSyncReportWriteFails(t *testing.T) {
	st := newSyncTree(t)
	err := run(context.Background(), []string{"sync", st.dir}, failingWriter{})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("err = %v; want the report's write error", err)
	}
}
