// Package tokenverifier is the edge's shared bearer-token verifier (docs/architecture.md
// docs/decisions.md (bearer tokens)). The rate limiter asks it who the client is and bearer_auth asks it
// whether a write may pass; both get the same answer from one cache.
//
// A token is valid when Redis holds iw:token:<sha256 hex> (package
// internal/token). Valid answers are cached for at most 30 s (never past the
// token's expiry), invalid ones for at most 5 s; a message on iw:revocations
// drops the revoked token from the cache at once, and every (re)subscription
// clears the whole cache, because pub/sub loses the messages sent while a
// subscriber was disconnected. The subscription is the shared resubscribing
// loop of package invalidation.
//
// Raw tokens are never logged or kept: the cache is keyed by the SHA-256.
package tokenverifier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"golang.org/x/sync/singleflight"

	"github.com/invoicewire/invoicewire/caddymodules/internal/redisconn"
	"github.com/invoicewire/invoicewire/internal/invalidation"
	"github.com/invoicewire/invoicewire/internal/metrics"
	"github.com/invoicewire/invoicewire/internal/token"
)

// Cache lifetimes of docs/decisions.md (bearer tokens).
const (
	ValidTTL   = 30 * time.Second
	InvalidTTL = 5 * time.Second
)

// lookupTimeout bounds one Redis lookup on the request path.
const lookupTimeout = 500 * time.Millisecond

// ErrInvalid means the token is unknown, expired or revoked.
var ErrInvalid = token.ErrInvalid

// ErrUnavailable means Redis failed to answer a moment ago; the verifier
// does not ask again for downBackoff.
var ErrUnavailable = errors.New("tokenverifier: token store unavailable")

// downBackoff is how long lookups fail fast after Redis failed.
const downBackoff = time.Second

var lookups = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "token_verifier",
	Name:      "lookups_total",
	Help:      "Bearer token verifications by result: valid, invalid, error (Redis unreachable); cached tells whether the answer came from the cache.",
}, []string{"result", "cached"})

var pool = caddy.NewUsagePool()

// Verifier answers whether bearer tokens are valid. It is safe for
// concurrent use.
type Verifier struct {
	redisURL string
	rdb      redis.UniversalClient
	cache    *ristretto.Cache[string, verdict]
	// gen changes with every revocation; a lookup that started under an
	// older generation does not cache its answer, so a revocation that
	// races a lookup still wins.
	gen    atomic.Uint64
	flight singleflight.Group
	// downUntil (Unix nanoseconds) is set after Redis failed to answer:
	// until then lookups fail at once instead of each waiting for the
	// client's dial and retries, so an outage does not slow every request
	// that carries a token.
	downUntil atomic.Int64
	now       func() time.Time

	// cancel stops the revocation subscription; done is closed once it
	// has stopped.
	cancel context.CancelFunc
	done   chan struct{}
	// subscribed is closed once the first subscription is confirmed (for
	// tests that publish right away).
	subscribed chan struct{}
}

type verdict struct {
	rec *token.Record // nil when invalid
}

// Acquire returns the verifier shared by every module that names the same
// Redis URL, creating it (and its revocation subscriber) on first use. Each
// Acquire needs a Release, normally in the module's Cleanup.
func Acquire(ctx caddy.Context, redisURL string) (*Verifier, error) {
	if err := metrics.Register(ctx.GetMetricsRegistry(), lookups); err != nil {
		return nil, err
	}
	v, _, err := pool.LoadOrNew(redisURL, func() (caddy.Destructor, error) {
		return newVerifier(redisURL, ctx.Logger().Named("token_verifier"))
	})
	if err != nil {
		return nil, err
	}
	return v.(*Verifier), nil
}

// Release gives back a verifier obtained with Acquire.
func Release(redisURL string) {
	_, _ = pool.Delete(redisURL)
}

