package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/invalidation"
)

// Change is a set of content writes applied as one atomic step together with
// the content-version bump, the event the change emits, and the invalidation
// message (docs/decisions.md, retraction and correction): a crash can never leave a change without its event or
// an event without its change.
//
// Build one with NewChange, add writes, then Store.Apply it.
type Change struct {
	keys   []string
	index  map[string]int
	ops    []changeOp
	expect []changeExpect
	event  *events.Event
	tags   []string
	// sitemapURLs is the capacity of a sitemap file; 0 means SitemapURLs.
	sitemapURLs int
}

func (c *Change) sitemapCap() int {
	if c.sitemapURLs > 0 {
		return c.sitemapURLs
	}
	return SitemapURLs
}

type changeOp struct {
	Op     string `json:"o"`
	Key    int    `json:"k"`
	Value  string `json:"v,omitempty"`
	Field  string `json:"f,omitempty"`
	Score  string `json:"s,omitempty"`
	Member string `json:"m,omitempty"`
}

type changeExpect struct {
	Key    int    `json:"k"`
	Digest string `json:"d"`
}

// NewChange starts an empty change.
func NewChange() *Change {
	c := &Change{index: map[string]int{}}
	// Fixed positions used by the script: KEYS[1] version, KEYS[2] stream.
	c.key(keyVersion)
	c.key(events.Stream)
	return c
}

// key returns the 1-based position of k in KEYS, adding it when new. Every key
// a script touches must be declared in KEYS for Redis Cluster to route it.
func (c *Change) key(k string) int {
	if i, ok := c.index[k]; ok {
		return i
	}
	c.keys = append(c.keys, k)
	c.index[k] = len(c.keys)
	return len(c.keys)
}

func (c *Change) set(key string, value []byte) {
	c.ops = append(c.ops, changeOp{Op: "set", Key: c.key(key), Value: string(value)})
}
func (c *Change) del(key string) { c.ops = append(c.ops, changeOp{Op: "del", Key: c.key(key)}) }
func (c *Change) hset(key, field string, value []byte) {
	c.ops = append(c.ops, changeOp{Op: "hset", Key: c.key(key), Field: field, Value: string(value)})
}
func (c *Change) zadd(key string, score int64, member string) {
	c.ops = append(c.ops, changeOp{Op: "zadd", Key: c.key(key), Score: strconv.FormatInt(score, 10), Member: member})
}
func (c *Change) zrem(key, member string) {
	c.ops = append(c.ops, changeOp{Op: "zrem", Key: c.key(key), Member: member})
}

// expectValue makes the change apply only while key still holds current (nil
// for "does not exist"). It turns read-modify-write sequences, such as a sync
// racing a retraction, into compare-and-set.
func (c *Change) expectValue(key string, current []byte) {
	d := ""
	if current != nil {
		sum := sha1.Sum(current)
		d = hex.EncodeToString(sum[:])
	}
	c.expect = append(c.expect, changeExpect{Key: c.key(key), Digest: d})
}

// Emit attaches the event the change publishes. A change has at most one.
func (c *Change) Emit(e events.Event) { c.event = &e }

// Invalidate names surrogate keys that caches must drop once the change is
// applied.
func (c *Change) Invalidate(tags ...string) { c.tags = append(c.tags, tags...) }

// Empty reports whether the change writes nothing.
func (c *Change) Empty() bool { return len(c.ops) == 0 }

// ErrConflict is returned by Apply when an expected value had changed; the
// caller re-reads and tries again.
var ErrConflict = errors.New("store: content changed concurrently")

// applyScript runs a Change. ARGV[1] is the JSON change, ARGV[2] the
// invalidation channel, ARGV[3] the surrogate keys as a JSON array (passed
// pre-encoded because cjson encodes an empty table as {} rather than []),
// ARGV[4] the capacity of a sitemap file; the script adds the keys of the
// sitemap files it changed.
// It returns the new content version, or -1 when an expectation failed.
var applyScript = redis.NewScript(`
local smcap = tonumber(ARGV[4])
local smtags = {}
` + sitemapLua + `
local spec = cjson.decode(ARGV[1])
for _, e in ipairs(spec.expect) do
  local cur = redis.call('GET', KEYS[e.k])
  local d = ''
  if cur then d = redis.sha1hex(cur) end
  if d ~= e.d then return -1 end
end
for _, op in ipairs(spec.ops) do
  local k = KEYS[op.k]
  if op.o == 'set' then redis.call('SET', k, op.v)
  elseif op.o == 'del' then redis.call('DEL', k)
  elseif op.o == 'hset' then redis.call('HSET', k, op.f, op.v)
  elseif op.o == 'zadd' then redis.call('ZADD', k, op.s, op.m)
  elseif op.o == 'zrem' then redis.call('ZREM', k, op.m)
  elseif op.o == 'smadd' then smadd(op.m, op.v)
  elseif op.o == 'smdel' then smdel(op.m)
  else return redis.error_reply('unknown op ' .. tostring(op.o)) end
end
local v = redis.call('INCR', KEYS[1])
if spec.event then
  local e = spec.event
  redis.call('XADD', KEYS[2], '*', 'id', e.id, 'type', e.type, 'created_at', e.created_at, 'data', e.data)
end
local tags = ARGV[3]
if #smtags > 0 then
  local sep = ','
  if tags == '[]' then sep = '' end
  tags = string.sub(tags, 1, -2) .. sep .. '"' .. table.concat(smtags, '","') .. '"]'
end
redis.call('PUBLISH', ARGV[2], '{"version":' .. v .. ',"keys":' .. tags .. '}')
return v
`)

// Apply writes c atomically and returns the new content version. It returns
// ErrConflict, and writes nothing, when a value the change expected has moved.
func (s *Store) Apply(ctx context.Context, c *Change) (int64, error) {
	body, tagJSON, err := c.encode()
	if err != nil {
		return 0, err
	}
	v, err := applyScript.Run(ctx, s.rdb, c.keys, body, invalidation.Channel, tagJSON, c.sitemapCap()).Int64()
	if err != nil {
		return 0, fmt.Errorf("store: applying change: %w", err)
	}
	if v < 0 {
		return 0, ErrConflict
	}
	return v, nil
}

// encode renders c as the arguments of applyScript: the change itself and
// its surrogate keys, both JSON.
func (c *Change) encode() (body, tagJSON []byte, err error) {
	spec := struct {
		Ops    []changeOp     `json:"ops"`
		Expect []changeExpect `json:"expect"`
		Event  map[string]any `json:"event,omitempty"`
	}{Ops: c.ops, Expect: c.expect}
	if spec.Ops == nil {
		spec.Ops = []changeOp{}
	}
	if spec.Expect == nil {
		spec.Expect = []changeExpect{}
	}
	if c.event != nil {
		spec.Event = c.event.Fields()
	}
	body, err = json.Marshal(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("store: encoding change: %w", err)
	}
	tags := c.tags
	if tags == nil {
		tags = []string{}
	}
	tagJSON, _ = json.Marshal(tags)
	return body, tagJSON, nil
}
