// Package signing holds Invoicewire's Ed25519 service key and the HTTP
// Message Signatures (RFC 9421) made with it. The origin publishes the key in
// its signatures directory and signs that directory's response (Web Bot Auth,
// docs/decisions.md (agent surfaces)); the webhook worker signs deliveries with the same key (docs/decisions.md, delivery),
// so a receiver can verify the sender against the published directory.
//
// The API in three parts:
//
//   - The key. [Source.Key] returns the service [Key]: the seed configured in
//     IW_SIGNING_KEY when set, otherwise one generated at first start and
//     stored in Redis at [RedisKey] with SET NX, so every origin and worker
//     of a deployment uses the same key. [Key.JWK] is its public JWK (RFC
//     8037) whose kid is the RFC 7638 thumbprint ([Thumbprint]).
//   - Signing. [Key.SignRequest] signs an outgoing request (the worker's
//     deliveries); [Key.SignResponse] signs a response in place (the
//     directory). Both set Signature-Input and Signature for one label,
//     keeping other labels already present. [ContentDigest] computes the
//     RFC 9530 Content-Digest a signature over a body covers, and
//     [SignatureAgent] the Web Bot Auth header naming the directory; set both
//     before signing when they are covered (see the example of
//     [Key.SignRequest] for a webhook delivery).
//   - Verifying. [VerifyRequest] and [VerifyResponse] check one label's
//     signature with a public key; [VerifyContentDigest] checks a body.
//
// The signature base (RFC 9421 §2.5) is built by [SignatureBase] from a
// [Message], which resolves the derived components (@method, @authority,
// @path, @query, @target-uri, @scheme, @request-target, @status) and header
// fields, with the ;req flag for request components of a response. The
// implementation is written in this project because no maintained Go
// library for RFC 9421 is available here; it is tested against the RFC's
// own Ed25519 test vector (Appendix B.2.6).
package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RedisKey holds the base64url seed of the generated service key. It is
// written once with SET NX; whichever process starts first wins and every
// other one reads its key.
const RedisKey = "iw:signing:ed25519"

// Key is an Ed25519 private key with its RFC 7638 thumbprint.
type Key struct {
	private ed25519.PrivateKey
	// ID is the key's JWK SHA-256 thumbprint (RFC 7638), the keyid of every
	// signature made with it and the kid of its directory entry.
	ID string
}

// NewKey builds a Key from a 32-byte Ed25519 seed (RFC 8032 §5.1.5).
func NewKey(seed []byte) (*Key, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing: an Ed25519 seed is %d bytes, got %d", ed25519.SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return &Key{private: priv, ID: Thumbprint(priv.Public().(ed25519.PublicKey))}, nil
}

// GenerateKey makes a new random key.
func GenerateKey() (*Key, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("signing: reading random bytes: %w", err)
	}
	return NewKey(seed)
}

// ParseSeed reads a seed written as base64url (padded or not) or standard
// base64, the form of IW_SIGNING_KEY and of RedisKey.
func ParseSeed(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return NewKey(b)
		}
	}
	return nil, errors.New("signing: the key is not base64 of a 32-byte Ed25519 seed")
}

// EncodeSeed is the inverse of ParseSeed (base64url without padding).
func (k *Key) EncodeSeed() string { return base64.RawURLEncoding.EncodeToString(k.private.Seed()) }

// Public returns the public half of k.
func (k *Key) Public() ed25519.PublicKey { return k.private.Public().(ed25519.PublicKey) }

// sign signs msg (a signature base) with k.
func (k *Key) sign(msg []byte) []byte { return ed25519.Sign(k.private, msg) }

// JWK is an Ed25519 public key as a JSON Web Key (RFC 8037 §2), as the
// signatures directory lists it.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// JWK returns k's public key as a JWK whose kid is its thumbprint. alg is
// "EdDSA", the JOSE name (RFC 8037 §3.1); RFC 9421 calls it "ed25519".
func (k *Key) JWK() JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.Public()), Kid: k.ID, Use: "sig", Alg: "EdDSA"}
}

// PublicKey decodes the Ed25519 public key of a JWK.
func (j JWK) PublicKey() (ed25519.PublicKey, error) {
	if j.Kty != "OKP" || j.Crv != "Ed25519" {
		return nil, fmt.Errorf("signing: JWK is %s/%s, want OKP/Ed25519", j.Kty, j.Crv)
	}
	b, err := base64.RawURLEncoding.DecodeString(j.X)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("signing: JWK x is not base64url of a 32-byte Ed25519 public key")
	}
	return ed25519.PublicKey(b), nil
}

// Thumbprint is the RFC 7638 JWK SHA-256 thumbprint of an Ed25519 public key:
// SHA-256 over the required members in lexicographic order without
// whitespace, {"crv":"Ed25519","kty":"OKP","x":"…"} (RFC 8037 Appendix A.3),
// as base64url without padding.
func Thumbprint(pub ed25519.PublicKey) string {
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Source hands out the service key, loading it once. It is safe for
// concurrent use; a failed load (Redis down) is retried on the next call.
type Source struct {
	rdb        redis.UniversalClient
	configured string

	mu  sync.Mutex
	key *Key
}

// NewSource returns a Source for the seed configured in IW_SIGNING_KEY, or,
// when configured is empty, for the key shared through Redis at RedisKey.
// Check a configured seed early with ParseSeed so a typo fails at start.
func NewSource(rdb redis.UniversalClient, configured string) *Source {
	return &Source{rdb: rdb, configured: strings.TrimSpace(configured)}
}

// Key returns the service key.
func (s *Source) Key(ctx context.Context) (*Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	var (
		k   *Key
		err error
	)
	if s.configured != "" {
		k, err = ParseSeed(s.configured)
		if err != nil {
			return nil, fmt.Errorf("signing: IW_SIGNING_KEY: %w", err)
		}
	} else if k, err = LoadOrCreate(ctx, s.rdb); err != nil {
		return nil, err
	}
	s.key = k
	return k, nil
}

// LoadOrCreate returns the key stored at RedisKey, generating and storing
// one first when there is none. Concurrent first starts agree: SET NX lets
// exactly one candidate in, and everyone reads the winner back.
func LoadOrCreate(ctx context.Context, rdb redis.UniversalClient) (*Key, error) {
	candidate, err := GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := rdb.SetNX(ctx, RedisKey, candidate.EncodeSeed(), 0).Err(); err != nil {
		return nil, fmt.Errorf("signing: storing a new key at %s: %w", RedisKey, err)
	}
	stored, err := rdb.Get(ctx, RedisKey).Result()
	if err != nil {
		return nil, fmt.Errorf("signing: reading the key at %s: %w", RedisKey, err)
	}
	k, err := ParseSeed(stored)
	if err != nil {
		return nil, fmt.Errorf("signing: the key at %s: %w", RedisKey, err)
	}
	return k, nil
}
