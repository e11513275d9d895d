package edgecache

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/caddymodules/internal/redisconn"
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
	tags       map[string]map[string]struct{}
	tagged     int // entries in tags
	compactAt  int
	flights    map[string]*flight
	lastVer    int64
	verKnown   bool
	redisURL   string
	rdb        redis.UniversalClient
	ps         *redis.PubSub
	cancel     context.CancelFunc
	done       chan struct{}
	subscribed chan struct{}
	subOnce    sync.Once
	log        *zap.Logger
}

// flight is a fetch in progress for one key; requests for the same key
// wait for it instead of going to the origin too.
type flight struct {
	done chan struct{}
}

// invalidation is the message on iw:invalidate (DESIGN §5).
type invalidation struct {
	Version int64    `json:"version"`
	Keys    []string `json:"keys"`
}

func newShared(maxBytes int64, redisURL string, log *zap.Logger) (*shared, error) {
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
		cache:      c,
		tags:       make(map[string]map[string]struct{}),
		compactAt:  10000,
		flights:    make(map[string]*flight),
		redisURL:   redisURL,
		done:       make(chan struct{}),
		subscribed: make(chan struct{}),
		log:        log,
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
	s.ps = s.rdb.Subscribe(ctx, store.ChannelInvalidate)
	go s.follow(ctx)
	return s, nil
}

// Destruct stops the subscriber and frees the cache.
func (s *shared) Destruct() error {
	if s.cancel != nil {
		s.cancel()
		_ = s.ps.Close()
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

// purge drops every entry tagged with one of keys.
func (s *shared) purge(tags []string) int {
	s.gen.Add(1)
	n := s.drop(tags)
	purges.WithLabelValues("keys").Inc()
	return n
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

// flush drops everything.
func (s *shared) flush() {
	s.gen.Add(1)
	s.mu.Lock()
	s.tags = make(map[string]map[string]struct{})
	s.tagged = 0
	s.mu.Unlock()
	s.cache.Clear()
	purges.WithLabelValues("flush").Inc()
}

// follow applies invalidation messages until ctx ends. On every
// (re)subscription it compares the content version with the last one seen
// and flushes everything when it moved: pub/sub drops the messages sent
// while the subscriber was away.
func (s *shared) follow(ctx context.Context) {
	defer close(s.done)
	backoff := 100 * time.Millisecond
	for {
		msg, err := s.ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("invalidation subscription lost; retrying", zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			backoff = 100 * time.Millisecond
			vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			v, err := store.New(s.rdb).Version(vctx)
			cancel()
			s.mu.Lock()
			moved := err != nil || (s.verKnown && v != s.lastVer)
			if err == nil {
				s.lastVer, s.verKnown = v, true
			}
			s.mu.Unlock()
			if moved {
				s.log.Info("content changed while the invalidation subscription was down; flushing the edge cache")
				s.flush()
			}
			s.subOnce.Do(func() { close(s.subscribed) })
		case *redis.Message:
			var inv invalidation
			if err := json.Unmarshal([]byte(m.Payload), &inv); err != nil {
				s.log.Warn("unreadable invalidation message; flushing the edge cache", zap.Error(err))
				s.flush()
				continue
			}
			s.purge(inv.Keys)
			s.mu.Lock()
			if inv.Version > s.lastVer || !s.verKnown {
				s.lastVer, s.verKnown = inv.Version, true
			}
			s.mu.Unlock()
		}
	}
}
