package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// changeOp is one write: its name, its key's position in KEYS (0 for the
// sitemap operations, whose keys the script finds) and two operands.
type changeOp struct {
	Op   string
	Key  int
	A, B any
}

type changeExpect struct {
	Key    int
	Digest string
}

// NewChange starts an empty change.
func NewChange() *Change {
	c := &Change{index: map[string]int{}}
	// Fixed positions used by the scripts: KEYS[1] version, KEYS[2]
	// stream, KEYS[3] the change times (keyChanged).
	c.key(keyVersion)
	c.key(events.Stream)
	c.key(keyChanged)
	return c
}

// changedLua records the change in the hash KEYS[3] (keyChanged): its time
// under each surrogate key of tags (a JSON array) but the per-article ones
// (an article's answers carry its own dates, and a field per article would
// grow with the archive), and under the field "*", the latest change of
// all (no surrogate key is "*"). The time is Redis's clock in Unix
// seconds, but later than every time recorded before: two changes never
// share a time, so an answer's Last-Modified moves with every change to it
// even when both fall within one second (ChangedAt). A burst of changes
// within one second dates each a second after the last, ahead of the
// clock until the clock catches up.
const changedLua = `
local function recordChanged(tags)
  local now = tonumber(redis.call('TIME')[1])
  local last = tonumber(redis.call('HGET', KEYS[3], '*') or '0')
  if now <= last then now = last + 1 end
  local stamps = {'*', now}
  for _, t in ipairs(cjson.decode(tags)) do
    if string.sub(t, 1, 8) ~= 'article:' then
      stamps[#stamps+1] = t
      stamps[#stamps+1] = now
    end
  end
  redis.call('HSET', KEYS[3], unpack(stamps))
end
`

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
	c.ops = append(c.ops, changeOp{Op: "set", Key: c.key(key), A: value, B: ""})
}
func (c *Change) hset(key, field string, value []byte) {
	c.ops = append(c.ops, changeOp{Op: "hset", Key: c.key(key), A: field, B: value})
}
func (c *Change) hdel(key, field string) {
	c.ops = append(c.ops, changeOp{Op: "hdel", Key: c.key(key), A: field, B: ""})
}
func (c *Change) zadd(key string, score int64, member string) {
	c.ops = append(c.ops, changeOp{Op: "zadd", Key: c.key(key), A: score, B: member})
}
func (c *Change) zrem(key, member string) {
	c.ops = append(c.ops, changeOp{Op: "zrem", Key: c.key(key), A: member, B: ""})
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

// applyScript runs a Change. ARGV[1] is the invalidation channel, ARGV[2]
// the surrogate keys as a JSON array (passed pre-encoded because cjson
// encodes an empty table as {} rather than []), ARGV[3] the capacity of a
// sitemap file, ARGV[4] the number of expectations, then each as (key
// index, digest), then "1" and the event's id, type, created_at and data or
// "0", then the operations, four arguments each: name, key index and two
// operands. The arguments are flat rather than one JSON document: neither
// side then encodes or decodes the article twice (docs/decisions.md, "The
// change script takes flat arguments"). The script adds the keys of the sitemap files it changed,
// and records the change's time under its keys (changedLua). It returns
// the new content version, or -1 when an expectation failed.
var applyScript = redis.NewScript(changedLua + `
local smcap = tonumber(ARGV[3])
local smtags = {}
` + sitemapLua + `
local i = 5
for _ = 1, tonumber(ARGV[4]) do
  local cur = redis.call('GET', KEYS[tonumber(ARGV[i])])
  local d = ''
  if cur then d = redis.sha1hex(cur) end
  if d ~= ARGV[i+1] then return -1 end
  i = i + 2
end
local event = ARGV[i] == '1'
local ev = i + 1
if event then i = i + 5 else i = i + 1 end
for j = i, #ARGV, 4 do
  local o, k, a, b = ARGV[j], KEYS[tonumber(ARGV[j+1])], ARGV[j+2], ARGV[j+3]
  if o == 'set' then redis.call('SET', k, a)
  elseif o == 'zadd' then redis.call('ZADD', k, a, b)
  elseif o == 'zrem' then redis.call('ZREM', k, a)
  elseif o == 'smadd' then smadd(a, b)
  elseif o == 'smdel' then smdel(a)
  elseif o == 'hset' then redis.call('HSET', k, a, b)
  elseif o == 'hdel' then redis.call('HDEL', k, a)
  elseif o == 'hincr' then redis.call('HINCRBY', k, a, b)
  elseif o == 'wincr' then
    -- A week counter at zero is deleted (weeks.go).
    if redis.call('HINCRBY', k, a, b) <= 0 then redis.call('HDEL', k, a) end
  elseif o == 'del' then redis.call('DEL', k)
  else return redis.error_reply('unknown op ' .. tostring(o)) end
end
local v = redis.call('INCR', KEYS[1])
if event then
  redis.call('XADD', KEYS[2], '*', 'id', ARGV[ev], 'type', ARGV[ev+1], 'created_at', ARGV[ev+2], 'data', ARGV[ev+3])
end
local tags = ARGV[2]
if #smtags > 0 then
  local sep = ','
  if tags == '[]' then sep = '' end
  tags = string.sub(tags, 1, -2) .. sep .. '"' .. table.concat(smtags, '","') .. '"]'
end
recordChanged(tags)
redis.call('PUBLISH', ARGV[1], '{"version":' .. v .. ',"keys":' .. tags .. '}')
return v
`)

// Apply writes c atomically and returns the new content version. It returns
// ErrConflict, and writes nothing, when a value the change expected has moved.
func (s *Store) Apply(ctx context.Context, c *Change) (int64, error) {
	v, err := applyScript.Run(ctx, s.rdb, c.keys, c.args()...).Int64()
	if err != nil {
		return 0, fmt.Errorf("store: applying change: %w", err)
	}
	if v < 0 {
		return 0, ErrConflict
	}
	return v, nil
}

// args renders c as the arguments of applyScript.
func (c *Change) args() []any {
	tags := c.tags
	if tags == nil {
		tags = []string{}
	}
	tagJSON, _ := json.Marshal(tags) // strings always encode
	out := make([]any, 0, 6+2*len(c.expect)+4*len(c.ops))
	out = append(out, invalidation.Channel, tagJSON, c.sitemapCap(), len(c.expect))
	for _, e := range c.expect {
		out = append(out, e.Key, e.Digest)
	}
	if c.event != nil {
		e := c.event
		out = append(out, "1", e.ID, e.Type, e.CreatedAt.Format(time.RFC3339Nano), []byte(e.Data))
	} else {
		out = append(out, "0")
	}
	for _, op := range c.ops {
		out = append(out, op.Op, op.Key, op.A, op.B)
	}
	return out
}
