// Package idempotency makes POSTs under /api/v1 safe to retry with an
// Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header): the
// first response to a key is stored and replayed to every retry from the
// same client with the same key and body.
//
// A record lives at iw:idem:{<digest>} where digest is the SHA-256 of the
// client, the route and the key. The client is the authenticated client, or
// the bearer token presented when it is a live one, or else the client's
// address: keys chosen by different clients never meet, so a key guessed or
// reused elsewhere never replays one client's answer (its credentials) to
// another. Arbitrary key characters never reach a Redis key name, and each
// record is one key, so it works unchanged on Redis Cluster.
//
// Stored answers are sealed (AES-256-GCM) under a key derived with HKDF
// from what only the retrying client holds: the Idempotency-Key, the body
// and the client; the record keeps a random salt, a keyed fingerprint and
// the ciphertext, never an answer in the clear. A registration access token
// or an access token in a stored answer is therefore not readable from
// Redis, its append-only file or a backup (docs/decisions.md, "Idempotency
// records").
package idempotency

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// Header is the request header carrying the key.
const Header = "Idempotency-Key"

// ReplayedHeader marks a replayed response.
const ReplayedHeader = "Idempotency-Replayed"

// MaxKeyLength is the longest key accepted (docs/decisions.md (Idempotency-Key), the contract).
const MaxKeyLength = 255

// DefaultTTL is how long a response is kept (docs/decisions.md, Idempotency-Key).
const DefaultTTL = 24 * time.Hour

// lease bounds how long a request may hold its key in flight; a handler
// that crashed releases it when the lease ends.
const lease = time.Minute

// Store keeps idempotency records in Redis.
type Store struct {
	rdb redis.UniversalClient
	log *slog.Logger
}

// NewStore returns a Store on rdb.
func NewStore(rdb redis.UniversalClient, log *slog.Logger) *Store {
	if log == nil {
		log = slog.Default()
	}
	return &Store{rdb: rdb, log: log}
}

// Options configure one wrapped route.
type Options struct {
	// Route names the operation, e.g. "POST /api/v1/webhooks".
	Route string
	// TTL is how long the first response is kept; DefaultTTL when zero.
	// Routes whose answer holds a secret pass that secret's lifetime.
	TTL time.Duration
	// Client returns the authenticated client of a request, or "".
	Client func(*http.Request) string
	// MaxBody bounds the body read for the fingerprint; respond.MaxBody
	// when zero. A larger body is left for the handler to refuse.
	MaxBody int64
}

// record is what Redis holds for a key.
type record struct {
	// State is "inflight" or "done".
	State       string `json:"state"`
	Fingerprint string `json:"fp"`
	// Salt and Sealed hold the answer of a done record, sealed (seal).
	Salt   []byte `json:"salt,omitempty"`
	Sealed []byte `json:"sealed,omitempty"`
}

// answer is the stored response, sealed inside a record.
type answer struct {
	Status      int         `json:"status"`
	ContentType string      `json:"content_type,omitempty"`
	Cache       string      `json:"cache_control,omitempty"`
	Header      http.Header `json:"header,omitempty"`
	Body        []byte      `json:"body,omitempty"`
}

// Wrap returns h with Idempotency-Key handling. Without the header the
// request goes straight to h.
func (s *Store) Wrap(opts Options, h respond.Handler) respond.Handler {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = respond.MaxBody
	}
	return func(r *http.Request) (*respond.Response, error) {
		values := r.Header.Values(Header)
		replayOnly := r.Header.Get(httpheader.ReplayOnly) != ""
		if replayOnly && len(values) == 0 {
			return nil, errReplayOnly()
		}
		if len(values) == 0 {
			return h(r)
		}
		key, err := parseKey(values)
		if err != nil {
			return nil, err
		}
		if r.ContentLength > opts.MaxBody {
			// Too large to fingerprint: the handler answers 413, and
			// nothing is stored for a request that changed nothing.
			return h(r)
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, opts.MaxBody+1))
		if err != nil {
			return nil, apierror.BadRequest("The request body could not be read.", "Send the whole body with a correct Content-Length.")
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if int64(len(body)) > opts.MaxBody {
			return h(r)
		}
		client, err := s.clientOf(r, opts.Client)
		if err != nil {
			return nil, err
		}
		rq := &pending{
			key:    redisKey(client, opts.Route, key),
			fp:     fingerprint(key, r, body),
			secret: secretOf(client, opts.Route, key, body),
		}
		if replayOnly {
			return s.replay(r, rq)
		}
		r = r.WithContext(context.WithValue(r.Context(), seedKey{}, seedOf(rq.secret)))
		return s.run(r, rq, opts.TTL, h)
	}
}

