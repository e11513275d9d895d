package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// racyWindow is how much older than the start of a sync a file's last
// change (the later of its mtime and ctime) must be for its stat to be
// remembered. A file written again after it was read, in the same tick of
// the file system's clock, can keep its size, mtime and ctime; such a
// write happens after the sync started, so its time stamps are no older
// than the start less one tick. Two seconds covers the coarsest clocks a
// content tree may sit on (FAT's mtime ticks by two seconds; Linux's local
// file systems stamp from a clock that lags by a few milliseconds). This
// is git's "racily clean" rule, applied when the entry is recorded rather
// than when it is used (docs/decisions.md, "A re-sync knows unchanged files
// by their stat").
var racyWindow = 2 * time.Second

// statCacheMagic heads a stat cache file; a file with another one is
// ignored.
const statCacheMagic = "iwctl-statcache-1\n"

// fileStat is what a file's stat says of its identity and last change.
type fileStat struct {
	size, mtime, ctime int64
	dev, ino           uint64
}

// statOf returns the identity of info, and false when the platform's stat
// gives no inode and change time (then nothing is remembered).
func statOf(info fs.FileInfo) (fileStat, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || !info.Mode().IsRegular() {
		return fileStat{}, false
	}
	return fileStat{
		size:  info.Size(),
		mtime: info.ModTime().UnixNano(),
		ctime: time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)).UnixNano(),
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
	}, true
}

// statEntry is one remembered file: its stat and the digest of its bytes
// (with the registries' prefix, as recorded in the store).
type statEntry struct {
	stat   fileStat
	digest [16]byte
	// seen marks an entry of the file read this sync used, so that it is
	// written again without a second map of a million entries.
	seen bool
}

// statCache remembers, per article file, the stat it had when it was last
// read and the digest of its bytes then, in the style of git's index: a
// file whose stat has not moved keeps its digest without being read. The
// digests are still what is compared with the store's; the cache only
// spares reading and hashing. It lives under the user's cache directory,
// one file per content tree (docs/decisions.md, "A re-sync knows unchanged
// files by their stat").
type statCache struct {
	file string
	// prefix is the digest of the registries and format version the
	// digests were computed under: a cache written under another is
	// ignored.
	prefix []byte
	// before is the time a file's last change must precede to be
	// remembered (racyWindow).
	before int64

	mu sync.Mutex
	// old is the cache read; the entries this sync used are marked seen.
	old map[string]statEntry
	// next holds the files this sync read.
	next map[string]statEntry
}

// statCacheFile returns where the stat cache of the tree at dir lives, or
// "" when the user has no cache directory.
func statCacheFile(dir string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "invoicewire", "iwctl-sync", hex.EncodeToString(h[:12]))
}

// openStatCache reads the cache in file, written under prefix; a missing,
// damaged or foreign cache is an empty one.
func openStatCache(file string, prefix []byte, start time.Time) *statCache {
	c := &statCache{
		file:   file,
		prefix: prefix,
		before: start.Add(-racyWindow).UnixNano(),
		old:    map[string]statEntry{},
		next:   map[string]statEntry{},
	}
	if file == "" {
		return c
	}
	f, err := os.Open(file)
	if err != nil {
		return c
	}
	defer f.Close()
	if old, err := readStatEntries(bufio.NewReaderSize(f, 1<<16), prefix); err == nil {
		c.old = old
	}
	return c
}

