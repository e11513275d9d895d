package edgecache

import (
	"context"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/invoicewire/invoicewire/caddymodules/internal/memorybudget"
	"github.com/invoicewire/invoicewire/caddymodules/internal/redisconn"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/internal/tagcache"
)

// shared is the state of one cache: the stored responses with their
// surrogate keys (tagcache, the origin's cache type too), the
// coalescing table and the invalidation follower. It lives in a usage pool,
// so a config reload keeps every stored response.
type shared struct {
	cache *tagcache.Cache[[]byte, *entry]

	// flight coalesces concurrent misses of one key into one fetch.
	flight singleflight.Group

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
	c, err := tagcache.New[[]byte, *entry](maxBytes)
	if err != nil {
		return nil, err
	}
	s := &shared{
		cache:    c,
		redisURL: redisURL,
		done:     make(chan struct{}),
	}
	if redisURL == "" {
		close(s.done)
		return s, nil
	}
	s.rdb, err = redisconn.Acquire(redisURL)
	if err != nil {
		c.Close()
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

// Destruct stops the invalidation follower and frees the cache.
func (s *shared) Destruct() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		redisconn.Release(s.redisURL)
	}
	s.cache.Close()
	if s.budget != "" {
		memorybudget.Release(s.budget)
	}
	return nil
}

// get returns the entry stored under key.
func (s *shared) get(key []byte) *entry {
	e, _ := s.cache.Get(key)
	return e
}

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
	ok := s.cache.Set([]byte(e.key), e, tags, e.cost(), gen)
	// Make the entry visible before the requests waiting on this fetch
	// look it up; this costs a little on a miss, never on a hit.
	s.cache.Wait()
	return ok
}

// Purge drops every entry tagged with one of tags and stops fetches in
// flight from storing (invalidation.Purger).
func (s *shared) Purge(tags []string) {
	s.cache.Purge(tags)
	s.cache.Wait()
	purges.WithLabelValues("keys").Inc()
}

// drop removes the entries tagged with one of tags. Unlike Purge it does
// not stop fetches in flight from storing: unsafe requests are frequent and
// unrelated to most of them, and RFC 9111 §4.4 asks for no more.
func (s *shared) drop(tags []string) {
	s.cache.Drop(tags)
	s.cache.Wait()
}

// Clear drops everything (invalidation.Purger).
func (s *shared) Clear() {
	s.cache.Clear()
	purges.WithLabelValues("flush").Inc()
}

// Interface guards
var _ invalidation.Purger = (*shared)(nil)
