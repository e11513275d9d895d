package token

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// Scope is the scope of every access token (docs/decisions.md, agent auth).
const Scope = "webhooks:read webhooks:write"

// Lifetime is the lifetime of access tokens, the claim answer's expires_in.
const Lifetime = time.Hour

// Random returns a new opaque secret: 256 random bits in base64url, with an
// optional readable prefix. Only its SHA-256 is ever stored.
func Random(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+).
		panic(err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// Issue creates an access token for clientID, valid for ttl from now, and
// stores its hash at Key with the same TTL. It returns the raw token, which
// is shown to the client once and never stored.
func Issue(ctx context.Context, rdb redis.UniversalClient, clientID string, ttl time.Duration, now time.Time) (string, *Record, error) {
	raw := Random("iwt_")
	rec := &Record{ClientID: clientID, Scope: Scope, ExpiresAt: now.Add(ttl).UTC().Truncate(time.Second)}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", nil, fmt.Errorf("token: encoding a record: %w", err)
	}
	if err := rdb.Set(ctx, Key(raw), b, ttl).Err(); err != nil {
		return "", nil, fmt.Errorf("token: storing a new token: %w", err)
	}
	return raw, rec, nil
}

// Unauthorized is the 401 of docs/decisions.md (bearer tokens) for a request to siteRoot's API:
// invalid is false when no token was presented, true when one was presented
// but is unknown, expired or revoked.
func Unauthorized(siteRoot, method string, invalid bool) *apierror.Error {
	var e *apierror.Error
	if invalid {
		e = apierror.New(http.StatusUnauthorized, "The bearer token is invalid, expired or revoked.", "Claim a new token at "+siteRoot+"/api/v1/agent-auth/claim.")
	} else {
		e = apierror.New(http.StatusUnauthorized, "A bearer token is required for "+method+" requests.", "Register at "+siteRoot+"/api/v1/agent-auth/register and claim a token; see "+siteRoot+"/auth.md.")
	}
	// Set, not a literal map key: http.Header's Get, Set and Del (and
	// every middleware using them) find only the canonical key.
	e.Header = http.Header{}
	e.Header.Set("WWW-Authenticate", Challenge(siteRoot, invalid))
	return e
}

// MalformedToken is the 401 of a request whose Authorization is a Bearer
// credential that is no token (Malformed): the contract answers a missing
// or invalid token with 401 unauthorized, and RFC 6750 §3.1 names a
// malformed token invalid_token, so it is a wrong token's 401 with a
// message that says what is wrong.
func MalformedToken(siteRoot string) *apierror.Error {
	e := Unauthorized(siteRoot, "", true)
	e.Message = "The Authorization header holds no bearer token: send one header, Authorization: Bearer <token>, with one token and no spaces."
	return e
}
