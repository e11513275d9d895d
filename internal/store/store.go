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
	"strconv"
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
	// keyChanged maps each surrogate key but the per-article ones to the
	// time (Unix seconds) of the last change that purged it, and "*" to
	// the time of the last change (changedLua, ChangedAt).
	keyChanged = "iw:{content}:changed"
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
		if strings.Contains(hostPart, "@") {
			// Left in, the credentials would be part of an address, and
			// every dial error would log them.
			return nil, fmt.Errorf("store: IW_REDIS_URL %q: a redis+cluster:// URL takes its credentials as ?username= and ?password=, not before the nodes", redactURL(rawURL))
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
				return nil, fmt.Errorf("store: parsing the options of IW_REDIS_URL %q: %w", redactURL(rawURL), redactErr(err))
			}
			opts.Password = q.Get("password")
			opts.Username = q.Get("username")
		}
		return redis.NewClusterClient(opts), nil
	}
	if u, err := url.Parse(rawURL); err == nil && misplacedAt(u) {
		// go-redis would refuse the path or query and quote it: the end
		// of a password.
		return nil, fmt.Errorf("store: parsing IW_REDIS_URL %q: an '@' after the host; percent-encode a '/', '?' or '#' in the password", redactURL(rawURL))
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: parsing IW_REDIS_URL %q: %w", redactURL(rawURL), redactErr(err))
	}
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), nil
}

// redactURL is raw fit for a log line or an error (README, "logs … never
// with tokens or secrets"): its scheme, nodes, path and query, with its
// userinfo, whatever it holds, and the value of any query parameter whose
// name contains "password" (the redis+cluster:// form carries its password
// as ?password=) read "xxxxx". A URL that does not parse, or whose query
// does not, is shown as its scheme alone (and what has no scheme as "…"), since which part of it is the
// secret is then unknown; so is one whose path, query or fragment holds the
// '@' that should have ended a userinfo (a '/', '?' or '#' in a password
// that was not percent-encoded: misplacedAt).
func redactURL(raw string) string {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || !validScheme(scheme) {
		return "…"
	}
	hidden := scheme + "://…"
	u, err := url.Parse(raw)
	if err != nil || misplacedAt(u) {
		return hidden
	}
	var sb strings.Builder
	sb.WriteString(u.Scheme + "://")
	if u.User != nil {
		sb.WriteString("xxxxx@")
	}
	sb.WriteString(u.Host + u.EscapedPath())
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return hidden
		}
		for name := range q {
			if strings.Contains(strings.ToLower(name), "password") {
				q[name] = []string{"xxxxx"}
			}
		}
		sb.WriteString("?" + q.Encode())
	}
	return sb.String()
}

// validScheme reports whether s is a URL scheme (RFC 3986 §3.1), so that
// redactURL may show it: anything else may be the start of a secret.
func validScheme(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// misplacedAt reports whether u has no userinfo but an '@' after its host:
// a password holding a '/', '?' or '#' that was not percent-encoded ends the
// host early, and the rest of the password is read as a path, query or
// fragment.
func misplacedAt(u *url.URL) bool {
	return u.User == nil && strings.Contains(u.Path+u.RawQuery+u.Fragment, "@")
}

// redactErr is err without the input it quotes: url.Parse's *url.Error
// quotes the whole URL, and the errors it wraps the bad escape or port,
// which may be part of a password. What is wrong is kept where it is known.
func redactErr(err error) error {
	var ee url.EscapeError
	if errors.As(err, &ee) {
		return errors.New("invalid URL escape: a '%' not followed by two hex digits")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New("not a URL; percent-encode a '/', '?', '#', '@' or '%' in the password")
	}
	return err
}

// ChangedAt returns when the content behind an answer tagged with tags last
// changed: the latest time a change recorded under one of them (changedLua),
// in whole seconds. An answer's bytes change only with a purge of one of
// its keys, and every change is dated later than every change before it,
// so a version of the answer made after a change carries a later time than
// any version made before it, even within one second: it is the
// Last-Modified of answers that show many articles, which no article's own
// date can be (a retraction or a silent edit of an older article changes
// them without moving any date they show). The time follows Redis's clock
// but may be a few seconds ahead of it after a burst of changes. Read it
// before the content it dates: read after, it may date a change the
// content read missed. It is the zero time when no change has been
// recorded under any of tags (a store written before the times were
// kept), and it knows nothing of per-article keys (article:<slug>).
func (s *Store) ChangedAt(ctx context.Context, tags ...string) (time.Time, error) {
	times, err := s.ChangeTimes(ctx, tags...)
	var latest time.Time
	for _, t := range times {
		if t.After(latest) {
			latest = t
		}
	}
	return latest, err
}

// ChangeTimes reads the time of the last change under each of tags in one
// round trip; a key with none recorded is absent from the map (ChangedAt).
func (s *Store) ChangeTimes(ctx context.Context, tags ...string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(tags) == 0 {
		return out, nil
	}
	vals, err := s.rdb.HMGet(ctx, keyChanged, tags...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading change times: %w", err)
	}
	for i, v := range vals {
		if str, ok := v.(string); ok {
			if n, err := strconv.ParseInt(str, 10, 64); err == nil && n > 0 {
				out[tags[i]] = time.Unix(n, 0).UTC()
			}
		}
	}
	return out, nil
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
