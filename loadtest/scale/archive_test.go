package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

// TestArchiveTree writes a generated archive as a content tree and loads it
// with the real loader: every article passes validation, the text keeps its
// non-ASCII characters, and the same seed writes the same files.
func TestArchiveTree(t *testing.T) {
	base, err := content.Load("../../content")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	var infos []*archiveInfo
	for _, dir := range dirs {
		info, err := writeArchive("../../content", dir, base, n, seed, false)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	c, err := content.Load(dirs[0])
	if err != nil {
		t.Fatalf("the generated tree does not load: %v", err)
	}
	if len(c.Articles) != n {
		t.Fatalf("loaded %d articles, want %d", len(c.Articles), n)
	}
	nonASCII, corrected, sections, years := 0, 0, map[string]bool{}, map[int]bool{}
	for _, a := range c.Articles {
		if strings.ContainsFunc(a.Body, func(r rune) bool { return r > 127 }) {
			nonASCII++
		}
		if len(a.Corrections) > 0 {
			corrected++
		}
		sections[a.Section] = true
		years[a.PublishedAt.Year()] = true
	}
	for _, tc := range []struct {
		desc string
		ok   bool
	}{
		{desc: "some bodies keep non-ASCII text", ok: nonASCII > n/10},
		{desc: "some articles carry a correction", ok: corrected > 0 && corrected < n/10},
		{desc: "every section has articles", ok: len(sections) == len(content.Sections)},
		{desc: "dates spread over twenty years", ok: len(years) >= 19},
		{desc: "some articles are to be retracted", ok: len(infos[0].retract) > 0 && len(infos[0].retract) < n/50},
		{desc: "the newest article is the one to edit", ok: c.Articles[0].Slug == contenttest.NewArchiveSource(base, seed).Article(infos[0].newest).Slug},
	} {
		if !tc.ok {
			t.Errorf("%s: no", tc.desc)
		}
	}
	// Determinism: a few files compared byte for byte.
	for _, a := range c.Articles[:50] {
		x, err := os.ReadFile(articleFile(dirs[0], a))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(articleFile(dirs[1], a))
		if err != nil {
			t.Fatal(err)
		}
		if string(x) != string(y) {
			t.Fatalf("%s differs between two runs with the same seed", a.Slug)
		}
	}
}

// TestSharedTree reads a tree written before as a shared one (SCALE_TREE_DIR):
// nothing in it is written, and a tree made with another seed is refused.
func TestSharedTree(t *testing.T) {
	base, err := content.Load("../../content")
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	dir := filepath.Join(t.TempDir(), "tree")
	if _, err := writeArchive("../../content", dir, base, n, seed, false); err != nil {
		t.Fatal(err)
	}
	// A file the generator would never write: a run that rewrote the tree
	// would remove it.
	stray := filepath.Join(dir, "stray.txt")
	if err := os.WriteFile(stray, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, ".complete"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".complete"), []byte("another corpus"), 0o644)
	info, err := writeArchive("../../content", dir, base, n, seed, true)
	if err != nil {
		t.Fatalf("the shared tree was refused: %v", err)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("the shared tree was rewritten: %v", err)
	}
	if mark, _ := os.ReadFile(filepath.Join(dir, ".complete")); string(mark) != "another corpus" {
		t.Errorf("the shared tree's marker was rewritten (was %.12s…)", before)
	}
	edited, err := editArticle(info, base, seed, info.newest, "zqtoken", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(articleFile(dir, edited)); strings.Contains(string(b), "zqtoken") {
		t.Error("the edit was written into the shared tree")
	}
	if _, err := writeArchive("../../content", dir, base, n, seed+1, true); err == nil {
		t.Error("a shared tree made with another seed was accepted")
	}
}
