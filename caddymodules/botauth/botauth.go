// Package botauth provides the bot_auth handler: it verifies the Web Bot
// Auth signatures of agents (draft-ietf-webbotauth-httpsig-protocol, HTTP
// Message Signatures of RFC 9421 with Ed25519 keys published in the agent's
// signatures directory) at the edge, so that verified agents can be given
// their own rate-limit budget (docs/decisions.md, "Verified agents").
//
// It never refuses a request. A request whose signature verifies carries
// the agent's identity on to the rate limiter (the Caddy variable VarAgent)
// and to the origin (a request header set here, any client copy removed);
// every other request — unsigned, malformed, expired, forged, or signed
// with a key not cached yet — goes on as anonymous. Keys are fetched in the
// background and cached, so no request waits for the network, and a
// signature verified twice is remembered for the rest of its validity, so
// an agent repeating one signature pays two Ed25519 verifications.
package botauth

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/dunglas/httpsfv"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/internal/metrics"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// VarAgent is the Caddy variable that holds a verified agent's identity
// (its keys URL and keyid) for the handlers after this one.
const VarAgent = "bot_auth.agent"

// VarOutcome is the Caddy variable that holds what the check found: one of
// verified, unsigned, malformed, expired, unknown_key,
// directory_unavailable, forged (the metric's outcome label).
const VarOutcome = "bot_auth.outcome"

// outcome is what the edge made of a request's signature.
type outcome uint8

const (
	outcomeUnsigned outcome = iota
	outcomeMalformed
	outcomeExpired
	outcomeUnknownKey
	outcomeDirectoryUnavailable
	outcomeForged
	outcomeVerified
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"unsigned", "malformed", "expired", "unknown_key", "directory_unavailable", "forged", "verified"}

func (o outcome) String() string { return outcomeNames[o] }

var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "bot_auth",
	Name:      "requests_total",
	Help:      "Requests seen by the Web Bot Auth check, by outcome (verified; unsigned, malformed, expired, unknown_key, directory_unavailable and forged ones are served as anonymous).",
}, []string{"outcome"})

// outcomeCounters are resolved once: the hot path only increments.
var outcomeCounters = func() (c [numOutcomes]prometheus.Counter) {
	for i := range c {
		c[i] = requests.WithLabelValues(outcomeNames[i])
	}
	return c
}()

var pool = caddy.NewUsagePool()

// Handler checks Web Bot Auth signatures.
type Handler struct {
	// AllowCIDRs lists non-public networks that key directories may
	// nevertheless be fetched from, plain http included
	// (IW_BOTAUTH_ALLOW_CIDRS; make run allows loopback). Outside them,
	// directories are fetched over https from public addresses only,
	// checked when the connection is dialled. On a non-public address,
	// inside them too, the ports of the service's own listeners are never
	// fetched from: those the IW_* environment names, the same the webhook
	// deliveries stay off (config.OwnPorts; docs/decisions.md, "Webhooks
	// never reach the service's own listeners"). A Signature-Agent names
	// any URL, and an allowed loopback let an anonymous request have the
	// edge GET Caddy's admin API or the origin's pprof.
	AllowCIDRs []string `json:"allow_cidrs,omitempty"`
	// ClockSkew is how far created may lie in the future and expires in
	// the past. Default 60s.
	ClockSkew caddy.Duration `json:"clock_skew,omitempty"`
	// FetchTimeout bounds one directory fetch. Default 3s.
	FetchTimeout caddy.Duration `json:"fetch_timeout,omitempty"`
	// MaxDirectoryBytes bounds a directory's body. Default 65536.
	MaxDirectoryBytes int64 `json:"max_directory_bytes,omitempty"`
	// MaxFetches bounds the directory fetches in flight. Default 16.
	MaxFetches int `json:"max_fetches,omitempty"`
	// MaxKeys bounds the cached keys, and separately the remembered
	// directories. Default 100000.
	MaxKeys int64 `json:"max_keys,omitempty"`
	// MaxVerified bounds the remembered verified signatures. Default
	// 100000.
	MaxVerified int64 `json:"max_verified,omitempty"`
	// MinKeyTTL and MaxKeyTTL clamp how long keys are cached, taken from
	// the directory's Cache-Control max-age. Defaults 1m and 24h.
	MinKeyTTL caddy.Duration `json:"min_key_ttl,omitempty"`
	MaxKeyTTL caddy.Duration `json:"max_key_ttl,omitempty"`
	// DefaultKeyTTL applies when the directory gives no max-age. Default 1h.
	DefaultKeyTTL caddy.Duration `json:"default_key_ttl,omitempty"`
	// NegativeTTL is how long an unreachable or invalid directory is
	// remembered before it is fetched again. Default 5m.
	NegativeTTL caddy.Duration `json:"negative_ttl,omitempty"`
	// Header is the request header that tells the origin about a verified
	// agent, as a Structured Fields Dictionary (directory="…",
	// keyid="…"). Default X-Invoicewire-Agent. Any copy the client sent is
	// removed, and so is the field's name from the client's Connection
	// options (httpheader.SetForOrigin).
	Header string `json:"header,omitempty"`

	poolKey string
	state   *state
	logger  *zap.Logger
	now     func() time.Time
	// logOutcome is whether the server writes access logs, where the
	// outcome is a field: adding one to a request that is not logged
	// would cost an allocation for nothing.
	logOutcome bool
}

