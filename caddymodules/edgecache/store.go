package edgecache

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/invoicewire/invoicewire/caddymodules/internal/memorybudget"
	"github.com/invoicewire/invoicewire/caddymodules/internal/redisconn"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/internal/tagcache"
)

// shared is the state of one cache: the stored responses with their
// surrogate keys (tagcache.Bytes: records in pointer-free ring buffers,
// record.go), the coalescing table and the invalidation follower. It lives
// in a usage pool, so a config reload keeps every stored response.
type shared struct {
	cache *tagcache.Bytes
	// dict holds the fields many records have alike, once (headerdict.go).
	dict *headerDict

	// flight coalesces concurrent misses of one key into one fetch.
	flight singleflight.Group
	// refreshing holds the keys being refreshed in the background, so
	// that a stale entry is refreshed once at a time.
	refreshing sync.Map

	redisURL string
	rdb      redis.UniversalClient
	// follower applies the content invalidations; nil without Redis.
	follower *invalidation.Follower
	// cancel stops the invalidation follower; done is closed once it has
	// stopped.
	cancel context.CancelFunc
	done   chan struct{}

	// budget names the cache's reservation in the soft memory limit.
	budget string
}

// newShared builds the cache and, when redisURL is set, starts following
// the content invalidations announced on that Redis.
func newShared(maxBytes int64, redisURL string, log *slog.Logger) (*shared, error) {
	c := tagcache.NewBytes(maxBytes)
	s := &shared{
		cache:    c,
		dict:     newHeaderDict(),
		redisURL: redisURL,
		done:     make(chan struct{}),
	}
	if redisURL == "" {
		close(s.done)
		return s, nil
	}
	var err error
	s.rdb, err = redisconn.Acquire(redisURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.follower = invalidation.NewFollower(s, store.New(s.rdb).Version, log)
	go func() {
		defer close(s.done)
		s.follower.Run(ctx, s.rdb, nil)
	}()
	return s, nil
}

// Destruct stops the invalidation follower and releases the cache's
// share of the memory limit; its buffers go with the last reference.
func (s *shared) Destruct() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		redisconn.Release(s.redisURL)
	}
	if s.budget != "" {
		memorybudget.Release(s.budget)
	}
	fieldSets.Sub(float64(s.dict.sets.Load()))
	return nil
}

// get returns the entry stored under key, a copy of the caller's own.
func (s *shared) get(key []byte) *entry {
	rec, ok := s.cache.Get(key)
	if !ok {
		return nil
	}
	return unmarshalEntry(rec, false, s.dict)
}

// hitBuffers are the buffers ServeHTTP reads records into. A fresh hit
// writes its body before the handler returns, and an io.Writer must not
// keep what it is given, so the buffer is used again by a later request
// instead of being garbage the size of every body served (make
// bench-edge's list is 15 KB; docs/edge-gateway.md, "The cache off the
// collected heap").
var hitBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuffer is the largest buffer kept for another request: rare
// large bodies are not worth holding on to.
const maxPooledBuffer = 64 << 10

// releaseBuffer returns buf to hitBuffers unless it grew too large.
func releaseBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledBuffer {
		hitBuffers.Put(buf)
	}
}

// lookup is get reading the record into *buf (grown as needed), for a
// request that may answer from it before it returns. Only the entry's
// body shares *buf: a path that keeps the entry longer must call own.
func (s *shared) lookup(key []byte, buf *[]byte) *entry {
	rec, ok := s.cache.GetInto(key, buf)
	if !ok {
		return nil
	}
	// The fields get a copy of their own: the entry's strings go into the
	// response's header map, which outlives the handler (the access log
	// reads it).
	return unmarshalEntry(rec, true, s.dict)
}

// own gives e a body of its own, for a path that keeps e beyond the
// request whose buffer it was read into (lookup).
func (e *entry) own() { e.body = bytes.Clone(e.body) }

// generation is the purge generation to pass to put: read it before
// asking the origin.
func (s *shared) generation() uint64 { return s.cache.Generation() }

// put stores e, tagged with its surrogate keys and its request target,
// unless a purge happened since gen was read.
func (s *shared) put(e *entry, gen uint64) bool {
	tags := strings.Fields(e.tags)
	if e.uriTag != "" {
		tags = append(tags, e.uriTag)
	}
	return s.cache.Set([]byte(e.key), e.marshal(make([]byte, 0, e.recordSize()), s.dict), tags, gen)
}

// Purge drops every entry tagged with one of tags and stops fetches in
// flight from storing (invalidation.Purger).
func (s *shared) Purge(tags []string) {
	s.cache.Purge(tags)
	purges.WithLabelValues("keys").Inc()
}

// drop removes the entries tagged with one of tags. Unlike Purge it does
// not stop fetches in flight from storing: unsafe requests are frequent and
// unrelated to most of them, and RFC 9111 §4.4 asks for no more.
func (s *shared) drop(tags []string) {
	s.cache.Drop(tags)
}

// Clear drops everything (invalidation.Purger).
func (s *shared) Clear() {
	s.cache.Clear()
	purges.WithLabelValues("flush").Inc()
}

// Interface guards
var _ invalidation.Purger = (*shared)(nil)
