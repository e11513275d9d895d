package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"gopkg.in/yaml.v3"
)

// archiveInfo is what the run needs to know about a generated archive
// without holding its articles: a sample of them to request, the newest
// one to edit, and which to retract.
type archiveInfo struct {
	dir string
	n   int
	// sample are up to sampleSize articles spread over the archive.
	sample []*content.Article
	// newest is the index of the most recently published article.
	newest int
	// retract are the slugs a run retracts after publishing.
	retract []string
	// bytes is the size of the article files (0 for a shared tree).
	bytes int64
	// shared marks a tree given by SCALE_TREE_DIR, which is never written.
	shared bool
}

const sampleSize = 2000

// frontMatter is an article's YAML front matter as editors write it.
type frontMatter struct {
	Slug        string               `yaml:"slug"`
	Title       string               `yaml:"title"`
	Kicker      string               `yaml:"kicker,omitempty"`
	Dek         string               `yaml:"dek,omitempty"`
	Section     string               `yaml:"section"`
	Audience    []string             `yaml:"audience"`
	Countries   []string             `yaml:"countries"`
	Tags        []string             `yaml:"tags,omitempty"`
	Specs       []string             `yaml:"specs,omitempty"`
	Locale      string               `yaml:"locale,omitempty"`
	PublishedAt time.Time            `yaml:"published_at"`
	UpdatedAt   *time.Time           `yaml:"updated_at,omitempty"`
	Image       string               `yaml:"image,omitempty"`
	Sources     []citation           `yaml:"sources"`
	Corrections []content.Correction `yaml:"corrections,omitempty"`
}

type citation struct {
	Source string `yaml:"source"`
	URL    string `yaml:"url"`
}

// markdown renders a as a content file: front matter, then the body.
func markdown(a *content.Article) ([]byte, error) {
	fm := frontMatter{
		Slug: a.Slug, Title: a.Title, Kicker: a.Kicker, Dek: a.Dek, Section: a.Section, Audience: a.Audience,
		Countries: a.Countries, Tags: a.Tags, Specs: a.Specs, Locale: a.Locale, PublishedAt: a.PublishedAt,
		UpdatedAt: a.UpdatedAt, Image: a.Image, Corrections: a.Corrections,
	}
	for _, c := range a.Sources {
		fm.Sources = append(fm.Sources, citation{Source: c.Source, URL: c.URL})
	}
	front, err := yaml.Marshal(&fm)
	if err != nil {
		return nil, fmt.Errorf("scale: writing the front matter of %s: %w", a.Slug, err)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(front)
	b.WriteString("---\n")
	b.WriteString(a.Body)
	return b.Bytes(), nil
}

// articleFile is where a lives in a content tree.
func articleFile(dir string, a *content.Article) string {
	return filepath.Join(dir, "articles", a.PublishedAt.Format("2006"), a.PublishedAt.Format("01"), a.Slug+".md")
}

// writeArchive writes the n-article archive made from base with seed as a
// content tree in dir (the registries copied from baseDir), unless dir
// already holds it complete. Articles are generated and written in
// parallel and never held all at once.
//
// A shared tree (SCALE_TREE_DIR) is never written: its sampled articles are
// compared with what the generator makes of them instead, and a tree made
// from other articles or another seed is refused.
func writeArchive(baseDir, dir string, base *content.Corpus, n int, seed uint64, shared bool) (*archiveInfo, error) {
	src := contenttest.NewArchiveSource(base, seed)
	info := &archiveInfo{dir: dir, n: n, shared: shared}
	// The marker names the corpus and seed the tree was made from; a tree
	// made from another corpus is made again.
	done := filepath.Join(dir, ".complete")
	mark := fingerprint(baseDir, base, seed)
	have, err := os.ReadFile(done)
	write := !shared && (err != nil || string(have) != mark)
	if write {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for _, f := range []string{"countries.yaml", "specs.yaml", "sources.yaml", "aliases.yaml"} {
			b, err := os.ReadFile(filepath.Join(baseDir, f))
			if errors.Is(err, fs.ErrNotExist) && f == "aliases.yaml" {
				continue // optional
			}
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return nil, err
			}
		}
	}
	step := max(1, n/sampleSize)
	workers := runtime.GOMAXPROCS(0)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		newestAt time.Time
		made     = map[string]bool{}
	)
	for w := range workers {
		wg.Go(func() {
			var bytes int64
			newest, at := -1, time.Time{}
			for i := w; i < n; i += workers {
				a := src.Article(i)
				if a.PublishedAt.After(at) {
					newest, at = i, a.PublishedAt
				}
				sampled, retracted := i%step == 0 && i/step < sampleSize, src.Retracted(i)
				if sampled || retracted {
					mu.Lock()
					if sampled {
						info.sample = append(info.sample, a)
					}
					if retracted {
						info.retract = append(info.retract, a.Slug)
					}
					mu.Unlock()
				}
				if !write {
					continue
				}
				b, err := markdown(a)
				if err == nil {
					p := articleFile(dir, a)
					d := filepath.Dir(p)
					mu.Lock()
					if !made[d] {
						err = os.MkdirAll(d, 0o755)
						made[d] = err == nil
					}
					mu.Unlock()
					if err == nil {
						err = os.WriteFile(p, b, 0o644)
					}
					bytes += int64(len(b))
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			info.bytes += bytes
			if newest >= 0 && at.After(newestAt) {
				info.newest, newestAt = newest, at
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("scale: writing the archive: %w", firstErr)
	}
	if write {
		if err := os.WriteFile(done, []byte(mark), 0o644); err != nil {
			return nil, err
		}
	}
	if shared {
		// The newest article is the one a run edits, which earlier runs
		// did in the tree itself: it is left out of the comparison.
		newest := src.Article(info.newest).Slug
		for _, a := range info.sample {
			if a.Slug == newest {
				continue
			}
			want, err := markdown(a)
			if err != nil {
				return nil, err
			}
			if got, err := os.ReadFile(articleFile(dir, a)); err != nil || !bytes.Equal(got, want) {
				return nil, fmt.Errorf("scale: the tree %s was not made from this corpus with seed %d (%s differs or is missing: %v); unset SCALE_TREE_DIR to generate one", dir, seed, articleFile(dir, a), err)
			}
		}
	}
	return info, nil
}

// editArticle rewrites the i-th article of the archive in dir with a new
// title carrying token and an updated_at of at, as an editor's fix would.
// A shared tree is left as it is: the edit then exists only in the store.
func editArticle(info *archiveInfo, base *content.Corpus, seed uint64, i int, token string, at time.Time) (*content.Article, error) {
	a := contenttest.NewArchiveSource(base, seed).Article(i)
	a.Title = a.Title + " " + token
	at = at.UTC().Truncate(time.Second)
	a.UpdatedAt = &at
	if info.shared {
		return a, nil
	}
	b, err := markdown(a)
	if err != nil {
		return nil, err
	}
	return a, os.WriteFile(articleFile(info.dir, a), b, 0o644)
}

// fingerprint identifies the corpus and seed an archive is made from.
func fingerprint(baseDir string, base *content.Corpus, seed uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "seed %d\n", seed)
	for _, f := range []string{"countries.yaml", "specs.yaml", "sources.yaml", "aliases.yaml"} {
		b, _ := os.ReadFile(filepath.Join(baseDir, f))
		h.Write(b)
	}
	for _, a := range base.Articles {
		fmt.Fprintf(h, "%s %d %d\n", a.Slug, len(a.Body), a.PublishedAt.Unix())
	}
	return hex.EncodeToString(h.Sum(nil))
}
