package edgecache

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/caddymodules/internal/redisconn"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/store"
)

// shared is the state of one cache: the ristretto store of responses, the
// surrogate-key index, the coalescing table and the purge subscriber. It
// lives in a usage pool, so a config reload keeps every stored response.
type shared struct {
	cache *ristretto.Cache[[]byte, *entry]

	// gen changes with every purge. A fetch that began under an older
	// generation does not store its response: it may predate the purge.
	gen atomic.Uint64

	mu sync.Mutex
	// tags maps a surrogate key to the cache keys of the entries tagged
	// with it. Evicted entries are not removed one by one (ristretto's
	// eviction callback cannot tell an old version of a key from its
	// replacement); compact drops them in bulk instead.
	tags      map[string]map[string]struct{}
	tagged    int // entries in tags
	compactAt int
	flights   map[string]*flight

	redisURL string
	rdb      redis.UniversalClient
	// cancel stops the invalidation follower; done is closed once it has
	// stopped.
	cancel context.CancelFunc
	done   chan struct{}
}

// flight is a fetch in progress for one key; requests for the same key
// wait for it instead of going to the origin too.
type flight struct {
	done chan struct{}
}

// newShared builds the cache and, when redisURL is set, starts following
// the content invalidations announced on that Redis.
func newShared(maxBytes int64, redisURL string, log *slog.Logger) (*shared, error) {
	counters := max(maxBytes/4096*10, 1e4)
	c, err := ristretto.NewCache(&ristretto.Config[[]byte, *entry]{
		NumCounters:        counters,
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, err
	}
	s := &shared{
		cache:     c,
		tags:      make(map[string]map[string]struct{}),
		compactAt: 10000,
		flights:   make(map[string]*flight),
		redisURL:  redisURL,
		done:      make(chan struct{}),
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
	go func() {
		defer close(s.done)
		invalidation.Follow(ctx, s.rdb, s, store.New(s.rdb).Version, log, nil)
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
	return nil
}

// get returns the entry stored under key.
func (s *shared) get(key []byte) *entry {
	e, _ := s.cache.Get(key)
	return e
}

// put stores e unless a purge happened since gen was read.
func (s *shared) put(e *entry, gen uint64) bool {
	if s.gen.Load() != gen {
		return false
	}
	s.mu.Lock()
	tags := e.tags
	if e.uriTag != "" {
		tags = append(tags[:len(tags):len(tags)], e.uriTag)
	}
	for _, t := range tags {
		keys := s.tags[t]
		if keys == nil {
			keys = make(map[string]struct{})
			s.tags[t] = keys
		}
		if _, ok := keys[e.key]; !ok {
			keys[e.key] = struct{}{}
			s.tagged++
		}
	}
	compact := s.tagged > s.compactAt
	s.mu.Unlock()
	ok := s.cache.Set([]byte(e.key), e, e.cost)
	// Make the entry visible before the requests waiting on this fetch
	// look it up; this costs a little on a miss, never on a hit.
	s.cache.Wait()
	if compact {
		s.compact()
	}
	return ok
}

// compact drops index entries whose response is no longer stored.
func (s *shared) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for t, keys := range s.tags {
		for k := range keys {
			if _, ok := s.cache.Get([]byte(k)); !ok {
				delete(keys, k)
				continue
			}
			n++
		}
		if len(keys) == 0 {
			delete(s.tags, t)
		}
	}
	s.tagged = n
	s.compactAt = max(2*n, 10000)
}

// Purge drops every entry tagged with one of tags (invalidation.Purger).
func (s *shared) Purge(tags []string) {
	s.gen.Add(1)
	s.drop(tags)
	purges.WithLabelValues("keys").Inc()
}

// drop removes the entries tagged with one of tags. Unlike purge it does
// not stop fetches in flight from storing: unsafe requests are frequent and
// unrelated to most of them, and RFC 9111 §4.4 asks for no more.
func (s *shared) drop(tags []string) int {
	var doomed []string
	s.mu.Lock()
	for _, t := range tags {
		for k := range s.tags[t] {
			doomed = append(doomed, k)
		}
		s.tagged -= len(s.tags[t])
		delete(s.tags, t)
	}
	s.mu.Unlock()
	// Outside the lock: Del may wait on ristretto's buffer, whose consumer
	// must not wait on us.
	for _, k := range doomed {
		s.cache.Del([]byte(k))
	}
	s.cache.Wait()
	return len(doomed)
}

// Clear drops everything (invalidation.Purger).
func (s *shared) Clear() {
	s.gen.Add(1)
	s.mu.Lock()
	s.tags = make(map[string]map[string]struct{})
	s.tagged = 0
	s.mu.Unlock()
	s.cache.Clear()
	purges.WithLabelValues("flush").Inc()
}

// Interface guards
var _ invalidation.Purger = (*shared)(nil)