// state is what the handlers of one configuration share, across reloads.
type state struct {
	keys     *keyring
	verified *ristretto.Cache[uint64, *verification]
	seed     maphash.Seed
	// sightings holds, direct-mapped, the hashes of signatures verified
	// once: a signature is remembered only when it verifies a second
	// time (seenBefore).
	sightings *[sightingSlots]atomic.Uint64
}

// sightingSlots is the size of the table of signatures verified once
// (512 KiB).
const sightingSlots = 1 << 16

// seenBefore reports whether the signature of hash memo verified before,
// and records it. Agents sign each request anew, so most signatures are
// seen once: remembering every one would cost each fresh request an
// insertion into the cache of verifications, and push out the signatures
// that do repeat. A slot taken by another signature forgets the first, so
// a repeated signature may be verified a few more times before it is
// remembered, never wrongly accepted: the memo still compares fields and
// values whole.
func (s *state) seenBefore(memo uint64) bool {
	slot := &s.sightings[memo%sightingSlots]
	if slot.Load() == memo {
		return true
	}
	slot.Store(memo)
	return false
}

func (s *state) Destruct() error {
	s.keys.close()
	s.verified.Close()
	return nil
}

// verification is a signature that verified twice (seenBefore),
// remembered until it expires under the hash of its three fields. A request that carries the same
// fields to the byte and the same values of the covered components has the
// same signature base and signature, so it verifies without parsing or
// Ed25519; the fields and values are compared in full, so a hash
// collision cannot stand in for them.
type verification struct {
	fields  string
	covered []coveredValue
	agent   agent
}

// coveredValue is a covered component and its value when it verified.
type coveredValue struct {
	component signing.Component
	value     string
}

