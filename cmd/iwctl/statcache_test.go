package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// statInfo is an fs.FileInfo with a Linux stat behind it.
type statInfo struct {
	size         int64
	mtime, ctime time.Time
	ino          uint64
}

func (s statInfo) Name() string       { return "a.md" }
func (s statInfo) Size() int64        { return s.size }
func (s statInfo) Mode() fs.FileMode  { return 0o644 }
func (s statInfo) ModTime() time.Time { return s.mtime }
func (s statInfo) IsDir() bool        { return false }
func (s statInfo) Sys() any {
	return &syscall.Stat_t{Dev: 7, Ino: s.ino, Size: s.size,
		Ctim: syscall.Timespec{Sec: s.ctime.Unix(), Nsec: int64(s.ctime.Nanosecond())}}
}

// TestStatCache checks when a remembered stat spares reading a file: only
// when size, mtime, ctime and inode are all unchanged, the file changed
// before the racy window of the sync that read it, and the registries are
// the same.
func TestStatCache(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := start.Add(-time.Hour)
	read := statInfo{size: 100, mtime: old, ctime: old, ino: 42}
	digest := "0123456789abcdef"
	for _, tc := range []struct {
		desc string
		// recorded is the stat the first sync read the file by.
		recorded statInfo
		// now is the stat the next sync finds.
		now       statInfo
		otherRegs bool
		want      bool
	}{
		{desc: "unchanged since long before the sync: not read", recorded: read, now: read, want: true},
		{desc: "touched: read again", recorded: read,
			now: statInfo{size: 100, mtime: old.Add(time.Second), ctime: old.Add(time.Second), ino: 42}},
		{desc: "rewritten with the same size and mtime: the ctime moved, read again", recorded: read,
			now: statInfo{size: 100, mtime: old, ctime: old.Add(time.Second), ino: 42}},
		{desc: "same size, mtime and ctime as read, but written within the racy window: read again",
			recorded: statInfo{size: 100, mtime: start.Add(-time.Second), ctime: start.Add(-time.Second), ino: 42},
			now:      statInfo{size: 100, mtime: start.Add(-time.Second), ctime: start.Add(-time.Second), ino: 42}},
		{desc: "only the ctime within the racy window: read again",
			recorded: statInfo{size: 100, mtime: old, ctime: start.Add(-time.Millisecond), ino: 42},
			now:      statInfo{size: 100, mtime: old, ctime: start.Add(-time.Millisecond), ino: 42}},
		{desc: "changed just before the racy window: not read",
			recorded: statInfo{size: 100, mtime: start.Add(-racyWindow - time.Nanosecond), ctime: old, ino: 42},
			now:      statInfo{size: 100, mtime: start.Add(-racyWindow - time.Nanosecond), ctime: old, ino: 42}, want: true},
		{desc: "another size: read again", recorded: read,
			now: statInfo{size: 101, mtime: old, ctime: old, ino: 42}},
		{desc: "replaced by another file (inode): read again", recorded: read,
			now: statInfo{size: 100, mtime: old, ctime: old, ino: 43}},
		{desc: "registries changed: the cache is ignored", recorded: read, now: read, otherRegs: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "cache")
			prefix := make([]byte, 32)
			c := openStatCache(file, prefix, start)
			c.record("articles/2026/11/a.md", tc.recorded, digest)
			if err := c.save(true); err != nil {
				t.Fatal(err)
			}
			if tc.otherRegs {
				prefix = append([]byte{1}, prefix[1:]...)
			}
			next := openStatCache(file, prefix, start.Add(time.Hour))
			d, ok := next.lookup("articles/2026/11/a.md", tc.now)
			if ok != tc.want || (ok && d != digest) {
				t.Fatalf("lookup = %q, %v; want found %v", d, ok, tc.want)
			}
		})
	}
}

