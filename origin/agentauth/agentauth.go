// Package agentauth is the origin's agent authentication (the contract,
// endpoints 12–15, docs/decisions.md (agent auth)): dynamic client registration (RFC 7591) with
// its management endpoint (RFC 7592), the token claim with anonymous clients
// and ID-JAG identity assertions, and revocation (RFC 7009).
//
// Every secret it issues (registration access tokens, access tokens) is 256
// random bits shown once; Redis keeps only SHA-256 hashes:
//
//	iw:client:{<client_id>}         JSON client record, TTL ClientTTL from the last claim
//	iw:client:{<client_id>}:tokens  set of the client's access-token hashes
//	iw:token:<sha256>               access token (internal/token), TTL = lifetime
//	iw:jti:<sha256(iss, jti)>       a used assertion, until it would have expired
//
// The client keys, and deleting a client with its tokens and subscriptions,
// are package internal/clients', which iwctl shares.
package agentauth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/clients"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Grant types accepted by the claim endpoint.
const (
	GrantIdentityAssertion = "urn:ietf:params:oauth:grant-type:identity-assertion"
	GrantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// Identity types of a client.
const (
	IdentityAnonymous = "anonymous"
	IdentityAssertion = "identity_assertion"
)

// ClientTTL is how long a client registration lives after its last claim.
const ClientTTL = 90 * 24 * time.Hour

// Config configures the service.
type Config struct {
	// SiteRoot is {site_root}. It is also this service's issuer identifier,
	// the audience ID-JAGs must name (RFC 8414 metadata publishes it).
	SiteRoot string
	// Issuers are the trusted ID-JAG issuers (IW_IDJAG_ISSUERS).
	Issuers []Issuer
	// FetchPolicy decides which addresses issuers' jwks_uri documents may
	// be fetched from: the rules of webhook deliveries.
	FetchPolicy netguard.Policy
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log *slog.Logger
}

// Service answers the agent-auth endpoints.
type Service struct {
	rdb      redis.UniversalClient
	siteRoot string
	issuer   string
	issuers  map[string]*issuerKeys
	now      func() time.Time
	log      *slog.Logger
}

// New builds the service on rdb.
func New(cfg Config, rdb redis.UniversalClient) *Service {
	s := &Service{rdb: rdb, siteRoot: cfg.SiteRoot, issuer: cfg.SiteRoot,
		issuers: map[string]*issuerKeys{}, now: cfg.Now, log: cfg.Log}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	fetcher := netguard.NewFetcher(cfg.FetchPolicy, jwksFetchTimeout, jwksMaxBytes)
	for _, is := range cfg.Issuers {
		s.issuers[is.Issuer] = &issuerKeys{inline: is.JWKS.Keys, uri: is.JWKSURI, fetcher: fetcher, now: s.now, log: s.log}
	}
	return s
}

func (s *Service) base() string { return s.siteRoot + "/api/v1" }

func keyClient(id string) string { return clients.Key(id) }

// oauthError is a 400 whose message names the OAuth error code (docs/decisions.md, agent auth).
func oauthError(code, msg string) *apierror.Error {
	hint := "See the agent registration walkthrough at /auth.md."
	return apierror.BadRequest(code+": "+msg, hint)
}

// Metadata answers GET /agent-auth/register (openapi RegistrationMetadata).
func (s *Service) Metadata(r *http.Request) (*respond.Response, error) {
	b := s.base()
	return respond.JSON(map[string]any{
		"registration_endpoint":     b + "/agent-auth/register",
		"claim_endpoint":            b + "/agent-auth/claim",
		"revocation_endpoint":       b + "/agent-auth/revoke",
		"grant_types_supported":     []string{GrantIdentityAssertion, GrantJWTBearer},
		"identity_types_supported":  []string{IdentityAnonymous, IdentityAssertion},
		"assertion_types_supported": []string{AssertionTypeIDJAG},
		"scopes_supported":          strings.Fields(token.Scope),
		"token_lifetime":            int(token.Lifetime / time.Second),
		"documentation":             s.siteRoot + "/auth.md",
	}, "agent-auth")
}

// client is the stored registration.
type client struct {
	ClientID       string   `json:"client_id"`
	ClientName     string   `json:"client_name"`
	Contact        string   `json:"contact,omitempty"`
	IdentityType   string   `json:"identity_type"`
	AssertionTypes []string `json:"assertion_types_supported,omitempty"`
	IssuedAt       int64    `json:"client_id_issued_at"`
	// RegistrationTokenHash is the SHA-256 hex of the registration access
	// token; the token itself is never stored.
	RegistrationTokenHash string `json:"rat_hash"`
}

// registration is the client information response (RFC 7591 §3.2.1 with
// the RFC 7592 members; openapi AgentRegistration).
type registration struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	Contact                 string   `json:"contact,omitempty"`
	IdentityType            string   `json:"identity_type"`
	AssertionTypes          []string `json:"assertion_types_supported,omitempty"`
	RegistrationAccessToken string   `json:"registration_access_token,omitempty"`
	RegistrationClientURI   string   `json:"registration_client_uri"`
	IssuedAt                int64    `json:"client_id_issued_at"`
	ClaimURI                string   `json:"claim_uri"`
	RevocationURI           string   `json:"revocation_uri"`
}

