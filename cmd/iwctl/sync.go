package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
)

// digestVersion changes whenever what a file becomes in the store may
// change for the same bytes (the loader's defaults, the record's fields):
// every file is then parsed again once.
const digestVersion = "iwctl-sync-1\n"

// syncBatch is the fewest articles (whole months) a sync hands the store
// at once: enough that Redis's cost per call is spread thin.
const syncBatch = 1024

// digestBatch is how many file digests a sync records at once.
const digestBatch = 16384

// syncDir validates and publishes a content tree, a month folder at a
// time, so that its memory does not grow with the archive (content.Stream).
// The whole tree is validated before anything is written
// (docs/architecture.md, "a bad file stops everything before any write"):
// a first pass reads and checks every file and keeps only the slugs of the
// files that changed (up to changedCap of them) and a compact set of every
// slug; the second pass publishes, reading again only the files that
// changed. Article files already published from exactly these bytes, with
// the registries unchanged, are read and hashed but not parsed again
// (docs/decisions.md, "`iwctl sync` does not parse what it published
// before"): an unchanged archive of a million
// articles re-syncs in seconds. Published articles that have no file in
// the tree are listed as warnings, not retracted; the registry entries the
// tree no longer holds are removed, unless one of those articles cites
// one (docs/decisions.md, "A deleted registry entry is removed").
func syncDir(ctx context.Context, p *store.Publisher, dir string, w io.Writer) (err error) {
	// A first publish reports every article: a line a write(2) was a
	// million system calls.
	out := bufio.NewWriterSize(w, 1<<16)
	// The report's last lines, warnings and the summary among them, are in
	// the buffer: a sync whose report could not be written fails.
	defer func() {
		if ferr := out.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("sync: writing the report: %w", ferr)
		}
	}()
	// What a sync keeps is a few months of articles, bounded whatever the
	// archive's size: a collector running at a quarter of the default
	// frequency costs a little more of that bounded memory and much less
	// CPU. The soft limit keeps the whole well within the 2 GiB that
	// docs/scale.md allows even for the largest months.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	}
	registries := sha256.New()
	registries.Write([]byte(digestVersion))
	for _, f := range []string{"sources.yaml", "countries.yaml", "specs.yaml", "aliases.yaml"} {
		// A missing or unreadable file counts as empty here; the loader
		// reports it if it is required.
		b, _ := os.ReadFile(filepath.Join(dir, f))
		fmt.Fprintf(registries, "%s %d\n", f, len(b))
		registries.Write(b)
	}
	prefix := registries.Sum(nil)
	// The stat cache is read while Redis sends the digests: at a million
	// articles each takes seconds.
	start := time.Now()
	var stats *statCache
	var loading sync.WaitGroup
	loading.Go(func() { stats = openStatCache(statCacheFile(dir), prefix, start) })
	stored, err := p.Store.SyncedDigests(ctx)
	loading.Wait()
	if err != nil {
		return err
	}
	// fresh holds the digests of the files read but not yet published;
	// each month's are recorded once its articles are stored.
	var mu sync.Mutex
	fresh := map[string]string{}
	// A file whose stat is the one remembered keeps its digest unread; it
	// is unchanged when that digest is the store's.
	// With nothing remembered (a first sync) there is nothing to look up,
	// and asking would cost every file a stat before it is read anyway;
	// nor when the store has no digest (a first publish into a new store
	// from a tree synced before): a remembered digest can match none.
	var byStat atomic.Int64
	var knownByStat func(string, fs.FileInfo) bool
	if !stats.empty() && len(stored) > 0 {
		knownByStat = func(file string, info fs.FileInfo) bool {
			d, ok := stats.lookup(file, info)
			return ok && stored.Of(slugOf(file)) == d
		}
	}
	digest := func(file string, info fs.FileInfo, raw []byte) string {
		h := sha256.New()
		h.Write(prefix)
		h.Write(raw)
		d := string(h.Sum(nil)[:16])
		stats.record(file, info, d)
		return d
	}

	// The validation pass: every file is read (or known by its stat) and
	// checked, and nothing is written.
	v := validation{slugs: map[uint64]struct{}{}, changed: map[string]bool{}}
	_, err = content.Stream(dir, content.StreamOptions{
		// Every file that is not cited by a milestone passes here first,
		// so the tree's slugs are collected here; the cited ones are
		// added from the milestones.
		Known: func(file string, info fs.FileInfo) bool {
			v.saw(slugOf(file))
			if knownByStat != nil && knownByStat(file, info) {
				byStat.Add(1)
				return true
			}
			return false
		},
		Unchanged: func(file string, info fs.FileInfo, raw []byte) bool {
			slug := slugOf(file)
			if stored.Of(slug) == digest(file, info, raw) {
				return true
			}
			v.change(slug)
			return false
		},
		Registries: func(c *content.Corpus) error {
			for _, cty := range c.Countries {
				for _, m := range cty.Milestones {
					for _, slug := range m.Articles {
						v.saw(slug)
					}
				}
			}
			return nil
		},
	})
	if err != nil {
		// Nothing was written; the stat cache keeps what was learnt.
		if serr := stats.save(false); serr != nil {
			fmt.Fprintln(out, "  warning:", serr)
		}
		return err
	}

	// The published articles without a file, found before anything is
	// written: they stay published, so the registry entries they cite
	// must stay too (store.Prune), and they are warned of at the end.
	unfiled, err := unfiledArticles(ctx, p.Store, &v)
	if err != nil {
		if serr := stats.save(false); serr != nil {
			fmt.Fprintln(out, "  warning:", serr)
		}
		return err
	}
	// The tree is whole, so the registry entries it no longer holds are
	// removed.
	pp := *p
	pp.Prune = &store.Prune{Unfiled: unfiled}
	p = &pp

	// The write pass. When the validation pass could remember every file
	// that changed, the others are skipped unread; otherwise each file is
	// judged again by its stat and digest.
	known := knownByStat
	if !v.overflow {
		known = func(file string, _ fs.FileInfo) bool { return !v.changed[slugOf(file)] }
	}
	unchanged := func(file string, info fs.FileInfo, raw []byte) bool {
		d := digest(file, info, raw)
		slug := slugOf(file)
		if stored.Of(slug) == d {
			return true
		}
		mu.Lock()
		fresh[slug] = d
		mu.Unlock()
		return false
	}
	// done holds the digests of stored articles until there are enough of
	// them to give each of the store's digest buckets several at once.
	done := map[string]string{}
	record := func(atLeast int) error {
		if len(done) < atLeast {
			return nil
		}
		err := p.Store.SetSyncedDigests(ctx, done)
		clear(done)
		return err
	}
	var parsed, changed, removed, moved, emitted int
	report := func(kind, id string, o store.Outcome) {
		changed++
		line := fmt.Sprintf("  %s %s: updated", kind, id)
		if o.Removed {
			removed++
			line = fmt.Sprintf("  %s %s: removed", kind, id)
		}
		// No event kind says an article moved (its old address answers
		// 301), so the output does.
		if o.MovedFrom != "" {
			moved++
			line += ", moved " + o.MovedFrom + " → " + o.MovedTo
		}
		if o.Event != "" {
			emitted++
			line += ", emitted " + o.Event
		}
		fmt.Fprintln(out, line)
	}
	c, err := content.Stream(dir, content.StreamOptions{
		Unchanged:  unchanged,
		Known:      known,
		Batch:      syncBatch,
		Registries: func(c *content.Corpus) error { return p.SyncRegistries(ctx, c, report) },
		Publish: func(articles []*content.Article) error {
			parsed += len(articles)
			// A file the store has no digest of is most likely a new
			// article: it is written without being read first.
			likelyNew := func(slug string) bool { return stored.Of(slug) == "" }
			if err := p.SyncArticles(ctx, articles, likelyNew, report); err != nil {
				return err
			}
			mu.Lock()
			for _, a := range articles {
				if d, ok := fresh[a.Slug]; ok {
					done[a.Slug] = d
					delete(fresh, a.Slug)
				}
			}
			mu.Unlock()
			return record(digestBatch)
		},
	})
	// The articles stored before a failure keep their digests too.
	if rerr := record(1); err == nil {
		err = rerr
	}
	// The stat cache states facts about files, whatever became of the
	// sync; failing to write it only makes the next sync read more.
	if serr := stats.save(err == nil); serr != nil {
		fmt.Fprintln(out, "  warning:", serr)
	}
	if err != nil {
		return err
	}
	warnOrphans(unfiled, dir, out)
	changes := strconv.Itoa(changed) + " changed"
	var of []string
	if removed > 0 {
		of = append(of, fmt.Sprintf("%d removed", removed))
	}
	if moved > 0 {
		of = append(of, fmt.Sprintf("%d moved", moved))
	}
	if len(of) > 0 {
		changes += " (" + strings.Join(of, ", ") + ")"
	}
	fmt.Fprintf(out, "sync %s: %d articles (%d files unchanged since the last sync), %d countries, %d specs, %d sources; %s, %d events; %d files known unchanged by their stat\n",
		dir, parsed+c.Unchanged, c.Unchanged, len(c.Countries), len(c.Specs), len(c.Sources), changes, emitted, byStat.Load())
	return nil
}

