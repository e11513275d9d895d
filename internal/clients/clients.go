// Package clients is the Redis schema of registered agent clients and the
// operations that end a client's access: revoking its access tokens and
// deleting it with its tokens and webhook subscriptions. The origin's agent
// auth (RFC 7592 DELETE, RFC 7009 revoke) and iwctl (docs/operations.md,
// "Revoking tokens, deleting clients, disabling subscriptions") share them,
// so both end access the same way (docs/decisions.md, "Operator commands").
//
//	iw:client:{<client_id>}           JSON client record, TTL from the last claim
//	iw:client:{<client_id>}:tokens    set of the client's access-token hashes
//	iw:client:{<client_id>}:deleting  set while Delete runs: no token is issued
//	iw:token:<sha256>                 access token (internal/token)
//
// The client's keys share the {<client_id>} hash tag, so RecordToken checks
// the record and the marker and writes the set atomically on Redis Cluster.
// A token's key has its own slot; every operation that touches it and the
// client's keys is an ordered sequence of idempotent steps, safe to run
// again after a crash.
//
// Only token hashes are ever read, written, printed or logged here.
package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/redisscan"
	"github.com/invoicewire/invoicewire/internal/token"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// Key is the Redis key of a client's record.
func Key(id string) string { return "iw:client:{" + id + "}" }

// TokensKey is the Redis key of the set of a client's access-token hashes.
func TokensKey(id string) string { return "iw:client:{" + id + "}:tokens" }

// DeletingKey marks a client whose deletion has begun.
func DeletingKey(id string) string { return "iw:client:{" + id + "}:deleting" }

// recordScript remembers a new token under its client and keeps the client
// alive, only while the client record exists and is not being deleted.
// KEYS: client, tokens, deleting. ARGV: hash, token lifetime s, client
// lifetime s. It returns 0 when the client is gone or going (its deletion
// began while the claim ran).
var recordScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`)

// ErrGone means the client was deleted, or its deletion began, while a
// token was being issued for it.
var ErrGone = errors.New("clients: the client no longer exists")

// RecordToken remembers an issued token (by its hash) under its client, so
// that revoking the client's tokens or deleting the client finds it, and
// renews the client's lifetime. When the client was deleted meanwhile, it
// revokes the token and returns ErrGone: with Delete removing the client
// record before it reads the token set, no token issued to a deleted client
// survives the deletion, however the two interleave: Delete marks the
// client before it reads the token set.
func RecordToken(ctx context.Context, rdb redis.UniversalClient, clientID, hash string, tokenTTL, clientTTL time.Duration) error {
	n, err := recordScript.Run(ctx, rdb, []string{Key(clientID), TokensKey(clientID), DeletingKey(clientID)},
		hash, int64(tokenTTL/time.Second), int64(clientTTL/time.Second)).Int()
	if err != nil {
		return fmt.Errorf("clients: recording a token: %w", err)
	}
	if n == 0 {
		if _, err := RevokeHash(ctx, rdb, hash); err != nil {
			return err
		}
		return ErrGone
	}
	return nil
}

// RevokeHash revokes one access token by its SHA-256 hex: it deletes the
// token, announces the hash on token.ChannelRevocations (always, also when
// the token was already gone, so running it again after a crash between the
// two steps still clears every verifier's cache), then forgets the hash in
// its client's token set. found says whether the token existed. Revoking an
// unknown token is not an error.
func RevokeHash(ctx context.Context, rdb redis.UniversalClient, hash string) (found bool, err error) {
	key := token.KeyOfHash(hash)
	var client string
	if b, err := rdb.Get(ctx, key).Bytes(); err == nil {
		var rec token.Record
		if json.Unmarshal(b, &rec) == nil {
			client = rec.ClientID
		}
	} else if !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("clients: reading a token: %w", err)
	}
	n, err := rdb.Del(ctx, key).Result()
	if err != nil {
		return false, fmt.Errorf("clients: deleting a revoked token: %w", err)
	}
	if err := rdb.Publish(ctx, token.ChannelRevocations, hash).Err(); err != nil {
		return n > 0, fmt.Errorf("clients: announcing a revocation: %w", err)
	}
	if client != "" {
		if err := rdb.SRem(ctx, TokensKey(client), hash).Err(); err != nil {
			return n > 0, fmt.Errorf("clients: forgetting a revoked token: %w", err)
		}
	}
	return n > 0, nil
}

// Tokens returns the hashes of a client's access tokens that are still
// stored (the set may name expired ones; they are left out), with each
// token's record.
func Tokens(ctx context.Context, rdb redis.UniversalClient, clientID string) (map[string]*token.Record, error) {
	hashes, err := rdb.SMembers(ctx, TokensKey(clientID)).Result()
	if err != nil {
		return nil, fmt.Errorf("clients: listing a client's tokens: %w", err)
	}
	out := make(map[string]*token.Record, len(hashes))
	for _, h := range hashes {
		b, err := rdb.Get(ctx, token.KeyOfHash(h)).Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("clients: reading a token: %w", err)
		}
		var rec token.Record
		if json.Unmarshal(b, &rec) != nil {
			continue
		}
		out[h] = &rec
	}
	return out, nil
}

// RevokeAll revokes every access token of a client and returns how many
// existed. The client stays registered: an anonymous client can claim a
// new token at once (Delete ends that too).
func RevokeAll(ctx context.Context, rdb redis.UniversalClient, clientID string) (int, error) {
	hashes, err := rdb.SMembers(ctx, TokensKey(clientID)).Result()
	if err != nil {
		return 0, fmt.Errorf("clients: listing a client's tokens: %w", err)
	}
	n := 0
	for _, h := range hashes {
		found, err := RevokeHash(ctx, rdb, h)
		if err != nil {
			return n, err
		}
		if found {
			n++
		}
		// A hash whose token has expired is forgotten too.
		if err := rdb.SRem(ctx, TokensKey(clientID), h).Err(); err != nil {
			return n, fmt.Errorf("clients: forgetting a revoked token: %w", err)
		}
	}
	return n, nil
}

// Deleted says what Delete removed.
type Deleted struct {
	// Record: the client's registration existed.
	Record bool
	// Tokens and Subscriptions counts what was revoked and deleted.
	Tokens        int
	Subscriptions int
}

// Any reports whether anything of the client was left to delete.
func (d Deleted) Any() bool { return d.Record || d.Tokens > 0 || d.Subscriptions > 0 }

// Delete removes a client with its access tokens and its webhook
// subscriptions (RFC 7592 §2.3; docs/decisions.md, "Clients live 90
// days"). The steps run in an order that is safe to interrupt and to run
// again, since they touch several hash slots:
//
//  1. the client is marked as being deleted: from then on no token is
//     issued to it (a claim racing this step has its new token revoked by
//     RecordToken);
//  2. every token in its set is revoked and announced, so no new
//     subscription can be made with one;
//  3. its subscriptions, each in one script (their pending deliveries are
//     dropped by the worker, as for an owner's delete);
//  4. the record, the token set and the mark, in one command, last: a run
//     cut short before it leaves the registration in place, so the owner's
//     RFC 7592 delete can be retried as well as iwctl's, and both find the
//     tokens and subscriptions left.
//
// Deleting a client that is already gone removes nothing and is not an
// error (Deleted.Any is false).
func Delete(ctx context.Context, rdb redis.UniversalClient, clientID string) (Deleted, error) {
	var d Deleted
	marked, err := markScript.Run(ctx, rdb, []string{Key(clientID), DeletingKey(clientID)}).Int()
	if err != nil {
		return d, fmt.Errorf("clients: marking a client for deletion: %w", err)
	}
	d.Record = marked == 1
	if d.Tokens, err = RevokeAll(ctx, rdb, clientID); err != nil {
		return d, err
	}
	ws := webhook.NewStore(rdb)
	subs, err := ws.List(ctx, clientID)
	if err != nil {
		return d, err
	}
	for _, sub := range subs {
		err := ws.Delete(ctx, clientID, sub.ID)
		if errors.Is(err, webhook.ErrNotFound) {
			continue
		}
		if err != nil {
			return d, err
		}
		d.Subscriptions++
	}
	if err := rdb.Del(ctx, Key(clientID), TokensKey(clientID), DeletingKey(clientID)).Err(); err != nil {
		return d, fmt.Errorf("clients: deleting a client: %w", err)
	}
	return d, nil
}

// markScript marks a client as being deleted, for as long as its record
// would live, and says whether it has a record. KEYS: client, deleting.
var markScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ttl > 0 then redis.call('SET', KEYS[2], '1', 'PX', ttl) else redis.call('SET', KEYS[2], '1') end
return 1
`)