func (s *Service) registration(c *client) registration {
	return registration{
		ClientID: c.ClientID, ClientName: c.ClientName, Contact: c.Contact, IdentityType: c.IdentityType,
		AssertionTypes: c.AssertionTypes, RegistrationClientURI: s.base() + "/agent-auth/register/" + c.ClientID,
		IssuedAt: c.IssuedAt, ClaimURI: s.base() + "/agent-auth/claim", RevocationURI: s.base() + "/agent-auth/revoke",
	}
}

// registerRequest is the registration body; pointers tell absent from
// empty.
type registerRequest struct {
	ClientName     *string  `json:"client_name"`
	Contact        *string  `json:"contact"`
	IdentityType   *string  `json:"identity_type"`
	AssertionTypes []string `json:"assertion_types_supported"`
}

// The longest contact accepted, and its longest local part (RFC 5321
// §4.5.3.1.1, §4.5.3.1.3).
const (
	maxContact      = 254
	maxContactLocal = 64
)

// Register answers POST /agent-auth/register (201 AgentRegistration).
func (s *Service) Register(r *http.Request) (*respond.Response, error) {
	var req registerRequest
	if _, err := respond.DecodeJSON(r, respond.MaxBody, &req); err != nil {
		return nil, err
	}
	meta := func(msg string) error { return oauthError("invalid_client_metadata", msg) }
	if req.ClientName == nil || strings.TrimSpace(*req.ClientName) == "" {
		return nil, meta("client_name is required.")
	}
	name := strings.TrimSpace(*req.ClientName)
	if len([]rune(name)) > 200 {
		return nil, meta("client_name is longer than 200 characters.")
	}
	// The name is shown to people (RFC 7591 §2: human-readable): control
	// characters (NUL, line breaks, escapes) have no place in it, and would
	// reach logs and pages as they are.
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return nil, meta("client_name must not contain control characters.")
	}
	c := &client{ClientName: name, IdentityType: IdentityAnonymous}
	if req.Contact != nil {
		// RFC 5321 §4.5.3.1: a local part of at most 64 octets and a path
		// of at most 256, so an address of at most 254; anything longer is
		// no address a mail server takes, and would be stored and echoed.
		if len(*req.Contact) > maxContact {
			return nil, meta(fmt.Sprintf("contact is longer than %d characters.", maxContact))
		}
		addr, err := mail.ParseAddress(*req.Contact)
		if err != nil || addr.Name != "" || addr.Address != strings.TrimSpace(*req.Contact) {
			return nil, meta("contact must be an e-mail address such as ops@example.com.")
		}
		if at := strings.LastIndexByte(addr.Address, '@'); at > maxContactLocal {
			return nil, meta(fmt.Sprintf("contact's local part (before the @) is longer than %d characters.", maxContactLocal))
		}
		c.Contact = addr.Address
	}
	if req.IdentityType != nil {
		switch *req.IdentityType {
		case IdentityAnonymous, IdentityAssertion:
			c.IdentityType = *req.IdentityType
		default:
			return nil, meta(`identity_type must be "anonymous" or "identity_assertion".`)
		}
	}
	for _, t := range req.AssertionTypes {
		if t != AssertionTypeIDJAG {
			return nil, meta("the only supported assertion type is " + AssertionTypeIDJAG + ".")
		}
	}
	if c.IdentityType == IdentityAssertion {
		c.AssertionTypes = []string{AssertionTypeIDJAG}
	}
	now := s.now()
	c.ClientID = events.NewID("cli_", now)
	c.IssuedAt = now.Unix()
	// The token names its client, so revoke can tell a real one (refused,
	// RFC 7009 §2.2.1) from an unknown one (200, §2.2) with one read.
	rat := token.Random(registrationTokenPrefix + c.ClientID + registrationTokenSep)
	c.RegistrationTokenHash = token.Hash(rat)
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("agentauth: encoding a client: %w", err)
	}
	if err := s.rdb.Set(r.Context(), keyClient(c.ClientID), b, ClientTTL).Err(); err != nil {
		return nil, fmt.Errorf("agentauth: storing a client: %w", err)
	}
	reg := s.registration(c)
	reg.RegistrationAccessToken = rat
	resp, err := respond.JSON(reg)
	if err != nil {
		return nil, err
	}
	resp.Status = http.StatusCreated
	resp.CacheControl = respond.NoStore
	resp.Header = http.Header{"Location": {reg.RegistrationClientURI}}
	return resp, nil
}