// TestMain keeps the tests' stat caches out of the user's cache directory.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "iwctl-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestSyncStatCache checks that a re-sync reads only the files whose stat
// moved, that a touched but unchanged file is read and not published
// again, and that a file rewritten in place with its size and mtime kept
// is read and published.
func TestSyncStatCache(t *testing.T) {
	// The test's files are written just before it syncs them.
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	st := newSyncTree(t)
	rs, n, byStat, a, file := st.rs, st.n, st.byStat, st.a, st.file
	sync := func() string { return st.sync(t) }
	sync()
	past := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		desc string
		edit func() error
		want []string
	}{
		{desc: "nothing changed: no file read", edit: func() error { return nil },
			want: []string{"(" + strconv.Itoa(n) + " files unchanged", "; 0 changed", strconv.Itoa(byStat) + " files known unchanged by their stat"}},
		{desc: "touched: read, found unchanged, not published", edit: func() error {
			return os.Chtimes(file, past, past)
		}, want: []string{"(" + strconv.Itoa(n) + " files unchanged", "; 0 changed", strconv.Itoa(byStat-1) + " files known unchanged by their stat"}},
		{desc: "rewritten in place with the same size and mtime: read and published", edit: func() error {
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			i := bytes.LastIndex(b, []byte("e"))
			b[i] = 'E'
			if err := os.WriteFile(file, b, 0o644); err != nil {
				return err
			}
			return os.Chtimes(file, past, past)
		}, want: []string{"(" + strconv.Itoa(n-1) + " files unchanged", strconv.Itoa(byStat-1) + " files known unchanged by their stat"}},
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
	b, _ := os.ReadFile(file)
	body := strings.TrimSpace(string(b[bytes.Index(b[4:], []byte("\n---\n"))+9:]))
	rec, err := store.New(rs.Client()).Article(context.Background(), a.Slug)
	if err != nil || !strings.Contains(rec.Body, body[max(0, len(body)-40):]) {
		t.Fatalf("the rewritten article was not published: %v", err)
	}

	// The same tree into a new store, the stat cache warm: no file is
	// known by its stat (the store has no digest), every article is
	// published.
	fresh := redistest.New(t)
	t.Setenv("IW_REDIS_URL", fresh.URL())
	out := sync()
	for _, w := range []string{"(0 files unchanged", "; 0 files known unchanged by their stat"} {
		if !strings.Contains(out, w) {
			t.Fatalf("sync into a new store: output %q does not contain %q", out, w)
		}
	}
	c, err := content.Load(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := store.New(fresh.Client()).ArticleCount(context.Background()); err != nil || got != int64(len(c.Articles)) {
		t.Fatalf("sync into a new store published %d articles (%v), want %d", got, err, len(c.Articles))
	}
}

// TestStatCacheKeepsWhatTheSyncSaw checks which entries a sync writes back:
// the ones it used or read again, and those of unvisited files only when
// the sync did not finish (a finished one drops deleted files).
func TestStatCacheKeepsWhatTheSyncSaw(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := start.Add(-time.Hour)
	info := statInfo{size: 100, mtime: old, ctime: old, ino: 42}
	const digest = "0123456789abcdef"
	for _, tc := range []struct {
		desc     string
		visit    func(c *statCache)
		complete bool
		want     bool
	}{
		{desc: "used by its stat", visit: func(c *statCache) { c.lookup("a.md", info) }, complete: true, want: true},
		{desc: "read again, the same bytes", visit: func(c *statCache) { c.record("a.md", info, digest) }, complete: true, want: true},
		{desc: "not visited by a finished sync: dropped", visit: func(*statCache) {}, complete: true},
		{desc: "not visited by a sync that failed: kept", visit: func(*statCache) {}, want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "cache")
			prefix := make([]byte, 32)
			first := openStatCache(file, prefix, start)
			first.record("a.md", info, digest)
			if err := first.save(true); err != nil {
				t.Fatal(err)
			}
			second := openStatCache(file, prefix, start.Add(time.Hour))
			tc.visit(second)
			if err := second.save(tc.complete); err != nil {
				t.Fatal(err)
			}
			_, ok := openStatCache(file, prefix, start.Add(2*time.Hour)).lookup("a.md", info)
			if ok != tc.want {
				t.Fatalf("entry kept = %v, want %v", ok, tc.want)
			}
		})
	}
}
