package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/redis/go-redis/v9"
)

// Article states. The published state lives in Redis, not in content/: a
// later sync never un-retracts (docs/decisions.md, retraction and correction).
const (
	StatePublished = "published"
	StateRetracted = "retracted"
)

// ArticleRecord is an article as stored: the editorial content plus its
// publication state.
type ArticleRecord struct {
	content.Article
	State            string     `json:"state"`
	RetractedAt      *time.Time `json:"retracted_at,omitempty"`
	RetractionReason string     `json:"retraction_reason,omitempty"`
}

// Retracted reports whether the article has been pulled.
func (r *ArticleRecord) Retracted() bool { return r.State == StateRetracted }

// Article reads one article record, retracted or not.
func (s *Store) Article(ctx context.Context, slug string) (*ArticleRecord, error) {
	rec, _, err := s.articleRaw(ctx, slug)
	return rec, err
}

func (s *Store) articleRaw(ctx context.Context, slug string) (*ArticleRecord, []byte, error) {
	raw, err := s.rdb.Get(ctx, keyArticle(slug)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: reading article %q: %w", slug, err)
	}
	var rec ArticleRecord
	if err := decodeRecord(raw, &rec); err != nil {
		return nil, nil, fmt.Errorf("store: decoding article %q: %w", slug, err)
	}
	return &rec, raw, nil
}

// ArticleFilter narrows a listing. Empty fields match everything.
type ArticleFilter struct {
	Section  string
	Audience string
	Country  string
}

// indexKeys returns the sorted sets whose intersection is the filter.
func (f ArticleFilter) indexKeys() []string {
	var keys []string
	if f.Section != "" {
		keys = append(keys, keyIndex("section", f.Section))
	}
	if f.Audience != "" {
		keys = append(keys, keyIndex("audience", f.Audience))
	}
	if f.Country != "" {
		keys = append(keys, keyIndex("country", f.Country))
	}
	if len(keys) == 0 {
		keys = []string{keyIndexAll}
	}
	return keys
}

// Cursor is a position in a listing: the last article a page showed. A page
// that starts after a cursor is unaffected by articles published or retracted
// since the first page, so a client paging through visits every article that
// stayed published exactly once (docs/decisions.md, pagination; docs/decisions.md, "Keyset cursor in
// `next`").
type Cursor struct {
	PublishedAt time.Time
	Slug        string
}

// Encode renders the cursor as the opaque string that `next` URLs carry.
func (c Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.PublishedAt.Unix(), 10) + ":" + c.Slug))
}

// ParseCursor reverses Encode. It accepts only what Encode writes: a value
// that decodes but that Encode would have written otherwise (a slug that is
// none, a leading zero, base64 with padding or stray bits) is not a cursor
// this service issued, and is refused rather than read as one.
func ParseCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > 200 {
		return Cursor{}, errors.New("cursor is not one this service issued")
	}
	ts, slug, ok := strings.Cut(string(raw), ":")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || !content.ValidSlug(slug) || sec < 0 || sec > 1<<40 {
		return Cursor{}, errors.New("cursor is not one this service issued")
	}
	c := Cursor{PublishedAt: time.Unix(sec, 0).UTC(), Slug: slug}
	if c.Encode() != s {
		return Cursor{}, errors.New("cursor is not one this service issued")
	}
	return c, nil
}

// Page is one page of a listing.
type Page struct {
	// Total is the number of articles matching the filter.
	Total int
	// Start is the position of the first item in the whole listing. For
	// a cursor page of a filter on two or more values it is not computed
	// (that would cost a pass over the whole intersection) and is the
	// offset the caller passed, which next links keep in step.
	Start int
	// More reports that articles follow this page.
	More     bool
	Articles []*ArticleRecord
}

// score orders the indexes: newest first, ties by slug ascending, because
// Redis orders equal scores by member.
func score(t time.Time) int64 { return -t.Unix() }

