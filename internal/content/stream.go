package content

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// StreamOptions says what Stream does with a tree's articles.
type StreamOptions struct {
	// Unchanged, when set, names the article files already published
	// exactly as they are, which passed the checks then (the caller answers
	// true only when the registries are unchanged too): they are read but
	// not parsed, counted in Corpus.Unchanged and not handed to Publish.
	// Articles that milestones cite are always read and parsed, since a
	// milestone copies their title, path and date; Known is not asked of
	// them, but Unchanged is, and one it names is counted and kept back
	// from Publish like the others.
	Unchanged func(path string, info fs.FileInfo, raw []byte) bool
	// Known, when set with Unchanged, is asked first with the file's stat
	// alone: true skips the file as unchanged without reading it (a stat
	// cache, docs/decisions.md); false has it read and put to Unchanged.
	Known func(path string, info fs.FileInfo) bool
	// Registries, when set, is called once with the registries (sources,
	// countries and their milestones, specs, aliases) before the first
	// Publish, or at the end when nothing is to be published, and never
	// once a problem has been found. An error stops the load.
	Registries func(c *Corpus) error
	// Publish receives the parsed and checked articles of each month
	// folder, oldest first (published_at, then slug), the months oldest
	// first. Once a problem has been found it is not called again, and the
	// months held for the batch are dropped: the files are still read and
	// checked, so that the error names every problem of the tree. An error
	// from Publish stops the load.
	Publish func(articles []*Article) error
	// Batch, when above zero, joins consecutive months until they hold at
	// least that many articles before they are handed to Publish (the
	// last call may hold fewer): a publisher's cost per call is then
	// spread over many articles even where months are small.
	Batch int
}

// Stream reads and validates the content tree rooted at dir like Load, but
// hands the articles to opts.Publish a month folder at a time instead of
// returning them, so that an archive of any size is read, checked and
// published in bounded memory (docs/decisions.md, "`iwctl sync` streams the
// tree"). The
// checks that span articles are made before any article is published,
// from what needs no parsing: the paths give every slug (a file's slug
// must be its name), so duplicates are found from the listing; the
// articles milestones cite are parsed first. A file that fails its own
// checks stops the publishing at its batch: the batches before it are
// published, so a tree smaller than a batch is published whole or not at
// all. The returned Corpus has no Articles.
func Stream(dir string, opts StreamOptions) (*Corpus, error) {
	return streamFS(treeFS(dir), opts)
}

// month is one folder of article files, in file order.
type month struct {
	dir   string
	paths []string
}

// monthRead is what reading a month gave: the articles to publish, oldest
// first, the files skipped as unchanged and the problems, in file order.
type monthRead struct {
	articles []*Article
	kept     int
	errs     []*FieldError
}