// changedCap bounds the slugs of changed files the validation pass keeps
// for the write pass (a few MiB); past it, as at a first publish of a
// large archive, the write pass reads every file again instead.
const changedCap = 1 << 17

// validation is what the validation pass keeps of a tree: a 64-bit hash of
// every slug (about 40 bytes an article, to find published articles whose
// file is gone) and the slugs of the files that changed, up to changedCap.
type validation struct {
	mu       sync.Mutex
	slugs    map[uint64]struct{}
	changed  map[string]bool
	overflow bool
}

func slugHash(slug string) uint64 {
	h := sha256.Sum256([]byte(slug))
	return binary.LittleEndian.Uint64(h[:8])
}

func (v *validation) saw(slug string) {
	h := slugHash(slug)
	v.mu.Lock()
	v.slugs[h] = struct{}{}
	v.mu.Unlock()
}

func (v *validation) change(slug string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.changed) >= changedCap {
		v.overflow = true
		return
	}
	v.changed[slug] = true
}

func (v *validation) has(slug string) bool {
	_, ok := v.slugs[slugHash(slug)]
	return ok
}

// maxOrphansListed bounds the published articles without a file that a
// sync names one by one.
const maxOrphansListed = 50

// unfiledArticles lists the published articles that have no file in the
// tree the validation pass read (a file deleted, or renamed to another
// slug).
func unfiledArticles(ctx context.Context, st *store.Store, v *validation) ([]string, error) {
	var out []string
	err := st.PublishedSlugs(ctx, func(slug string) {
		if !v.has(slug) {
			out = append(out, slug)
		}
	})
	return out, err
}

// warnOrphans warns of the published articles that have no file in the
// tree (unfiledArticles). They stay published: a sync never retracts,
// since a retraction is a public act with a reason (article.retracted);
// `iwctl retract SLUG --reason TEXT` pulls one.
func warnOrphans(unfiled []string, dir string, out io.Writer) {
	for _, slug := range unfiled[:min(len(unfiled), maxOrphansListed)] {
		fmt.Fprintf(out, "  warning: article %s is published but has no file in %s; it stays published until retracted (iwctl retract %s --reason TEXT)\n", slug, dir, slug)
	}
	if n := len(unfiled); n > 0 {
		fmt.Fprintf(out, "  warning: %d published articles have no file in %s\n", n, dir)
	}
}

// slugOf is the slug an article file's path gives: its name.
func slugOf(file string) string { return strings.TrimSuffix(path.Base(file), ".md") }