// pageScript computes one page of a filtered listing in one round trip.
// KEYS are the index sets to intersect; ARGV[1] the cursor's score (” for
// none), ARGV[2] the cursor's slug, ARGV[3] offset, ARGV[4] limit. It returns
// {total, start (-1 when not computed), more (0 or 1), member, score, ...}.
//
// One set is a range read, O(log N + limit). Several are walked along the
// smallest, each member looked up in the others until the page and one
// more match are found, and the total is the filter's counter (ARGV[6]
// names it in the counts hash ARGV[7], counts.go), or, until the counters
// are ready, ZINTERCARD, which only counts. The walk follows the filter's
// week counters (weeks.go) once they are ready: it visits only weeks that
// hold a match, from the cursor's week or skipping whole weeks to reach
// the offset, so its cost follows the page, not the archive nor the
// offset. The week hashes are not in KEYS, since which ones a page reads
// depends on what it finds; like the counts hash, they carry the {content}
// hash tag, so on Redis Cluster they live in the slot of the index sets.
// Until the week counters are ready, a page walks from the start or the
// cursor's place. A walk that has not found its page after walkBudget
// members (a deep offset into a rare combination without week counters)
// intersects the sets whole instead.
var pageScript = redis.NewScript(weekLua + `
local cs, cslug = ARGV[1], ARGV[2]
local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
-- rank is where the cursor's successor sits in set k.
local function rank(k)
  local r = redis.call('ZCOUNT', k, '-inf', '(' .. cs)
  for _, m in ipairs(redis.call('ZRANGE', k, cs, cs, 'BYSCORE')) do
    if m <= cslug then r = r + 1 end
  end
  return r
end
if #KEYS == 1 then
  local k = KEYS[1]
  local total = redis.call('ZCARD', k)
  local start = offset
  if cs ~= '' then start = rank(k) end
  local out = {total, start, 0}
  if limit > 0 then
    for _, v in ipairs(redis.call('ZRANGE', k, start, start + limit - 1, 'WITHSCORES')) do out[#out+1] = v end
  end
  if start + (#out - 3) / 2 < total then out[3] = 1 end
  return out
end
local small, size = KEYS[1], redis.call('ZCARD', KEYS[1])
for i = 2, #KEYS do
  local n = redis.call('ZCARD', KEYS[i])
  if n < size then small, size = KEYS[i], n end
end
local ready = {false, false}
if ARGV[6] ~= '' then ready = redis.call('HMGET', ARGV[7], 'ready', 'weeks') end
local total
if ready[1] then
  total = tonumber(redis.call('HGET', ARGV[7], ARGV[6]) or '0')
else
  total = redis.call('ZINTERCARD', #KEYS, unpack(KEYS))
end
local out = {total, offset, 0}
local cpos, skip = 0, offset
if cs ~= '' then
  cpos, skip, out[2] = rank(small), 0, -1
end
local found, walked, budget, chunk = 0, 0, tonumber(ARGV[5]), 256
local need = skip + limit
-- member reports whether m, a member of the smallest set, is in the others.
local function member(m)
  for i = 1, #KEYS do
    if KEYS[i] ~= small and not redis.call('ZSCORE', KEYS[i], m) then return false end
  end
  return true
end
-- take counts a match and reports whether the page and one more are found.
local function take(m, s)
  found = found + 1
  if found > need then out[3] = 1; return true end
  if found > skip then out[#out+1] = m; out[#out+1] = s end
  return false
end
local done = cs == '' and offset >= total
if not done and ready[1] and ready[2] then
  -- Guided by the week counters (weeks.go): only weeks that hold a match
  -- are walked, and those wholly before the offset are skipped by their
  -- count. Weeks are newest first, as the sets are; a week's members are
  -- the ranks of the smallest set between two ZCOUNTs.
  local over = false
  -- weekFirst is the rank in the smallest set of week w's first member.
  local function weekFirst(w) return redis.call('ZCOUNT', small, '-inf', '(' .. (-(w + 1) * weekSeconds + 1)) end
  local head = redis.call('ZRANGE', small, 0, 0, 'WITHSCORES')
  local tail = redis.call('ZRANGE', small, -1, -1, 'WITHSCORES')
  if #head > 0 then
    local w0, wn = weekOfScore(tonumber(head[2])), weekOfScore(tonumber(tail[2]))
    if cs ~= '' then w0 = math.min(w0, weekOfScore(tonumber(cs))) end
    for g = math.floor(w0 / weeksPerKey), math.floor(wn / weeksPerKey), -1 do
      local h = redis.call('HGETALL', weeksKey(g * weeksPerKey, ARGV[6]))
      local ws, cnt = {}, {}
      for j = 1, #h, 2 do
        local w, n = tonumber(h[j]), tonumber(h[j+1])
        if w <= w0 and n > 0 then ws[#ws+1] = w; cnt[w] = n end
      end
      table.sort(ws, function(x, y) return x > y end)
      for _, w in ipairs(ws) do
        local n = cnt[w]
        -- first is the rank of the week's first member in the smallest
        -- set, read only when needed: weeks skipped to reach an offset cost
        -- no command. whole: the cursor is not inside this week, so all its
        -- n matches follow the page's start.
        local first, whole = nil, true
        if cs ~= '' then
          first = weekFirst(w)
          whole = cpos <= first
        end
        if whole and found >= need then
          out[3] = 1; done = true
        elseif whole and found + n <= skip then
          found = found + n
        else
          first = first or weekFirst(w)
          local pos = math.max(first, cpos)
          local stop = redis.call('ZCOUNT', small, '-inf', -w * weekSeconds)
          local seen = 0
          while not done and pos < stop and seen < n do
            if walked >= budget then over = true; break end
            local batch = redis.call('ZRANGE', small, pos, math.min(pos + chunk, stop) - 1, 'WITHSCORES')
            for j = 1, #batch, 2 do
              if member(batch[j]) then
                seen = seen + 1
                done = take(batch[j], batch[j+1])
                if not done and whole and found == need and seen < n then out[3] = 1; done = true end
                if done or seen == n then break end
              end
            end
            pos, walked = pos + #batch / 2, walked + #batch / 2
          end
        end
        if done or over then break end
      end
      if done or over then break end
    end
  end
  done = not over
elseif not done then
  -- Without them, walk the smallest set from the start.
  local pos = cpos
  while not done and walked < budget do
    local batch = redis.call('ZRANGE', small, pos, pos + chunk - 1, 'WITHSCORES')
    if #batch == 0 then done = true; break end
    for j = 1, #batch, 2 do
      if member(batch[j]) and take(batch[j], batch[j+1]) then done = true; break end
    end
    pos, walked = pos + chunk, walked + #batch / 2
    if #batch < 2 * chunk then done = true end
  end
end
if done then return out end
-- Over budget: intersect whole, as the listing did before.
local args = {'ZINTER', #KEYS}
for i = 1, #KEYS do args[#args+1] = KEYS[i] end
args[#args+1] = 'AGGREGATE'; args[#args+1] = 'MIN'; args[#args+1] = 'WITHSCORES'
local all = redis.call(unpack(args))
local n = #all / 2
local start = offset
if cs ~= '' then
  local csn = tonumber(cs)
  start = 0
  for i = 1, n do
    local s, m = tonumber(all[2*i]), all[2*i-1]
    if s < csn or (s == csn and m <= cslug) then start = i else break end
  end
end
out = {n, start, 0}
for i = start + 1, math.min(n, start + limit) do
  out[#out+1] = all[2*i-1]; out[#out+1] = all[2*i]
end
if start + limit < n then out[3] = 1 end
return out
`)

