package agentauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is an identity provider whose ID-JAGs agent-auth accepts, with the
// keys it signs them with: given inline, published at a jwks_uri, or both.
type Issuer struct {
	Issuer string             `json:"issuer"`
	JWKS   jose.JSONWebKeySet `json:"jwks"`
	// JWKSURI is where the issuer publishes its keys (RFC 8414 §2
	// jwks_uri); they are fetched under the outbound address rules and
	// follow its key rotation.
	JWKSURI string `json:"jwks_uri,omitempty"`
}

// ParseIssuers reads IW_IDJAG_ISSUERS: a JSON array of {"issuer", "jwks"}
// or {"issuer", "jwks_uri"} objects, or the path of a file that holds one.
// Empty means no issuer is trusted, so only anonymous clients can claim
// tokens.
func ParseIssuers(v string) ([]Issuer, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	raw := []byte(v)
	if !strings.HasPrefix(v, "[") {
		b, err := os.ReadFile(v)
		if err != nil {
			return nil, fmt.Errorf("agentauth: IW_IDJAG_ISSUERS is neither a JSON array nor a readable file: %w", err)
		}
		raw = b
	}
	var out []Issuer
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("agentauth: IW_IDJAG_ISSUERS must be a JSON array of {\"issuer\",\"jwks\" or \"jwks_uri\"}: %w", err)
	}
	for _, is := range out {
		if is.Issuer == "" || (len(is.JWKS.Keys) == 0 && is.JWKSURI == "") {
			return nil, fmt.Errorf("agentauth: IW_IDJAG_ISSUERS: every entry needs an issuer and at least one key or a jwks_uri")
		}
		if is.JWKSURI != "" {
			u, err := url.Parse(is.JWKSURI)
			if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
				return nil, fmt.Errorf("agentauth: IW_IDJAG_ISSUERS: the jwks_uri of %s must be an absolute https URL", is.Issuer)
			}
		}
		for _, k := range is.JWKS.Keys {
			if !k.IsPublic() {
				return nil, fmt.Errorf("agentauth: IW_IDJAG_ISSUERS: the keys of %s must be public keys", is.Issuer)
			}
		}
	}
	return out, nil
}

// Assertion type and media type of ID-JAGs
// (draft-ietf-oauth-identity-assertion-authz-grant).
const (
	AssertionTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
	typIDJAG           = "oauth-id-jag+jwt"
)

// acceptedAlgs are the JWS algorithms an ID-JAG may use. go-jose refuses
// every other, "none" included, before any signature is looked at.
var acceptedAlgs = []jose.SignatureAlgorithm{
	jose.EdDSA, jose.ES256, jose.ES384, jose.ES512,
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
}

// leeway tolerates clock skew between the identity provider and us.
const leeway = time.Minute

// maxAssertionLifetime refuses assertions valid for longer, which also
// bounds how long a jti is remembered.
const maxAssertionLifetime = 24 * time.Hour

// idjagClaims are the claims an ID-JAG must carry.
type idjagClaims struct {
	jwt.Claims
	ClientID string `json:"client_id"`
}

// verifyAssertion checks an ID-JAG for clientID (draft §5.1 with RFC 7523
// §3): a JWS with an accepted algorithm and typ oauth-id-jag+jwt, issued and
// signed by a trusted issuer, for our issuer as its only audience, for this
// client, unexpired, with iat, sub and a jti never seen before. The jti is
// recorded only when everything else holds, so a refused assertion changes
// nothing.
func (s *Service) verifyAssertion(ctx context.Context, raw, clientID string) error {
	grant := func(msg string) error { return oauthError("invalid_grant", msg) }
	tok, err := jwt.ParseSigned(raw, acceptedAlgs)
	if err != nil {
		return grant("the assertion is not a JWS-signed JWT with an accepted algorithm.")
	}
	if len(tok.Headers) != 1 {
		return grant("the assertion must have exactly one signature.")
	}
	hdr := tok.Headers[0]
	typ, _ := hdr.ExtraHeaders[jose.HeaderType].(string)
	// RFC 7515 §4.1.9: the "application/" prefix may be left out, and
	// media types compare case-insensitively.
	if !strings.EqualFold(strings.TrimPrefix(strings.ToLower(typ), "application/"), typIDJAG) {
		return grant(`the assertion's typ must be "` + typIDJAG + `".`)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return grant("the assertion's claims are not valid JSON.")
	}
	keys, ok := s.issuers[unverified.Issuer]
	if !ok {
		return grant("the assertion's issuer is not trusted by this service.")
	}
	candidates, err := keys.candidates(ctx, hdr.KeyID)
	if err != nil {
		return err
	}
	var claims idjagClaims
	verified := false
	for _, k := range candidates {
		if err := tok.Claims(k.Key, &claims); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return grant("the assertion's signature does not verify with the issuer's keys.")
	}
	now := s.now()
	if len(claims.Audience) != 1 || claims.Audience[0] != s.issuer {
		return grant("the assertion's audience must be this service's issuer " + s.issuer + ".")
	}
	if claims.Expiry == nil || claims.IssuedAt == nil {
		return grant("the assertion must carry exp and iat.")
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: unverified.Issuer, Time: now}, leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return grant("the assertion has expired.")
		case errors.Is(err, jwt.ErrIssuedInTheFuture), errors.Is(err, jwt.ErrNotValidYet):
			return grant("the assertion is not valid yet.")
		default:
			return grant("the assertion's claims are not valid.")
		}
	}
	exp := claims.Expiry.Time()
	if exp.Sub(now) > maxAssertionLifetime {
		return grant("the assertion is valid for too long; at most 24 hours are accepted.")
	}
	if claims.Subject == "" || claims.ID == "" {
		return grant("the assertion must carry sub and jti.")
	}
	if claims.ClientID != clientID {
		return grant("the assertion was issued for another client_id.")
	}
	// Replay protection (RFC 7523 §3 item 7): remember the jti until the
	// assertion could no longer be accepted anyway.
	sum := sha256.Sum256([]byte(unverified.Issuer + "\x00" + claims.ID))
	ttl := exp.Sub(now) + leeway
	fresh, err := s.rdb.SetNX(ctx, "iw:jti:"+hex.EncodeToString(sum[:]), "1", ttl).Result()
	if err != nil {
		return fmt.Errorf("agentauth: recording an assertion's jti: %w", err)
	}
	if !fresh {
		return grant("the assertion has already been used (jti replayed).")
	}
	return nil
}
