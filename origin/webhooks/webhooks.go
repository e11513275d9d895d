// Package webhooks is the origin's side of webhook subscriptions (the contract
// endpoint 11, docs/decisions.md (bearer tokens), docs/decisions.md (subscriptions)): subscribing, and the owner routes that
// list, read and delete a client's subscriptions. Deliveries are the
// worker's job; this package only writes subscriptions and, for test=true,
// queues synthetic events for the new subscription.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin/idempotency"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Config configures the service.
type Config struct {
	// SiteRoot is {site_root}.
	SiteRoot string
	// Policy decides which receiver addresses are allowed
	// (IW_WEBHOOK_ALLOW_CIDRS).
	Policy netguard.Policy
	// Resolver resolves receiver host names; net.DefaultResolver when nil.
	Resolver netguard.Resolver
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service answers the subscription endpoints.
type Service struct {
	cfg  Config
	subs *webhook.Store
}

// New builds the service on the subscription store.
func New(cfg Config, subs *webhook.Store) *Service {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg, subs: subs}
}

type ctxKey struct{}

// ClientOf returns the client a request was authenticated as by
// Authenticated, or "".
func ClientOf(r *http.Request) string {
	c, _ := r.Context().Value(ctxKey{}).(string)
	return c
}

// Authenticated wraps h so it runs only for a valid bearer token carrying
// scope (docs/decisions.md, bearer tokens): none, or a scheme other than Bearer (Basic, DPoP),
// presented no bearer token → 401 with a challenge without an error code (RFC 6750 §3.1), as the
// edge's bearer_auth answers; a Bearer credential that is no token ("Bearer", "Bearer a b", or two
// Authorization fields), unknown, expired or revoked → 401 with error="invalid_token"; a token
// without the scope → 403. The origin is authoritative: it looks the token up in Redis on every
// request.
func (s *Service) Authenticated(scope string, h respond.Handler) respond.Handler {
	return func(r *http.Request) (*respond.Response, error) {
		raw, present := token.FromHeader(r.Header)
		if token.Malformed(r.Header) {
			return nil, token.MalformedToken(s.cfg.SiteRoot)
		}
		if !present || raw == "" {
			return nil, token.Unauthorized(s.cfg.SiteRoot, r.Method, false)
		}
		rec, err := token.Lookup(r.Context(), s.subs.Client(), raw, s.cfg.Now())
		if errors.Is(err, token.ErrInvalid) {
			return nil, token.Unauthorized(s.cfg.SiteRoot, r.Method, true)
		}
		if err != nil {
			return nil, err
		}
		if !hasScope(rec.Scope, scope) {
			e := apierror.New(http.StatusForbidden, "The token lacks the scope "+scope+".", "Claim a token with the scope "+token.Scope+".")
			e.Header = http.Header{}
			e.Header.Set("WWW-Authenticate", token.Challenge(s.cfg.SiteRoot, false)+`, error="insufficient_scope", scope="`+scope+`"`)
			return nil, e
		}
		return h(r.WithContext(context.WithValue(r.Context(), ctxKey{}, rec.ClientID)))
	}
}

func hasScope(have, want string) bool {
	for _, s := range strings.Fields(have) {
		if s == want {
			return true
		}
	}
	return false
}

// createRequest is the subscription body; pointers tell absent from empty.
type createRequest struct {
	URL    *string  `json:"url"`
	Events []string `json:"events"`
	Secret *string  `json:"secret"`
	Test   *bool    `json:"test"`
}

// Secret bounds (docs/decisions.md, subscriptions).
const (
	minSecret = 16
	maxSecret = 1024
)

// lookupRetryAfter is the Retry-After, in seconds, of a subscription
// refused because the receiver's host could not be resolved just now.
const lookupRetryAfter = "10"

// created is the 201 answer (openapi SubscriptionCreated).
type created struct {
	webhook.Public
	Secret string `json:"secret,omitempty"`
}