// inFields reports whether c's value comes from the signature fields
// themselves, which the memo compares whole.
func inFields(c signing.Component) bool { return c.Name == "signature-agent" }

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.bot_auth",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision applies defaults and sets up the shared key cache.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.now == nil {
		h.now = time.Now
	}
	setDefault(&h.ClockSkew, caddy.Duration(time.Minute))
	setDefault(&h.FetchTimeout, caddy.Duration(3*time.Second))
	setDefault(&h.MaxDirectoryBytes, 64<<10)
	setDefault(&h.MaxFetches, 16)
	setDefault(&h.MaxKeys, 100_000)
	setDefault(&h.MaxVerified, 100_000)
	setDefault(&h.MinKeyTTL, caddy.Duration(time.Minute))
	setDefault(&h.MaxKeyTTL, caddy.Duration(24*time.Hour))
	setDefault(&h.DefaultKeyTTL, caddy.Duration(time.Hour))
	setDefault(&h.NegativeTTL, caddy.Duration(5*time.Minute))
	setDefault(&h.Header, "X-Invoicewire-Agent")
	h.logOutcome = true
	if srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
		h.logOutcome = srv.Logs != nil
	}
	if err := metrics.Register(ctx.GetMetricsRegistry(), requests); err != nil {
		return err
	}
	allow, err := parseCIDRs(h.AllowCIDRs)
	if err != nil {
		return err
	}
	// Only the variables naming the service's listeners are read: the
	// rest of the configuration is the origin's and the worker's, and a
	// malformed value there must not stop the edge. A malformed port is
	// still refused, naming its variable, rather than left out of the
	// fence.
	ownPorts, err := config.OwnPortsFromEnv()
	if err != nil {
		return fmt.Errorf("bot_auth: reading the service's own ports from the environment: %w", err)
	}
	policy := netguard.Policy{Allow: allow, OwnPorts: ownPorts}
	cfg, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("bot_auth: keying the shared state: %w", err)
	}
	// The own ports come from the environment, not the configuration: a
	// reload under other ones must not keep the fetcher built for the old.
	h.poolKey = fmt.Sprint(string(cfg), policy.OwnPorts)
	v, _, err := pool.LoadOrNew(h.poolKey, func() (caddy.Destructor, error) {
		f := netguard.NewFetcher(policy, time.Duration(h.FetchTimeout), h.MaxDirectoryBytes)
		ttl := ttlPolicy{min: time.Duration(h.MinKeyTTL), max: time.Duration(h.MaxKeyTTL),
			fallback: time.Duration(h.DefaultKeyTTL), negative: time.Duration(h.NegativeTTL)}
		keys, err := newKeyring(f, h.MaxKeys, h.MaxFetches, ttl, time.Now, h.logger)
		if err != nil {
			return nil, err
		}
		verified, err := ristretto.NewCache(&ristretto.Config[uint64, *verification]{
			NumCounters: 10 * h.MaxVerified, MaxCost: h.MaxVerified, BufferItems: 64,
		})
		if err != nil {
			keys.close()
			return nil, fmt.Errorf("bot_auth: creating the verified-signature cache: %w", err)
		}
		return &state{keys: keys, verified: verified, seed: maphash.MakeSeed(), sightings: new([sightingSlots]atomic.Uint64)}, nil
	})
	if err != nil {
		h.poolKey = ""
		return err
	}
	h.state = v.(*state)
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// parseCIDRs reads CIDRs, each argument possibly holding several separated
// by commas (as IW_WEBHOOK_ALLOW_CIDRS does).
func parseCIDRs(args []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, a := range args {
		for _, s := range strings.Split(a, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bot_auth: allow_cidrs: %w", err)
			}
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// Validate checks the configuration.
func (h *Handler) Validate() error {
	switch {
	case h.ClockSkew < 0 || time.Duration(h.ClockSkew) > time.Hour:
		return errors.New("bot_auth: clock_skew must be between 0 and 1h")
	case h.MinKeyTTL > h.MaxKeyTTL:
		return errors.New("bot_auth: min_key_ttl must not exceed max_key_ttl")
	case h.MaxFetches < 1 || h.MaxKeys < 1 || h.MaxVerified < 1 || h.MaxDirectoryBytes < 1:
		return errors.New("bot_auth: max_fetches, max_keys, max_verified and max_directory_bytes must be positive")
	case http.CanonicalHeaderKey(h.Header) == "" || strings.ContainsAny(h.Header, " :\t"):
		return fmt.Errorf("bot_auth: %q is not a header name", h.Header)
	}
	return nil
}

// Cleanup releases the shared state.
func (h *Handler) Cleanup() error {
	if h.poolKey != "" {
		_, _ = pool.Delete(h.poolKey)
	}
	return nil
}

// ServeHTTP checks r's signature, records the outcome, and passes r on.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	r.Header.Del(h.Header)
	o, id := h.check(r)
	outcomeCounters[o].Inc()
	caddyhttp.SetVar(r.Context(), VarOutcome, outcomeNames[o])
	if o != outcomeUnsigned && h.logOutcome {
		if extra, ok := r.Context().Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields); ok {
			extra.Add(zap.String("bot_auth", o.String()))
		}
	}
	if o == outcomeVerified {
		caddyhttp.SetVar(r.Context(), VarAgent, id.name)
		httpheader.SetForOrigin(r.Header, h.Header, id.field)
	}
	return next.ServeHTTP(w, r)
}

