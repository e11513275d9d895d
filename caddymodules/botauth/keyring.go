package botauth

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
)

// keyState is what the keyring knows of one (keys URL, keyid).
type keyState uint8

const (
	// keyKnown: the key is cached and may be used.
	keyKnown keyState = iota
	// keyPending: nothing is known yet; a fetch has been asked for.
	keyPending
	// keyAbsent: the document was fetched recently and lacks this key.
	keyAbsent
	// keyUnreachable: the document could not be fetched recently.
	keyUnreachable
)

// maxKeysPerDocument bounds how many keys one directory may put in the
// cache, so one agent cannot fill it.
const maxKeysPerDocument = 32

// directoryMediaTypes is the Accept of a fetch: the directory's media type,
// then JWKS.
const directoryMediaTypes = "application/http-message-signatures-directory+json, application/jwk-set+json;q=0.9, application/json;q=0.5"

// docState remembers the last fetch of a keys document, so unknown keyids
// of a known document, and documents that fail, cost no new fetch until it
// expires (negative caching).
type docState struct {
	failed bool
}

// keyring caches agents' public keys by (keys URL, keyid). A lookup never
// waits for the network: a key that is not cached yet is fetched in the
// background, at most MaxFetches documents at once and each document once
// at a time, and the request goes on as anonymous. Both caches are bounded
// (ristretto, cost 1 per entry) and expire entries by TTL.
type keyring struct {
	fetcher  *netguard.Fetcher
	keys     *ristretto.Cache[string, *agentKey]
	docs     *ristretto.Cache[string, docState]
	slots    chan struct{}
	pending  sync.Map // keys URL → struct{}: a fetch is in flight
	ttl      ttlPolicy
	now      func() time.Time
	log      *zap.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	inflight sync.WaitGroup
}

// ttlPolicy turns a document's Cache-Control into how long its keys are
// kept.
type ttlPolicy struct {
	min, max, fallback, negative time.Duration
}

func newKeyring(f *netguard.Fetcher, maxEntries int64, maxFetches int, ttl ttlPolicy, now func() time.Time, log *zap.Logger) (*keyring, error) {
	keys, err := ristretto.NewCache(&ristretto.Config[string, *agentKey]{
		NumCounters: 10 * maxEntries, MaxCost: maxEntries, BufferItems: 64,
	})
	if err != nil {
		return nil, fmt.Errorf("bot_auth: creating the key cache: %w", err)
	}
	docs, err := ristretto.NewCache(&ristretto.Config[string, docState]{
		NumCounters: 10 * maxEntries, MaxCost: maxEntries, BufferItems: 64,
	})
	if err != nil {
		keys.Close()
		return nil, fmt.Errorf("bot_auth: creating the directory cache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &keyring{
		fetcher: f, keys: keys, docs: docs, slots: make(chan struct{}, maxFetches),
		ttl: ttl, now: now, log: log, ctx: ctx, cancel: cancel,
	}, nil
}

func cacheKey(keysURL, keyID string) string { return keysURL + "\x00" + keyID }

// agentKey is a cached key and the agent it verifies, made once when its
// directory is fetched rather than on every verification.
type agentKey struct {
	pub   ed25519.PublicKey
	agent agent
}

// lookup returns the key keyID of the document at keysURL when it is
// cached, and otherwise what is known, asking for a fetch when nothing is.
func (k *keyring) lookup(keysURL, keyID string) (*agentKey, keyState) {
	if key, ok := k.keys.Get(cacheKey(keysURL, keyID)); ok {
		return key, keyKnown
	}
	if st, ok := k.docs.Get(keysURL); ok {
		if st.failed {
			return nil, keyUnreachable
		}
		return nil, keyAbsent
	}
	k.fetchInBackground(keysURL)
	return nil, keyPending
}

// fetchInBackground starts a fetch of keysURL unless one is in flight or
// every fetch slot is taken (then a later request asks again).
func (k *keyring) fetchInBackground(keysURL string) {
	if _, busy := k.pending.LoadOrStore(keysURL, struct{}{}); busy {
		return
	}
	select {
	case k.slots <- struct{}{}:
	default:
		k.pending.Delete(keysURL)
		return
	}
	k.inflight.Add(1)
	go func() {
		defer k.inflight.Done()
		defer func() { <-k.slots }()
		defer k.pending.Delete(keysURL)
		k.refresh(keysURL)
	}()
}

// refresh fetches the document at keysURL and caches its Ed25519 keys under
// their RFC 7638 thumbprints, or remembers the failure for the negative TTL.
func (k *keyring) refresh(keysURL string) {
	doc, err := k.fetcher.Get(k.ctx, keysURL, directoryMediaTypes)
	var keys []ed25519.PublicKey
	if err == nil {
		keys, err = parseKeys(doc.Body, k.now())
	}
	if err != nil {
		k.log.Info("agent key directory unavailable", zap.String("url", keysURL), zap.Error(err))
		k.docs.SetWithTTL(keysURL, docState{failed: true}, 1, k.ttl.negative)
		k.docs.Wait()
		return
	}
	ttl := doc.FreshFor(k.ttl.min, k.ttl.max, k.ttl.fallback)
	for _, pub := range keys {
		id := signing.Thumbprint(pub)
		k.keys.SetWithTTL(cacheKey(keysURL, id), &agentKey{pub: pub, agent: verifiedAgent(keysURL, id)}, 1, ttl)
	}
	// Keyids the document lacks stay unknown until it is fetched again, so
	// a flood of random keyids costs one fetch per TTL (at least the
	// minimum).
	k.docs.SetWithTTL(keysURL, docState{}, 1, ttl)
	k.keys.Wait()
	k.docs.Wait()
	k.log.Debug("agent key directory fetched", zap.String("url", keysURL), zap.Int("keys", len(keys)), zap.Duration("ttl", ttl))
}

// close stops fetches in flight and releases the caches.
func (k *keyring) close() {
	k.cancel()
	k.inflight.Wait()
	k.keys.Close()
	k.docs.Close()
}

// jwks is a JSON Web Key Set, the body of a signatures directory.
type jwks struct {
	Keys []struct {
		signing.JWK
		NotBefore *int64 `json:"nbf"`
		Expires   *int64 `json:"exp"`
	} `json:"keys"`
}

// parseKeys reads the Ed25519 keys of a directory or JWKS body. Keys of
// other types, keys outside their nbf/exp window, and keys whose kid is not
// their thumbprint (the directory rule) are skipped; at most
// maxKeysPerDocument are kept.
func parseKeys(body []byte, now time.Time) ([]ed25519.PublicKey, error) {
	var set jwks
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("bot_auth: the key directory is not a JWKS: %w", err)
	}
	var out []ed25519.PublicKey
	for _, j := range set.Keys {
		if len(out) == maxKeysPerDocument {
			break
		}
		pub, err := j.PublicKey()
		if err != nil {
			continue
		}
		if j.Kid != "" && j.Kid != signing.Thumbprint(pub) {
			continue
		}
		if (j.NotBefore != nil && now.Unix() < *j.NotBefore) || (j.Expires != nil && now.Unix() >= *j.Expires) {
			continue
		}
		out = append(out, pub)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bot_auth: the key directory holds no usable Ed25519 key")
	}
	return out, nil
}