// Create answers POST /webhooks (201 SubscriptionCreated).
func (s *Service) Create(r *http.Request) (*respond.Response, error) {
	test, inQuery, err := testFlag(r)
	if err != nil {
		return nil, err
	}
	var req createRequest
	if _, err := respond.DecodeJSON(r, respond.MaxBody, &req); err != nil {
		return nil, err
	}
	if req.Test != nil {
		if inQuery && *req.Test != test {
			// Either reading would ignore what the client said once.
			return nil, apierror.BadRequest("test is true in one of the query and the body and false in the other.", "Give test once, as the query parameter or the body field.")
		}
		test = *req.Test
	}
	kinds := "Event kinds: " + strings.Join(events.Kinds, ", ") + "."
	if req.URL == nil {
		return nil, apierror.BadRequest("url is required.", "Give the https URL that receives deliveries.")
	}
	ctx := r.Context()
	u, err := s.cfg.Policy.CheckURL(ctx, s.cfg.Resolver, *req.URL)
	if err != nil {
		var ue *netguard.URLError
		if errors.As(err, &ue) {
			return nil, apierror.BadRequest(ue.Reason, "Use an https URL without user:password@, at most 2048 characters, whose host resolves to public addresses.")
		}
		var le *netguard.LookupError
		if errors.As(err, &le) {
			// The resolver failed (a timeout, SERVFAIL, none reachable),
			// not the client: 503 with Retry-After (RFC 9110 §15.6.4), and
			// nothing stored, so the same request may simply be sent again
			// (an Idempotency-Key is released on an error).
			e := apierror.New(http.StatusServiceUnavailable,
				fmt.Sprintf("The url's host %q could not be resolved just now.", le.Host),
				"This is a temporary failure on our side; send the same request again shortly.")
			e.Header = http.Header{"Retry-After": {lookupRetryAfter}}
			return nil, e
		}
		return nil, err
	}
	if len(req.Events) == 0 {
		return nil, apierror.BadRequest("events must list at least one event kind.", kinds)
	}
	seen := map[string]bool{}
	for _, k := range req.Events {
		if k == "" {
			// null decodes to "" in a []string: name the mistake, not an
			// unknown kind called "".
			return nil, apierror.BadRequest("events must list event kinds as strings, not null or \"\".", kinds)
		}
		if !events.IsKind(k) {
			return nil, apierror.BadRequest(fmt.Sprintf("Unknown event kind %q.", k), kinds)
		}
		if seen[k] {
			return nil, apierror.BadRequest(fmt.Sprintf("Event kind %q is listed twice.", k), "List each kind once.")
		}
		seen[k] = true
	}
	sub := &webhook.Subscription{ClientID: ClientOf(r), URL: u.String(), Events: req.Events, Status: webhook.StatusActive}
	generated := ""
	if req.Secret != nil {
		// Characters, as the messages and openapi's minLength and
		// maxLength (JSON Schema counts characters) say, not bytes: "€" is
		// one character of three bytes. The body's size bounds the bytes.
		n := utf8.RuneCountInString(*req.Secret)
		if n < minSecret {
			return nil, apierror.BadRequest(fmt.Sprintf("secret must be at least %d characters.", minSecret), "Leave secret out to have one generated.")
		}
		if n > maxSecret {
			return nil, apierror.BadRequest(fmt.Sprintf("secret must be at most %d characters.", maxSecret), "Leave secret out to have one generated.")
		}
		sub.Secret = *req.Secret
	} else {
		b := make([]byte, 32)
		rand.Read(b)
		generated = "whsec_" + base64.StdEncoding.EncodeToString(b)
		sub.Secret = generated
	}
	now := s.cfg.Now().UTC()
	sub.CreatedAt = now.Truncate(time.Millisecond)
	sub.ID = events.NewID("sub_", now)
	if seed := idempotency.Seed(ctx); seed != nil {
		// Under an Idempotency-Key the id follows from the key, the client
		// and the body: a retry after a failure past this point (the test
		// events not queued, the answer not recorded) finds the
		// subscription the first try stored and answers with it, instead
		// of storing a second one (docs/decisions.md, "Idempotency-Key").
		sub.ID = events.DerivedID("sub_", seed)
	}
	err = s.subs.Create(ctx, sub)
	if errors.Is(err, webhook.ErrExists) {
		sub, err = s.subs.Get(ctx, sub.ClientID, sub.ID)
		if err == nil && generated != "" {
			// The first try generated the secret but its answer was lost:
			// this answer is the owner's only sight of it.
			generated = sub.Secret
		}
	}
	if err != nil {
		if errors.Is(err, webhook.ErrLimit) {
			return nil, apierror.New(http.StatusConflict, fmt.Sprintf("This client already has %d subscriptions, the limit.", webhook.MaxPerClient), "Delete one at "+s.cfg.SiteRoot+"/api/v1/webhooks/subscriptions first.")
		}
		return nil, err
	}
	if test {
		samples, err := s.testEvents(sub.Events, now)
		if err != nil {
			return nil, err
		}
		if err := s.subs.EnqueueTest(ctx, sub.ID, samples, now); err != nil {
			return nil, err
		}
	}
	resp, err := respond.JSON(created{Public: sub.Public(), Secret: generated})
	if err != nil {
		return nil, err
	}
	resp.Status = http.StatusCreated
	resp.CacheControl = respond.NoStore
	resp.Header = http.Header{"Location": {s.cfg.SiteRoot + "/api/v1/webhooks/subscriptions/" + sub.ID}}
	return resp, nil
}