func newVerifier(redisURL string, log *zap.Logger) (*Verifier, error) {
	rdb, err := redisconn.Acquire(redisURL)
	if err != nil {
		return nil, err
	}
	cache, err := ristretto.NewCache(&ristretto.Config[string, verdict]{
		NumCounters: 1e5,
		MaxCost:     1e4, // entries; each costs 1
		BufferItems: 64,
	})
	if err != nil {
		redisconn.Release(redisURL)
		return nil, fmt.Errorf("tokenverifier: creating cache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	v := &Verifier{
		redisURL:   redisURL,
		rdb:        rdb,
		cache:      cache,
		now:        time.Now,
		cancel:     cancel,
		done:       make(chan struct{}),
		subscribed: make(chan struct{}),
	}
	slogger := slog.New(zapslog.NewHandler(log.Core(), zapslog.WithName(log.Name())))
	go func() {
		defer close(v.done)
		invalidation.Subscribe(ctx, rdb, token.ChannelRevocations, revocations{v}, slogger, v.subscribed)
	}()
	return v, nil
}

// Destruct stops the subscriber and frees the cache when the last module
// using the verifier is cleaned up.
func (v *Verifier) Destruct() error {
	v.cancel()
	<-v.done
	v.cache.Close()
	redisconn.Release(v.redisURL)
	return nil
}

// Subscribed is closed once the revocation subscription is first confirmed.
func (v *Verifier) Subscribed() <-chan struct{} { return v.subscribed }

// Verify returns the record of a raw bearer token. It returns ErrInvalid for
// a token that is unknown, expired or revoked, and another error when Redis
// cannot answer (the caller decides whether to fail open or closed).
func (v *Verifier) Verify(ctx context.Context, raw string) (*token.Record, error) {
	if raw == "" || len(raw) > token.MaxLength {
		lookups.WithLabelValues("invalid", "false").Inc()
		return nil, ErrInvalid
	}
	hash := token.Hash(raw)
	if vd, ok := v.cache.Get(hash); ok {
		if vd.rec == nil || !v.now().Before(vd.rec.ExpiresAt) && !vd.rec.ExpiresAt.IsZero() {
			lookups.WithLabelValues("invalid", "true").Inc()
			return nil, ErrInvalid
		}
		lookups.WithLabelValues("valid", "true").Inc()
		return vd.rec, nil
	}
	if v.now().UnixNano() < v.downUntil.Load() {
		lookups.WithLabelValues("error", "true").Inc()
		return nil, ErrUnavailable
	}
	res, err, _ := v.flight.Do(hash, func() (any, error) {
		gen := v.gen.Load()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		now := v.now()
		rec, err := token.Lookup(lctx, v.rdb, raw, now)
		switch {
		case errors.Is(err, token.ErrInvalid):
			if v.gen.Load() == gen {
				v.cache.SetWithTTL(hash, verdict{}, 1, InvalidTTL)
			}
			return nil, err
		case err != nil:
			v.downUntil.Store(v.now().Add(downBackoff).UnixNano())
			return nil, err
		}
		ttl := ValidTTL
		if !rec.ExpiresAt.IsZero() {
			ttl = min(ttl, rec.ExpiresAt.Sub(now))
		}
		if ttl > 0 && v.gen.Load() == gen {
			v.cache.SetWithTTL(hash, verdict{rec: rec}, 1, ttl)
		}
		return rec, nil
	})
	switch {
	case errors.Is(err, token.ErrInvalid):
		lookups.WithLabelValues("invalid", "false").Inc()
		return nil, ErrInvalid
	case err != nil:
		lookups.WithLabelValues("error", "false").Inc()
		return nil, fmt.Errorf("tokenverifier: %w", err)
	}
	lookups.WithLabelValues("valid", "false").Inc()
	return res.(*token.Record), nil
}

// revoke drops one token hash, or everything when hash is empty.
func (v *Verifier) revoke(hash string) {
	v.gen.Add(1)
	if hash == "" {
		v.cache.Clear()
		return
	}
	v.cache.Del(hash)
}

// revocations handles the messages of token.ChannelRevocations. Unlike a
// content invalidation, a revocation carries no version to compare: the
// revoked token's hash is the whole message. So there is no gap to detect,
// and a resync cannot tell what it missed: it forgets every cached answer.
type revocations struct{ v *Verifier }

// Resync forgets every cached answer: revocations sent while no
// subscription was live are lost.
func (r revocations) Resync(context.Context) { r.v.revoke("") }

// Receive drops the revoked token's answer, or every answer when the
// message is not a token hash.
func (r revocations) Receive(_ context.Context, payload string) {
	if isHash(payload) {
		r.v.revoke(payload)
		return
	}
	r.v.revoke("")
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