func (s *Service) loadClient(ctx context.Context, id string) (*client, error) {
	if id == "" || len(id) > 128 {
		return nil, nil
	}
	b, err := s.rdb.Get(ctx, keyClient(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agentauth: reading a client: %w", err)
	}
	var c client
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("agentauth: decoding a client: %w", err)
	}
	return &c, nil
}

// managed authorises a request to the client configuration endpoint with
// the registration access token. RFC 7592 §3: a wrong token and an unknown
// client both answer 401, so client ids cannot be probed. A request with no
// Authorization, or with a scheme other than Bearer (Basic, DPoP), presented
// no bearer token: its challenge carries no error code (RFC 6750 §3.1), and
// its hint names the registration access token, the only credential this
// endpoint takes (a claimed access token is refused here).
func (s *Service) managed(r *http.Request) (*client, error) {
	raw, present := token.FromHeader(r.Header)
	if token.Malformed(r.Header) {
		return nil, token.MalformedToken(s.siteRoot)
	}
	if !present || raw == "" {
		e := token.Unauthorized(s.siteRoot, r.Method, false)
		e.Message = "This client's registration access token is required for " + r.Method + " requests."
		e.Hint = "Send Authorization: Bearer <registration_access_token>, the token returned when the client was registered; an access token from a claim is not accepted here."
		return nil, e
	}
	c, err := s.loadClient(r.Context(), r.PathValue("client_id"))
	if err != nil {
		return nil, err
	}
	if c == nil || raw == "" || subtle.ConstantTimeCompare([]byte(token.Hash(raw)), []byte(c.RegistrationTokenHash)) != 1 {
		e := token.Unauthorized(s.siteRoot, r.Method, true)
		e.Message = "The registration access token is invalid for this client, or the client does not exist."
		e.Hint = "Use the registration_access_token returned when the client was registered."
		return nil, e
	}
	return c, nil
}

// Authorize checks r carries the registration access token of the client
// its path names (RFC 7592 §3): nil, or the 401 a client management
// request without it gets.
func (s *Service) Authorize(r *http.Request) error {
	_, err := s.managed(r)
	return err
}

// ReadClient answers GET /agent-auth/register/{client_id} (RFC 7592 §2.1).
func (s *Service) ReadClient(r *http.Request) (*respond.Response, error) {
	c, err := s.managed(r)
	if err != nil {
		return nil, err
	}
	resp, err := respond.JSON(s.registration(c))
	if err != nil {
		return nil, err
	}
	resp.CacheControl = respond.NoStore
	return resp, nil
}