func readStatEntries(r *bufio.Reader, prefix []byte) (map[string]statEntry, error) {
	head := make([]byte, len(statCacheMagic)+sha256.Size)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	if string(head[:len(statCacheMagic)]) != statCacheMagic || !bytes.Equal(head[len(statCacheMagic):], prefix) {
		return nil, errors.New("another format or registries")
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	out := make(map[string]statEntry, min(n, 1<<24))
	var fixed [5*8 + 16]byte
	for range n {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > 4096 {
			return nil, fmt.Errorf("damaged entry: %v", err)
		}
		p := make([]byte, l)
		if _, err := io.ReadFull(r, p); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(r, fixed[:]); err != nil {
			return nil, err
		}
		var e statEntry
		e.stat.size = int64(binary.LittleEndian.Uint64(fixed[0:]))
		e.stat.mtime = int64(binary.LittleEndian.Uint64(fixed[8:]))
		e.stat.ctime = int64(binary.LittleEndian.Uint64(fixed[16:]))
		e.stat.dev = binary.LittleEndian.Uint64(fixed[24:])
		e.stat.ino = binary.LittleEndian.Uint64(fixed[32:])
		copy(e.digest[:], fixed[40:])
		out[string(p)] = e
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// empty reports whether the cache read remembers no file.
func (c *statCache) empty() bool { return len(c.old) == 0 }

// lookup returns the digest remembered for the file at p when its stat is
// the one remembered, and keeps that entry for the next sync.
func (c *statCache) lookup(p string, info fs.FileInfo) (digest string, ok bool) {
	st, ok := statOf(info)
	if !ok {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.old[p]
	if !ok || e.stat != st {
		return "", false
	}
	if !e.seen {
		e.seen = true
		c.old[p] = e
	}
	return string(e.digest[:]), true
}

// record remembers the digest of the bytes just read from the file at p,
// unless the file changed too recently to trust its stat (racyWindow).
func (c *statCache) record(p string, info fs.FileInfo, digest string) {
	st, ok := statOf(info)
	if !ok || max(st.mtime, st.ctime) >= c.before || len(digest) != 16 {
		return
	}
	e := statEntry{stat: st}
	copy(e.digest[:], digest)
	c.mu.Lock()
	defer c.mu.Unlock()
	// A file read only because the store lacked its digest (a fresh
	// store) is often the one remembered: it is marked rather than
	// copied, so that the cache is not held twice.
	if o, ok := c.old[p]; ok && o.stat == e.stat && o.digest == e.digest {
		o.seen = true
		c.old[p] = o
		return
	}
	c.next[p] = e
}

// save writes what this sync saw, replacing the file atomically. complete
// says the sync visited every file: the entries of files it did not see
// (deleted ones) are then dropped; otherwise they are kept, since an entry
// is only ever used when its file's stat still matches.
func (c *statCache) save(complete bool) error {
	if c.file == "" {
		return nil
	}
	// What this sync saw is the files it read and the entries it used;
	// a sync that did not finish keeps the others too.
	keep := func(p string, e statEntry) bool {
		_, read := c.next[p]
		return !read && (e.seen || !complete)
	}
	n := len(c.next)
	for p, e := range c.old {
		if keep(p, e) {
			n++
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.file), 0o700); err != nil {
		return fmt.Errorf("iwctl: writing the stat cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.file), ".statcache-*")
	if err != nil {
		return fmt.Errorf("iwctl: writing the stat cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<16)
	w.WriteString(statCacheMagic)
	w.Write(c.prefix)
	w.Write(binary.AppendUvarint(nil, uint64(n)))
	var fixed [5*8 + 16]byte
	put := func(p string, e statEntry) {
		w.Write(binary.AppendUvarint(fixed[:0], uint64(len(p))))
		w.WriteString(p)
		binary.LittleEndian.PutUint64(fixed[0:], uint64(e.stat.size))
		binary.LittleEndian.PutUint64(fixed[8:], uint64(e.stat.mtime))
		binary.LittleEndian.PutUint64(fixed[16:], uint64(e.stat.ctime))
		binary.LittleEndian.PutUint64(fixed[24:], e.stat.dev)
		binary.LittleEndian.PutUint64(fixed[32:], e.stat.ino)
		copy(fixed[40:], e.digest[:])
		w.Write(fixed[:])
	}
	for p, e := range c.next {
		put(p, e)
	}
	for p, e := range c.old {
		if keep(p, e) {
			put(p, e)
		}
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("iwctl: writing the stat cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("iwctl: writing the stat cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.file); err != nil {
		return fmt.Errorf("iwctl: writing the stat cache: %w", err)
	}
	return nil
}
