// Package token reads the bearer tokens that agent auth issues (docs/decisions.md (bearer tokens),
// docs/decisions.md (agent auth)). Tokens are opaque; Redis holds only their SHA-256 at
// iw:token:<hex>, with the client they belong to and a TTL.
package token

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Record is what Redis keeps about an issued token.
type Record struct {
	ClientID  string    `json:"client_id"`
	Scope     string    `json:"scope"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ChannelRevocations announces revoked tokens (their SHA-256 hex) so every
// cache of verified tokens drops them at once.
const ChannelRevocations = "iw:revocations"

// Hash is the hex SHA-256 of a raw token, the only form ever stored or logged.
func Hash(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// Key is the Redis key of a raw token.
func Key(raw string) string { return KeyOfHash(Hash(raw)) }

// KeyOfHash is the Redis key of the token whose SHA-256 hex is hash.
func KeyOfHash(hash string) string { return "iw:token:" + hash }

// ErrInvalid means the token is unknown, expired or revoked.
var ErrInvalid = errors.New("token: invalid, expired or revoked")

// MaxLength bounds tokens accepted for lookup; issued tokens are far shorter.
const MaxLength = 512

// Lookup returns the record of a raw token, or ErrInvalid.
func Lookup(ctx context.Context, rdb redis.UniversalClient, raw string, now time.Time) (*Record, error) {
	if raw == "" || len(raw) > MaxLength {
		return nil, ErrInvalid
	}
	b, err := rdb.Get(ctx, Key(raw)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrInvalid
	}
	if err != nil {
		return nil, fmt.Errorf("token: looking up: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil || rec.ClientID == "" {
		return nil, ErrInvalid
	}
	if !rec.ExpiresAt.IsZero() && !now.Before(rec.ExpiresAt) {
		return nil, ErrInvalid
	}
	return &rec, nil
}

// FromHeader extracts a bearer token from an Authorization header value
// (RFC 6750 §2.1: the scheme is case-insensitive). ok is false when the header
// is absent or not a Bearer credential.
func FromHeader(h http.Header) (raw string, present bool) {
	v := h.Get("Authorization")
	if v == "" {
		return "", false
	}
	scheme, cred, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(cred), true
}

// Malformed reports an Authorization header of the Bearer scheme whose
// credential is not a b64token (RFC 6750 §2.1): empty ("Bearer"), or with
// a space or another character no token has ("Bearer a b"); or
// Authorization sent more than once, which would leave the token to the
// order of the fields (it is a singleton field, RFC 9110 §11.6.2). Either
// is answered as an invalid token (MalformedToken).
func Malformed(h http.Header) bool {
	if len(h["Authorization"]) > 1 {
		return true
	}
	scheme, cred, _ := strings.Cut(h.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") && !B64Token(strings.TrimSpace(cred))
}

// B64Token checks b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" /
// "+" / "/" ) *"=" (RFC 6750 §2.1).
func B64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// Challenge is the WWW-Authenticate value of a 401 (docs/decisions.md, bearer tokens). invalid adds
// error="invalid_token" for a token that was presented but is not valid.
func Challenge(siteRoot string, invalid bool) string {
	c := `Bearer realm="invoicewire", resource_metadata="` + siteRoot + `/.well-known/oauth-protected-resource"`
	if invalid {
		c += `, error="invalid_token"`
	}
	return c
}