// DeleteClient answers DELETE /agent-auth/register/{client_id} (RFC 7592
// §2.3, 204): the client, its access tokens and its subscriptions go.
func (s *Service) DeleteClient(r *http.Request) (*respond.Response, error) {
	c, err := s.managed(r)
	if err != nil {
		return nil, err
	}
	if _, err := clients.Delete(r.Context(), s.rdb, c.ClientID); err != nil {
		return nil, err
	}
	return &respond.Response{Status: http.StatusNoContent, CacheControl: respond.NoStore}, nil
}

// formOrJSON decodes a claim or revoke body given as JSON or as
// application/x-www-form-urlencoded (RFC 6749 §4.5, RFC 7009 §2.1) into a
// map of string fields. A field of another JSON type, or a form parameter
// given twice, is a 400.
func formOrJSON(r *http.Request, fields []string) (map[string]string, error) {
	mt := respond.MediaType(r)
	out := map[string]string{}
	switch {
	case mt == "application/x-www-form-urlencoded":
		body, err := respond.ReadBody(r, respond.MaxBody)
		if err != nil {
			return nil, err
		}
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, oauthError("invalid_request", "the form body is not valid application/x-www-form-urlencoded.")
		}
		for k, v := range q {
			if len(v) > 1 {
				return nil, oauthError("invalid_request", "parameter "+k+" is given more than once.")
			}
			out[k] = v[0]
		}
		return out, nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var raw map[string]json.RawMessage
		if _, err := respond.DecodeJSON(r, respond.MaxBody, &raw); err != nil {
			return nil, err
		}
		if raw == nil {
			return nil, apierror.BadRequest("The request body must be a JSON object.", "Check the request schema in /openapi.json.")
		}
		for _, f := range fields {
			v, ok := raw[f]
			if !ok || string(v) == "null" {
				continue
			}
			var sv string
			if err := json.Unmarshal(v, &sv); err != nil {
				return nil, apierror.BadRequest("Field "+f+" must be of type string.", "Check the request schema in /openapi.json.")
			}
			out[f] = sv
		}
		return out, nil
	default:
		return nil, apierror.New(http.StatusUnsupportedMediaType, "The request body must be JSON or application/x-www-form-urlencoded.", "Send Content-Type: application/json.")
	}
}

// Claim answers POST /agent-auth/claim (200 AccessToken).
func (s *Service) Claim(r *http.Request) (*respond.Response, error) {
	f, err := formOrJSON(r, []string{"grant_type", "client_id", "identity_assertion", "assertion"})
	if err != nil {
		return nil, err
	}
	grant := f["grant_type"]
	if grant == "" {
		grant = GrantIdentityAssertion
	}
	var assertion string
	switch grant {
	case GrantIdentityAssertion:
		assertion = f["identity_assertion"]
	case GrantJWTBearer:
		assertion = f["assertion"]
		if assertion == "" {
			return nil, oauthError("invalid_request", "grant_type "+GrantJWTBearer+" needs an assertion.")
		}
	default:
		return nil, oauthError("unsupported_grant_type", "grant_type must be "+GrantIdentityAssertion+" or "+GrantJWTBearer+".")
	}
	if f["client_id"] == "" {
		return nil, oauthError("invalid_request", "client_id is required.")
	}
	ctx := r.Context()
	c, err := s.loadClient(ctx, f["client_id"])
	if err != nil {
		return nil, err
	}
	// An unknown client_id is answered exactly as a client registered with
	// identity_type identity_assertion: a missing assertion is the same
	// invalid_grant, and a presented one is checked in full before the
	// same refusal. So claim tells no more than the RFC 7592 routes about
	// which client ids exist.
	switch {
	case assertion != "":
		// An assertion that is presented is always checked, also for an
		// anonymous client.
		if err := s.verifyAssertion(ctx, assertion, f["client_id"]); err != nil {
			return nil, err
		}
		if c == nil {
			return nil, errNeedsAssertion()
		}
	case c == nil || c.IdentityType == IdentityAssertion:
		return nil, errNeedsAssertion()
	}
	now := s.now()
	raw, _, err := token.Issue(ctx, s.rdb, c.ClientID, token.Lifetime, now)
	if err != nil {
		return nil, err
	}
	// Remember the token under its client so deleting the client revokes
	// it, and keep the client alive while it is used. A client deleted
	// since it was loaded gets no token (the new one is revoked).
	if err := clients.RecordToken(ctx, s.rdb, c.ClientID, token.Hash(raw), token.Lifetime, ClientTTL); err != nil {
		if errors.Is(err, clients.ErrGone) {
			return nil, errNeedsAssertion()
		}
		return nil, err
	}
	resp, err := respond.JSON(map[string]any{
		"access_token": raw,
		"token_type":   "Bearer",
		"expires_in":   int(token.Lifetime / time.Second),
		"scope":        token.Scope,
	})
	if err != nil {
		return nil, err
	}
	resp.CacheControl = respond.NoStore
	resp.Header = http.Header{"Pragma": {"no-cache"}}
	return resp, nil
}