type seedKey struct{}

// Seed returns 32 bytes that are the same for every retry of a request
// under one Idempotency-Key (same client, route, key and body) and differ
// otherwise, or nil when the request carries no key. A handler whose effect
// can outlive a failure (a subscription stored before the answer failed)
// derives that effect's id from it, so a retry finds what the first try
// made instead of making it again: an error answer releases the key
// (first), and so does a record that could not be stored
// (docs/decisions.md, "Idempotency-Key").
func Seed(ctx context.Context) []byte {
	b, _ := ctx.Value(seedKey{}).([]byte)
	return b
}

// seedOf is one-way, so the seed, which may appear in an id, tells nothing
// of the key or the body it comes from.
func seedOf(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("invoicewire idempotent effect v1"))
	return m.Sum(nil)
}

// pending is what the wrapper derived from one request: its record's Redis
// key, its fingerprint and the secret its answer is sealed under.
type pending struct {
	key, fp string
	secret  []byte
}

func (s *Store) run(r *http.Request, rq *pending, ttl time.Duration, h respond.Handler) (*respond.Response, error) {
	rk, fp := rq.key, rq.fp
	ctx := r.Context()
	inflight, _ := json.Marshal(record{State: "inflight", Fingerprint: fp})
	for range 3 {
		ok, err := s.rdb.SetNX(ctx, rk, inflight, lease).Result()
		if err != nil {
			return nil, fmt.Errorf("idempotency: reserving a key: %w", err)
		}
		if ok {
			return s.first(r, rq, ttl, h)
		}
		b, err := s.rdb.Get(ctx, rk).Bytes()
		if errors.Is(err, redis.Nil) {
			// The record expired between the two commands; try again.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("idempotency: reading a key: %w", err)
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("idempotency: decoding a record: %w", err)
		}
		if rec.Fingerprint != fp {
			// The fingerprint is one HMAC over the media type, the query and
			// the body, so the message names all three: which one differed
			// cannot be told, and blaming the body misled a client that only
			// added ?test=true (docs/decisions.md, "Idempotency-Key").
			return nil, apierror.New(http.StatusUnprocessableEntity, "This Idempotency-Key was used with a different request: its body, query string or Content-Type differs.", "Use a new key for a new request.")
		}
		if rec.State != "done" {
			e := apierror.New(http.StatusConflict, "A request with this Idempotency-Key is still being processed.", "Retry in a moment.")
			e.Header = http.Header{"Retry-After": {"1"}}
			return nil, e
		}
		return replayed(rq, rec)
	}
	return nil, errors.New("idempotency: the key kept expiring while being read")
}