// agent is what the handler passes on for a verified agent, made once when
// its key is fetched so that a verification costs no more
// (docs/edge-gateway.md, "Verified agents (Web Bot Auth)"): name is
// VarAgent's value (the directory's URL, "#" and the key's thumbprint),
// field the value of the header the handler sets.
type agent struct{ name, field string }

// verifiedAgent returns the agent whose key keyID is in the directory at
// keysURL.
func verifiedAgent(keysURL, keyID string) agent {
	d := httpsfv.NewDictionary()
	d.Add("directory", httpsfv.NewItem(keysURL))
	d.Add("keyid", httpsfv.NewItem(keyID))
	// Both are strings we parsed from Structured Fields or built from a
	// parsed URL; one the serializer refuses would be a bug, and the
	// field is then empty.
	field, _ := httpsfv.Marshal(d)
	return agent{name: keysURL + "#" + keyID, field: field}
}

// check classifies r's signature, verifying it when its key is cached.
func (h *Handler) check(r *http.Request) (outcome, agent) {
	sig, input := r.Header.Values(signing.HeaderSignature), r.Header.Values(signing.HeaderSignatureInput)
	if len(sig) == 0 && len(input) == 0 {
		return outcomeUnsigned, agent{}
	}
	fields := signatureFields(r.Header)
	memo := maphash.String(h.state.seed, fields)
	if v, ok := h.state.verified.Get(memo); ok && v.matches(fields, r) {
		return outcomeVerified, v.agent
	}

	now := h.now()
	c, err := pick(r.Header, now, time.Duration(h.ClockSkew))
	switch {
	case errors.Is(err, errExpired):
		return outcomeExpired, agent{}
	case err != nil:
		return outcomeMalformed, agent{}
	}
	key, st := h.state.keys.lookup(c.keysURL, c.sig.Params.KeyID)
	switch st {
	case keyPending, keyAbsent:
		return outcomeUnknownKey, agent{}
	case keyUnreachable:
		return outcomeDirectoryUnavailable, agent{}
	}
	m := signing.Message{Request: r}
	base, err := c.sig.Base(m)
	if err != nil {
		return outcomeMalformed, agent{}
	}
	if !ed25519.Verify(key.pub, base, c.sig.Signature) {
		return outcomeForged, agent{}
	}
	if ttl := c.sig.Params.Expires.Sub(now); ttl > 0 && h.state.seenBefore(memo) {
		v := &verification{fields: fields, agent: key.agent}
		for _, comp := range c.sig.Components {
			if !inFields(comp) {
				val, _ := m.Value(comp) // resolved once already, for the base
				v.covered = append(v.covered, coveredValue{comp, val})
			}
		}
		h.state.verified.SetWithTTL(memo, v, 1, ttl)
	}
	return outcomeVerified, key.agent
}

// signatureFields joins the three signature fields of a request: what the
// memo of verifications is keyed by and compares.
func signatureFields(h http.Header) string {
	return strings.Join(h.Values(signing.HeaderSignature), "\n") + "\x00" +
		strings.Join(h.Values(signing.HeaderSignatureInput), "\n") + "\x00" +
		strings.Join(h.Values(signing.HeaderSignatureAgent), "\n")
}

// matches reports whether r repeats v: the same signature fields to the
// byte and the same value of every covered component.
func (v *verification) matches(fields string, r *http.Request) bool {
	if v.fields != fields {
		return false
	}
	m := signing.Message{Request: r}
	for _, cv := range v.covered {
		if val, err := m.Value(cv.component); err != nil || val != cv.value {
			return false
		}
	}
	return true
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
