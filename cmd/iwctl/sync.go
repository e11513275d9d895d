package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
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
// Article files already published from exactly these bytes, with the
// registries unchanged, are read and hashed but not parsed again
// (docs/decisions.md, archive scale): an unchanged archive of a million
// articles re-syncs in seconds.
func syncDir(ctx context.Context, p *store.Publisher, dir string, w io.Writer) error {
	// A first publish reports every article: a line a write(2) was a
	// million system calls.
	out := bufio.NewWriterSize(w, 1<<16)
	defer out.Flush()
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
	var known func(string, fs.FileInfo) bool
	if !stats.empty() && len(stored) > 0 {
		known = func(file string, info fs.FileInfo) bool {
			d, ok := stats.lookup(file, info)
			if ok && stored.Of(strings.TrimSuffix(path.Base(file), ".md")) == d {
				byStat.Add(1)
				return true
			}
			return false
		}
	}
	unchanged := func(file string, info fs.FileInfo, raw []byte) bool {
		h := sha256.New()
		h.Write(prefix)
		h.Write(raw)
		d := string(h.Sum(nil)[:16])
		stats.record(file, info, d)
		slug := strings.TrimSuffix(path.Base(file), ".md")
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
	var parsed, changed, emitted int
	report := func(kind, id string, o store.Outcome) {
		changed++
		line := fmt.Sprintf("  %s %s: updated", kind, id)
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
	fmt.Fprintf(out, "sync %s: %d articles (%d files unchanged since the last sync), %d countries, %d specs, %d sources; %d changed, %d events; %d files known unchanged by their stat\n",
		dir, parsed+c.Unchanged, c.Unchanged, len(c.Countries), len(c.Specs), len(c.Sources), changed, emitted, byStat.Load())
	return nil
}