// replay answers a request the edge marked httpheader.ReplayOnly (its
// registration budget is spent) with the answer stored under its key, and
// with errReplayOnly when there is none to replay (no record, one still in
// flight, another body): it never runs the handler, so it creates nothing.
func (s *Store) replay(r *http.Request, rq *pending) (*respond.Response, error) {
	b, err := s.rdb.Get(r.Context(), rq.key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, errReplayOnly()
	}
	if err != nil {
		return nil, fmt.Errorf("idempotency: reading a key: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("idempotency: decoding a record: %w", err)
	}
	if rec.State != "done" || rec.Fingerprint != rq.fp {
		return nil, errReplayOnly()
	}
	return replayed(rq, rec)
}

// errReplayOnly refuses a request marked replay-only that has no stored
// answer: the 429 its spent budget gives (the edge answers its own in its
// place, with Retry-After).
func errReplayOnly() *apierror.Error {
	return apierror.New(http.StatusTooManyRequests, "Too many registrations from this address.",
		"Reuse the clients you registered (a claim renews a client); wait for Retry-After seconds to register another.")
}

// replayed is the stored answer of a done record, marked replayed.
func replayed(rq *pending, rec record) (*respond.Response, error) {
	ans, err := open(rq.secret, rec.Salt, rec.Sealed)
	if err != nil {
		return nil, fmt.Errorf("idempotency: opening a stored answer: %w", err)
	}
	resp := &respond.Response{Status: ans.Status, ContentType: ans.ContentType, Body: ans.Body, CacheControl: ans.Cache, Header: http.Header{}}
	for k, v := range ans.Header {
		resp.Header[k] = v
	}
	resp.Header.Set(ReplayedHeader, "true")
	return resp, nil
}

// first runs the handler for the request that reserved the key and stores
// its answer when it succeeded. An error releases the key, as Stripe does
// for requests that failed validation: nothing was applied, so the client
// may correct the request and send it again with the same key, and a
// refused request leaves nothing behind in Redis.
func (s *Store) first(r *http.Request, rq *pending, ttl time.Duration, h respond.Handler) (resp *respond.Response, err error) {
	rk := rq.key
	stored := false
	defer func() {
		if !stored {
			// A panic or a server fault: forget the key. The request
			// context may be done, so use a fresh one.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
			defer cancel()
			if derr := s.rdb.Del(ctx, rk).Err(); derr != nil {
				s.log.Warn("idempotency: releasing a key failed", "err", derr)
			}
		}
	}()
	resp, err = h(r)
	if err != nil || resp.Status >= 400 {
		return resp, err
	}
	salt, sealed, serr := seal(rq.secret, answer{Status: resp.Status, ContentType: resp.ContentType, Body: resp.Body, Header: resp.Header, Cache: resp.CacheControl})
	if serr != nil {
		s.log.Warn("idempotency: sealing a response failed", "err", serr)
		return resp, err
	}
	b, merr := json.Marshal(record{State: "done", Fingerprint: rq.fp, Salt: salt, Sealed: sealed})
	if merr != nil {
		return resp, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if serr := s.rdb.Set(ctx, rk, b, ttl).Err(); serr != nil {
		// The answer stands; only its replay is lost. Releasing the key
		// (in the deferred function) lets a retry run again.
		s.log.Warn("idempotency: storing a response failed", "err", serr)
		return resp, err
	}
	stored = true
	return resp, err
}

// parseKey reads the header: one value, either a Structured Field String
// as the draft specifies ("..."), or the bare token most clients send.
func parseKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", apierror.BadRequest("Send exactly one Idempotency-Key header.", "Use one key of 1 to 255 printable ASCII characters per request.")
	}
	k := strings.TrimSpace(values[0])
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = strings.ReplaceAll(strings.ReplaceAll(k[1:len(k)-1], `\"`, `"`), `\\`, `\`)
	}
	if k == "" {
		return "", apierror.BadRequest("The Idempotency-Key header is empty.", "Use a key of 1 to 255 printable ASCII characters, such as a UUID.")
	}
	if len(k) > MaxKeyLength {
		return "", apierror.BadRequest(fmt.Sprintf("The Idempotency-Key is %d characters long; the limit is %d.", len(k), MaxKeyLength), "Use a shorter key, such as a UUID.")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", apierror.BadRequest("The Idempotency-Key has a character outside printable ASCII.", "Use a key of 1 to 255 printable ASCII characters, such as a UUID.")
		}
	}
	return k, nil
}

func redisKey(client, route, key string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + route + "\x00" + key))
	return "iw:idem:{" + hex.EncodeToString(sum[:16]) + "}"
}

// fingerprint covers what changes a request's meaning: its body, its media
// type and its query (test=true may travel there). It is an HMAC keyed by
// the Idempotency-Key, so the stored fingerprint cannot confirm a guessed
// body without the key.
func fingerprint(key string, r *http.Request, body []byte) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(respond.MediaType(r) + "\n" + r.URL.RawQuery + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