func streamFS(fsys fs.FS, opts StreamOptions) (*Corpus, error) {
	l := &loader{fsys: fsys, unchanged: opts.Unchanged, known: opts.Known}
	c := &Corpus{Newsletters: map[string]*NewsletterIntro{}}

	l.readYAML("sources.yaml", &c.Sources)
	l.readYAML("countries.yaml", &c.Countries)
	l.readYAML("specs.yaml", &c.Specs)
	if len(l.errs) > 0 {
		// The registries are what articles are checked against; without
		// them every article would report the same missing names.
		return nil, &LoadError{l.errs}
	}
	l.pinned = map[string]bool{}
	for _, cty := range c.Countries {
		if cty == nil {
			continue
		}
		for _, m := range cty.Milestones {
			for _, slug := range m.Articles {
				l.pinned[slug] = true
			}
		}
	}
	sources := l.checkSources(c.Sources)
	countries := l.checkCountries(c.Countries)
	specs := l.checkSpecs(c.Specs)
	c.Synonyms = l.readAliases(countries, specs)

	months, err := l.listArticles()
	if err != nil {
		return nil, err
	}
	// The articles milestones cite, parsed before the others: a milestone
	// copies their title, path and date, and is checked against their
	// countries (docs/decisions.md, "iwctl sync does not parse what it
	// published before"). One unchanged since it was published is still
	// put to Unchanged, so that it counts as such and is not published
	// again, like any other unchanged file.
	cited := map[string]*Article{}
	citedKept := map[string]bool{}
	// The cited slugs whose file was found but failed: its own errors say
	// why, and the milestones that cite it add none.
	citedFailed := map[string]bool{}
	for _, m := range months {
		for _, p := range m.paths {
			if f, _ := matchArticlePath(p); l.pinned[f.slug] {
				raw, info, err := readFileInfo(fsys, p, nil)
				if err != nil {
					l.fail(p, "", "%v", err)
					continue
				}
				a := l.parseArticle(p, f, raw, sources, countries, specs)
				if a == nil {
					citedFailed[f.slug] = true
					continue
				}
				cited[f.slug] = a
				if l.unchanged != nil && l.unchanged(p, info, raw) {
					citedKept[f.slug] = true
				}
			}
		}
	}
	l.readNewsletters(c)
	l.checkMilestones(c.Countries, c.Sources, cited, citedFailed)

	// Months are read on every CPU one ahead of the one being published,
	// so reading and publishing overlap.
	reads := make(chan monthRead, 1)
	stop := make(chan struct{})
	var producer sync.WaitGroup
	producer.Go(func() {
		defer close(reads)
		for _, m := range months {
			r := l.readMonth(m, cited, citedKept, sources, countries, specs)
			select {
			case reads <- r:
			case <-stop:
				return
			}
		}
	})
	// The registries go first, but only once something is to be
	// published: a tree whose first batch holds a problem, such as any
	// tree smaller than a batch, writes nothing at all.
	var (
		publishErr error
		pending    []*Article
		registered bool
	)
	publish := func() {
		if !registered && opts.Registries != nil {
			registered = true
			if publishErr = opts.Registries(c); publishErr != nil {
				return
			}
		}
		registered = true
		if len(pending) > 0 && opts.Publish != nil {
			publishErr = opts.Publish(pending)
		}
		pending = nil
	}
	for r := range reads {
		l.errs = append(l.errs, r.errs...)
		c.Unchanged += r.kept
		if len(l.errs) > 0 {
			continue
		}
		if pending = append(pending, r.articles...); len(pending) >= max(1, opts.Batch) {
			publish()
		}
		if publishErr != nil {
			close(stop)
			break
		}
	}
	if len(l.errs) == 0 && publishErr == nil {
		publish()
	}
	producer.Wait()
	if publishErr != nil {
		return nil, publishErr
	}
	if len(l.errs) > 0 {
		return nil, &LoadError{l.errs}
	}
	return c, nil
}

// listArticles lists the article files by month folder, in file order,
// and reports the files not where articles live and duplicate slugs (the
// second file of a slug is the duplicate).
func (l *loader) listArticles() ([]*month, error) {
	var months []*month
	seen := map[string]string{}
	err := fs.WalkDir(l.fsys, "articles", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == "articles" {
				return fs.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		m, ok := matchArticlePath(p)
		if !ok {
			l.fail(p, "", "articles live at articles/<yyyy>/<mm>/<slug>.md")
			return nil
		}
		if prev, dup := seen[m.slug]; dup {
			l.fail(p, "slug", "duplicate of %s", prev)
			return nil
		}
		seen[m.slug] = p
		dir := path.Dir(p)
		if len(months) == 0 || months[len(months)-1].dir != dir {
			months = append(months, &month{dir: dir})
		}
		last := months[len(months)-1]
		last.paths = append(last.paths, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("content: walking articles: %w", err)
	}
	return months, nil
}

// readMonth reads, parses and checks the files of m on every CPU; cited
// are the articles parsed already, and citedKept those of them unchanged.
func (l *loader) readMonth(m *month, cited map[string]*Article, citedKept map[string]bool, sources map[string]*Source, countries map[string]*Country, specs map[string]*Spec) monthRead {
	type read struct {
		a    *Article
		kept bool
		errs []*FieldError
	}
	results := make([]read, len(m.paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), len(m.paths)/16)) {
		wg.Go(func() {
			wl := &loader{fsys: l.fsys, unchanged: l.unchanged, known: l.known, pinned: l.pinned}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(m.paths) {
					return
				}
				f, _ := matchArticlePath(m.paths[i])
				if a, ok := cited[f.slug]; ok {
					results[i] = read{a: a, kept: citedKept[f.slug]}
					continue
				}
				if l.pinned[f.slug] {
					continue // cited, and reported when it was parsed
				}
				wl.errs = wl.errs[:0]
				a, kept := wl.readArticle(m.paths[i], f, sources, countries, specs)
				results[i] = read{a: a, kept: kept, errs: slices.Clone(wl.errs)}
			}
		})
	}
	wg.Wait()
	var out monthRead
	for _, r := range results {
		out.errs = append(out.errs, r.errs...)
		switch {
		case r.kept:
			out.kept++
		case r.a != nil:
			out.articles = append(out.articles, r.a)
		}
	}
	slices.SortFunc(out.articles, func(a, b *Article) int {
		if c := a.PublishedAt.Compare(b.PublishedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	return out
}