// walkBudget is how many members of the smallest set a filtered page walks
// before it intersects the sets whole: about 5 ms of Lua.
var walkBudget = 20000

// Articles returns one page of published articles matching f, newest first.
// With a cursor the page starts right after it and offset is ignored.
func (s *Store) Articles(ctx context.Context, f ArticleFilter, offset, limit int, after *Cursor) (*Page, error) {
	return s.articles(ctx, f, offset, limit, after, decodeRecord)
}

// ArticleHeads is Articles without the bodies (Body is empty), for pages
// that list articles without showing them: a body is most of a record's
// bytes, and leaving it undecoded halves what a listing costs to read
// (docs/scale.md).
func (s *Store) ArticleHeads(ctx context.Context, f ArticleFilter, offset, limit int, after *Cursor) (*Page, error) {
	return s.articles(ctx, f, offset, limit, after, decodeRecordHead)
}

func (s *Store) articles(ctx context.Context, f ArticleFilter, offset, limit int, after *Cursor, decode func([]byte, *ArticleRecord) error) (*Page, error) {
	cs, cslug := "", ""
	if after != nil {
		cs, cslug = strconv.FormatInt(score(after.PublishedAt), 10), after.Slug
	}
	res, err := pageScript.Run(ctx, s.rdb, f.indexKeys(), cs, cslug, offset, limit, walkBudget, countField(f), keyCounts).Slice()
	if err != nil {
		return nil, fmt.Errorf("store: listing articles: %w", err)
	}
	if len(res) < 3 {
		return nil, fmt.Errorf("store: listing articles: short reply")
	}
	p := &Page{Total: int(res[0].(int64)), Start: int(res[1].(int64)), More: res[2].(int64) == 1}
	if p.Start < 0 {
		p.Start = offset
	}
	var keys []string
	for i := 3; i+1 < len(res); i += 2 {
		keys = append(keys, keyArticle(res[i].(string)))
	}
	if len(keys) == 0 {
		return p, nil
	}
	docs, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading listed articles: %w", err)
	}
	for i, d := range docs {
		str, ok := d.(string)
		if !ok {
			// Retracted and deleted between the two reads; the page is
			// one shorter, which is what a reader at this instant sees.
			continue
		}
		var rec ArticleRecord
		if err := decode([]byte(str), &rec); err != nil {
			return nil, fmt.Errorf("store: decoding %s: %w", keys[i], err)
		}
		if rec.Retracted() {
			continue
		}
		p.Articles = append(p.Articles, &rec)
	}
	return p, nil
}

