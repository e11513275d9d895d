package agentauth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/netguard"
)

// Bounds of fetched JWKS: how long a set is kept (from its Cache-Control
// max-age, clamped), how often an unknown kid may send us back for a new
// set, and the size and time a fetch may take.
const (
	jwksMinTTL        = time.Minute
	jwksMaxTTL        = 24 * time.Hour
	jwksDefaultTTL    = time.Hour
	jwksRefetchPeriod = 30 * time.Second
	jwksMaxBytes      = 256 << 10
	jwksFetchTimeout  = 5 * time.Second
)

// issuerKeys are the keys one trusted issuer signs ID-JAGs with: the keys
// configured inline, and the set published at its jwks_uri (fetched on
// first use, kept for its Cache-Control max-age, fetched again when it
// expires or when an assertion names a kid it lacks — the issuer rotated
// its keys —, at most once every jwksRefetchPeriod for that reason). When a fetch fails, the last
// set is still used; with none, the claim is a 503.
type issuerKeys struct {
	inline  []jose.JSONWebKey
	uri     string
	fetcher *netguard.Fetcher
	now     func() time.Time
	log     *slog.Logger

	group   singleflight.Group
	mu      sync.Mutex
	fetched []jose.JSONWebKey
	expires time.Time // of fetched
	// lastKidRefetch is when an unknown kid last caused a fetch.
	lastKidRefetch time.Time
}

// candidates returns the keys that may have signed an assertion with kid
// (every key when kid is empty).
func (k *issuerKeys) candidates(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	if k.uri == "" {
		return match(k.inline, kid), nil
	}
	now := k.now()
	k.mu.Lock()
	fetched, expires := k.fetched, k.expires
	stale := fetched == nil || !now.Before(expires)
	rotated := !stale && kid != "" && len(match(append(k.inline, fetched...), kid)) == 0 && now.Sub(k.lastKidRefetch) >= jwksRefetchPeriod
	if rotated {
		k.lastKidRefetch = now
	}
	k.mu.Unlock()
	if stale || rotated {
		// One fetch per issuer at a time; concurrent claims share it.
		if _, err, _ := k.group.Do("", func() (any, error) { return nil, k.refresh(ctx) }); err != nil {
			k.log.Warn("ID-JAG issuer keys not refreshed", "jwks_uri", k.uri, "err", err)
		}
		k.mu.Lock()
		fetched = k.fetched
		k.mu.Unlock()
	}
	if fetched == nil && len(k.inline) == 0 {
		return nil, &apierror.Error{Status: http.StatusServiceUnavailable, Code: apierror.CodeUnavailable,
			Message: "The assertion's issuer publishes its keys at a jwks_uri that could not be fetched.",
			Hint:    "Try again later.", Header: http.Header{"Retry-After": {strconv.Itoa(int(jwksRefetchPeriod / time.Second))}}}
	}
	return match(append(append([]jose.JSONWebKey(nil), k.inline...), fetched...), kid), nil
}

// refresh fetches the issuer's JWKS, keeping the previous set on failure.
func (k *issuerKeys) refresh(ctx context.Context) error {
	now := k.now()
	// The claim's own deadline must not cut a fetch other claims share.
	doc, err := k.fetcher.Get(context.WithoutCancel(ctx), k.uri, "application/jwk-set+json, application/json;q=0.9")
	if err != nil {
		return fmt.Errorf("agentauth: fetching the JWKS of an issuer: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(doc.Body, &set); err != nil {
		return fmt.Errorf("agentauth: the JWKS at %s is not valid: %w", k.uri, err)
	}
	var keys []jose.JSONWebKey
	for _, key := range set.Keys {
		if key.IsPublic() && key.Valid() {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("agentauth: the JWKS at %s holds no public key", k.uri)
	}
	k.mu.Lock()
	k.fetched, k.expires = keys, now.Add(doc.FreshFor(jwksMinTTL, jwksMaxTTL, jwksDefaultTTL))
	k.mu.Unlock()
	return nil
}

// match returns the keys with kid, or all of them when kid is empty.
func match(keys []jose.JSONWebKey, kid string) []jose.JSONWebKey {
	if kid == "" {
		return keys
	}
	var out []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}