// Record is what an operator is shown of a client's registration (the
// origin's stored record, without its registration token's hash).
type Record struct {
	ClientID     string `json:"client_id"`
	ClientName   string `json:"client_name"`
	Contact      string `json:"contact,omitempty"`
	IdentityType string `json:"identity_type"`
	IssuedAt     int64  `json:"client_id_issued_at"`
}

// Get returns a client's registration, or nil when there is none.
func Get(ctx context.Context, rdb redis.UniversalClient, id string) (*Record, error) {
	b, err := rdb.Get(ctx, Key(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clients: reading a client: %w", err)
	}
	return decodeRecord(b)
}

// decodeRecord decodes a client's stored record.
func decodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("clients: decoding a client: %w", err)
	}
	return &rec, nil
}

// Each calls fn with every registered client, in no particular order, a
// batch of them at a time, until fn returns an error: iwctl clients list,
// for operators. Clients are keyed by their own hash tags, spread over
// every master of a Redis Cluster, and no index lists them, so it walks
// their records with SCAN (package redisscan), which never blocks Redis; a
// client registered, expired or deleted meanwhile may or may not be
// passed.
func Each(ctx context.Context, rdb redis.UniversalClient, fn func([]*Record) error) error {
	// The record's key ends with its hash tag's "}": the pattern leaves out
	// the client's other keys (":tokens", ":deleting").
	return redisscan.Keys(ctx, rdb, "iw:client:{*}", func(ctx context.Context, keys []string) error {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.Get(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("clients: reading clients: %w", err)
		}
		recs := make([]*Record, 0, len(keys))
		for _, c := range cmds {
			b, err := c.Bytes()
			if errors.Is(err, redis.Nil) {
				// Expired or deleted since the scan saw it.
				continue
			}
			if err != nil {
				return fmt.Errorf("clients: reading %s: %w", c.Args()[1], err)
			}
			rec, err := decodeRecord(b)
			if err != nil {
				return fmt.Errorf("%w (%s)", err, c.Args()[1])
			}
			recs = append(recs, rec)
		}
		if len(recs) == 0 {
			return nil
		}
		return fn(recs)
	})
}