// ArticlesSince is the number of published articles first published at or
// after t: one ZCOUNT, so a listing of a recent window (the news sitemap's
// two days) reads only the records it shows.
func (s *Store) ArticlesSince(ctx context.Context, t time.Time) (int64, error) {
	n, err := s.rdb.ZCount(ctx, keyIndexAll, "-inf", strconv.FormatInt(score(t), 10)).Result()
	if err != nil {
		return 0, fmt.Errorf("store: counting recent articles: %w", err)
	}
	return n, nil
}

// ArticleCount is the number of published articles.
func (s *Store) ArticleCount(ctx context.Context) (int64, error) {
	n, err := s.rdb.ZCard(ctx, keyIndexAll).Result()
	if err != nil {
		return 0, fmt.Errorf("store: counting articles: %w", err)
	}
	return n, nil
}

// CountryArticleCounts returns how many published articles name each country,
// for the countries that have at least one.
func (s *Store) CountryArticleCounts(ctx context.Context, codes []string) (map[string]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(codes))
	for i, cc := range codes {
		cmds[i] = pipe.ZCard(ctx, keyIndex("country", cc))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("store: counting articles per country: %w", err)
	}
	out := map[string]int64{}
	for i, cmd := range cmds {
		if n := cmd.Val(); n > 0 {
			out[codes[i]] = n
		}
	}
	return out, nil
}

// PublishedSlugs calls f with the slug of every published article, newest
// first, reading the index a page at a time so that memory does not grow
// with the archive. Articles published meanwhile may be missed or seen
// twice.
func (s *Store) PublishedSlugs(ctx context.Context, f func(slug string)) error {
	const page = 4096
	for start := int64(0); ; start += page {
		slugs, err := s.rdb.ZRange(ctx, keyIndexAll, start, start+page-1).Result()
		if err != nil {
			return fmt.Errorf("store: listing published articles: %w", err)
		}
		for _, slug := range slugs {
			f(slug)
		}
		if len(slugs) < page {
			return nil
		}
	}
}