// testFlag reads the query parameter test (docs/decisions.md, subscriptions): true/false or 1/0,
// and whether it was given.
func testFlag(r *http.Request) (test, given bool, err error) {
	query, err := respond.Query(r)
	if err != nil {
		return false, false, err
	}
	vs, ok := query["test"]
	if !ok {
		return false, false, nil
	}
	if len(vs) == 1 {
		switch strings.ToLower(vs[0]) {
		case "true", "1":
			return true, true, nil
		case "false", "0":
			return false, true, nil
		}
	}
	return false, true, apierror.BadRequest("The query parameter test must be true or false.", "Send ?test=true to receive one synthetic event per subscribed kind.")
}

// testEvents builds the catalog's synthetic event of each kind
// (docs/decisions.md, subscriptions).
func (s *Service) testEvents(kinds []string, now time.Time) ([]events.Event, error) {
	out := make([]events.Event, 0, len(kinds))
	for _, k := range kinds {
		e, err := events.Sample(k, s.cfg.SiteRoot, now)
		if err != nil {
			return nil, fmt.Errorf("webhooks: building the test event: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// List answers GET /webhooks/subscriptions (SubscriptionList), newest first.
func (s *Service) List(r *http.Request) (*respond.Response, error) {
	subs, err := s.subs.List(r.Context(), ClientOf(r))
	if err != nil {
		return nil, err
	}
	items := make([]webhook.Public, len(subs))
	for i, sub := range subs {
		items[i] = sub.Public()
	}
	resp, err := respond.JSON(struct {
		Count int              `json:"count"`
		Items []webhook.Public `json:"items"`
	}{len(items), items})
	if err != nil {
		return nil, err
	}
	resp.CacheControl = respond.NoStore
	return resp, nil
}

func notFound(id string) error {
	return apierror.NotFound(fmt.Sprintf("You have no subscription %q.", id), "List your subscriptions at GET /api/v1/webhooks/subscriptions.")
}

// Get answers GET /webhooks/subscriptions/{id} (SubscriptionDetail with the
// last 20 delivery attempts). Another client's subscription is 404 (docs/decisions.md, subscriptions).
func (s *Service) Get(r *http.Request) (*respond.Response, error) {
	id := r.PathValue("id")
	sub, err := s.subs.Get(r.Context(), ClientOf(r), id)
	if errors.Is(err, webhook.ErrNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	attempts, err := s.subs.Attempts(r.Context(), id)
	if err != nil {
		return nil, err
	}
	resp, err := respond.JSON(struct {
		webhook.Public
		Deliveries []webhook.Attempt `json:"deliveries"`
	}{sub.Public(), attempts})
	if err != nil {
		return nil, err
	}
	resp.CacheControl = respond.NoStore
	return resp, nil
}

// Delete answers DELETE /webhooks/subscriptions/{id} (204).
func (s *Service) Delete(r *http.Request) (*respond.Response, error) {
	id := r.PathValue("id")
	err := s.subs.Delete(r.Context(), ClientOf(r), id)
	if errors.Is(err, webhook.ErrNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &respond.Response{Status: http.StatusNoContent, CacheControl: respond.NoStore}, nil
}