// errNeedsAssertion refuses a claim without a valid ID-JAG for its client,
// whether the client needs one or does not exist.
func errNeedsAssertion() *apierror.Error {
	return oauthError("invalid_grant", "no token can be issued for this client_id without a valid ID-JAG for it.")
}

// registrationTokenPrefix starts every registration access token, which
// reads or deletes a client (RFC 7592) and is not an access token. The
// token is the prefix, its client's id, registrationTokenSep and 256 random
// bits (base64url, which has no '.').
const (
	registrationTokenPrefix = "iwr_"
	registrationTokenSep    = "."
)

// isRegistrationToken reports whether raw is the registration access token
// of a client that exists. Tokens issued before they named their client
// cannot be told from made-up ones and count as unknown.
func (s *Service) isRegistrationToken(ctx context.Context, raw string) (bool, error) {
	rest, ok := strings.CutPrefix(raw, registrationTokenPrefix)
	if !ok {
		return false, nil
	}
	id, _, ok := strings.Cut(rest, registrationTokenSep)
	if !ok {
		return false, nil
	}
	c, err := s.loadClient(ctx, id)
	if err != nil || c == nil {
		return false, err
	}
	return subtle.ConstantTimeCompare([]byte(token.Hash(raw)), []byte(c.RegistrationTokenHash)) == 1, nil
}

// Revoke answers POST /agent-auth/revoke: 200 with an empty body whether or
// not the token existed (RFC 7009 §2.2); a request without a token, or with
// a token_type_hint it does not know, is 400 invalid_request. A
// registration access token of a client that exists is not revoked here:
// 400 unsupported_token_type (RFC 7009 §2.2.1) says so, where a 200 would
// let its holder believe it dead while it still deletes the client. Any
// other string, iwr_ prefix or not, is a token that does not exist: 200
// (docs/decisions.md, agent auth).
func (s *Service) Revoke(r *http.Request) (*respond.Response, error) {
	f, err := formOrJSON(r, []string{"token", "token_type_hint"})
	if err != nil {
		return nil, err
	}
	raw := f["token"]
	if raw == "" {
		return nil, oauthError("invalid_request", "token is required.")
	}
	switch f["token_type_hint"] {
	case "", "access_token", "refresh_token":
	default:
		return nil, oauthError("invalid_request", `token_type_hint must be "access_token" or "refresh_token".`)
	}
	registration, err := s.isRegistrationToken(r.Context(), raw)
	if err != nil {
		return nil, err
	}
	if registration {
		return nil, oauthError("unsupported_token_type", "a registration access token is not revoked here; it ends with its client: DELETE the registration_client_uri (RFC 7592 §2.3).")
	}
	if len(raw) <= token.MaxLength {
		if _, err := clients.RevokeHash(r.Context(), s.rdb, token.Hash(raw)); err != nil {
			return nil, err
		}
	}
	return &respond.Response{Status: http.StatusOK, CacheControl: respond.NoStore}, nil
}
