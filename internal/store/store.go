// Package store is Invoicewire's Redis schema (docs/architecture.md): the content
// documents and their indexes, the content version, and the atomic change
// script that writes a change together with its event and invalidation
// message (package invalidation; the caches in front of it all are package
// tagcache).
//
// Every content key carries the {content} hash tag, so the keys one change
// touches live in one slot and the same code runs on a single server and on
// Redis Cluster.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key names. Content keys share the {content} hash tag.
const (
	keyVersion     = "iw:{content}:version"
	keyCountries   = "iw:{content}:countries"
	keySpecs       = "iw:{content}:specs"
	keySources     = "iw:{content}:sources"
	keyNewsletters = "iw:{content}:newsletters"
	// keySynonyms holds the editors' synonym groups for /ask, as one JSON
	// field.
	keySynonyms = "iw:{content}:synonyms"
	keyIndexAll = "iw:{content}:idx:all"
)

func keyArticle(slug string) string    { return "iw:{content}:article:" + slug }
func keyNewsletter(week string) string { return "iw:{content}:newsletter:" + week }

// keyIndex is the sorted set of article slugs for one filter value, e.g.
// keyIndex("section", "mandates").
func keyIndex(filter, value string) string { return "iw:{content}:idx:" + filter + ":" + value }

// ErrNotFound is returned when a document does not exist.
var ErrNotFound = errors.New("store: not found")

// Store reads and writes Invoicewire's data in Redis.
type Store struct {
	rdb redis.UniversalClient
}

// New wraps an existing client.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// Client is the underlying Redis client, for packages that keep their own
// keys (tokens, subscriptions) beside the content.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Close closes the Redis client.
func (s *Store) Close() error { return s.rdb.Close() }

// Open connects to the Redis named by rawURL: redis://, rediss:// or
// redis+cluster://host:port,host:port[/?options] (docs/architecture.md). It does not
// wait for the server; the client reconnects on its own.
func Open(rawURL string) (*Store, error) {
	rdb, err := NewClient(rawURL)
	if err != nil {
		return nil, err
	}
	return New(rdb), nil
}

// clusterStateReload bounds how stale a cluster client's slot map may be:
// one CLUSTER SLOTS a second per process is cheap, and a failover is
// followed within that second.
const clusterStateReload = time.Second

// NewClient builds a go-redis UniversalClient for rawURL (see Open).
//
// Every client honours its callers' context deadlines
// (ContextTimeoutEnabled): without it go-redis bounds a command only by its
// own read timeout (3 s, more with its retries), so a Redis that accepts
// connections but does not answer held /healthz for 5 s instead of the 1 s
// its probe allows (docs/operations.md, "Probes"). Blocking commands
// (XREADGROUP BLOCK) still wait their block time plus go-redis's margin
// when the context has no deadline, as the worker's has not.
func NewClient(rawURL string) (redis.UniversalClient, error) {
	if rest, ok := strings.CutPrefix(rawURL, "redis+cluster://"); ok {
		hostPart, query, _ := strings.Cut(rest, "?")
		hostPart = strings.TrimSuffix(hostPart, "/")
		if hostPart == "" {
			return nil, fmt.Errorf("store: IW_REDIS_URL %q names no cluster nodes", redactURL(rawURL))
		}
		addrs := strings.Split(hostPart, ",")
		// go-redis re-reads the slot map on a MOVED or ASK redirect, and
		// otherwise only when it is older than ClusterStateReloadInterval
		// (60 s by default). A master killed outright answers nothing, so
		// without a short interval every command for its slots would keep
		// dialling the dead node for up to a minute after its replica took
		// over (docs/decisions.md, "Redis Cluster failover").
		opts := &redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: clusterStateReload, ContextTimeoutEnabled: true}
		if query != "" {
			q, err := url.ParseQuery(query)
			if err != nil {
				return nil, fmt.Errorf("store: parsing IW_REDIS_URL options: %w", err)
			}
			opts.Password = q.Get("password")
			opts.Username = q.Get("username")
		}
		return redis.NewClusterClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: parsing IW_REDIS_URL %q: %w", redactURL(rawURL), err)
	}
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), nil
}

// redactURL drops a password from a Redis URL before it is logged or shown.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// Version returns the content version, bumped by every change.
func (s *Store) Version(ctx context.Context) (int64, error) {
	v, err := s.rdb.Get(ctx, keyVersion).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: reading content version: %w", err)
	}
	return v, nil
}
