package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Article sitemaps (docs/decisions.md, "Article sitemap files are kept by
// the change script, by linear hashing of the slug"). Every published
// article sits in one sitemap file, chosen by a hash of its slug with linear
// hashing: file b (0-based) holds the slugs whose hash modulo 2^level is b,
// except that the files below next are already split and use modulo
// 2^(level+1). The file of an article therefore depends on its slug and on
// (level, next) only, never on the other articles' dates or order, so an
// edit changes one file, and its cache entry is the only one dropped. The
// archive grows one split at a time: once the archive holds more than a
// third of the files' capacity, file next hands the half of its slugs
// that now hash elsewhere to a new last file, and both are dropped from the
// caches. Growth never moves an article anywhere but into that new file.
//
// Each file is a hash slug → "<published_at> [<last modified>]" (Unix
// seconds): what its sitemap lists, without reading the article records.
const (
	// keySitemap holds level, next and count (the slugs in all files).
	keySitemap = "iw:{content}:sitemap"
	// SitemapURLs is the most URLs one sitemap file may hold (sitemaps.org).
	// A file's entry is at most about 300 bytes (content.MaxSlugLength,
	// the site root and the lastmod), so 50,000 of them stay far below the
	// protocol's 50 MB.
	SitemapURLs = 50000
)

func keySitemapFile(b int64) string { return keySitemap + ":" + strconv.FormatInt(b, 10) }

// TagSitemapFile is the surrogate key of article sitemap file n (1-based).
// TagSitemaps, the index's key, is purged when a file is added.
func TagSitemapFile(n int64) string { return "sitemap:" + strconv.FormatInt(n, 10) }

// sitemapEntry is what a file records of a: its publication and, when it
// differs, its last modification.
func sitemapEntry(a *content.Article) string {
	e := strconv.FormatInt(a.PublishedAt.Unix(), 10)
	if m := a.LastModified(); !m.Equal(a.PublishedAt) {
		e += " " + strconv.FormatInt(m.Unix(), 10)
	}
	return e
}

func (c *Change) sitemapAdd(a *content.Article) {
	c.ops = append(c.ops, changeOp{Op: "smadd", Key: 0, A: a.Slug, B: sitemapEntry(a)})
}

func (c *Change) sitemapDel(slug string) {
	c.ops = append(c.ops, changeOp{Op: "smdel", Key: 0, A: slug, B: ""})
}

// sitemapLua is the part of the change script that keeps the sitemap files.
// It declares smadd(slug, entry) and smdel(slug); smcap is the capacity of a
// file and smtags collects the surrogate keys of the files touched. The keys
// it touches all carry the {content} hash tag, like the script's declared
// keys, so they live in the same cluster slot.
const sitemapLua = `
local smeta = 'iw:{content}:sitemap'
local function smstate()
  local st = redis.call('HMGET', smeta, 'level', 'next', 'count')
  return tonumber(st[1]) or 0, tonumber(st[2]) or 0, tonumber(st[3]) or 0
end
local function smhash(m) return tonumber(string.sub(redis.sha1hex(m), 1, 8), 16) end
local function smbucket(h, level, nxt)
  local b = h % (2 ^ level)
  if b < nxt then b = h % (2 ^ (level + 1)) end
  return b
end
local function smkey(b) return smeta .. ':' .. string.format('%d', b) end
local function smtag(b) smtags[#smtags+1] = 'sitemap:' .. string.format('%d', b + 1) end
local function smsplit()
  local level, nxt = smstate()
  local from, to = smkey(nxt), smkey(nxt + 2 ^ level)
  local all = redis.call('HGETALL', from)
  local moved, gone = {}, {}
  local function flush()
    if #gone > 0 then
      redis.call('HSET', to, unpack(moved))
      redis.call('HDEL', from, unpack(gone))
      moved, gone = {}, {}
    end
  end
  for i = 1, #all, 2 do
    if smhash(all[i]) % (2 ^ (level + 1)) ~= nxt then
      moved[#moved+1] = all[i]; moved[#moved+1] = all[i+1]; gone[#gone+1] = all[i]
      if #gone == 1000 then flush() end
    end
  end
  flush()
  smtag(nxt); smtag(nxt + 2 ^ level); smtags[#smtags+1] = 'sitemaps'
  nxt = nxt + 1
  if nxt == 2 ^ level then level, nxt = level + 1, 0 end
  redis.call('HSET', smeta, 'level', string.format('%d', level), 'next', string.format('%d', nxt))
end
local function smadd(slug, entry)
  local h = smhash(slug)
  local level, nxt, n = smstate()
  local b = smbucket(h, level, nxt)
  if redis.call('HSET', smkey(b), slug, entry) == 1 then
    n = redis.call('HINCRBY', smeta, 'count', 1)
  end
  smtag(b)
  while n * 3 > (2 ^ level + nxt) * smcap do
    smsplit()
    level, nxt = smstate()
  end
  -- However the hash spreads, no file exceeds the capacity.
  while redis.call('HLEN', smkey(smbucket(h, level, nxt))) > smcap do
    smsplit()
    level, nxt = smstate()
  end
end
-- smaddall is smadd for the k (slug, entry) pairs of ARGV from i on: one
-- HSET per file touched, one count update, then the same splits.
local function smaddall(i, k)
  local level, nxt, n = smstate()
  local hashes, files, order = {}, {}, {}
  for j = i, i + 2 * k - 1, 2 do
    local h = smhash(ARGV[j])
    hashes[#hashes+1] = h
    local b = smbucket(h, level, nxt)
    local f = files[b]
    if not f then f = {}; files[b] = f; order[#order+1] = b end
    f[#f+1] = ARGV[j]; f[#f+1] = ARGV[j+1]
  end
  local added = 0
  for _, b in ipairs(order) do
    added = added + redis.call('HSET', smkey(b), unpack(files[b]))
    smtag(b)
  end
  if added > 0 then n = redis.call('HINCRBY', smeta, 'count', added) end
  while n * 3 > (2 ^ level + nxt) * smcap do
    smsplit()
    level, nxt = smstate()
  end
  local full = true
  while full do
    full = false
    local seen = {}
    for _, h in ipairs(hashes) do
      local b = smbucket(h, level, nxt)
      if not seen[b] then
        seen[b] = true
        if redis.call('HLEN', smkey(b)) > smcap then full = true; break end
      end
    end
    if full then
      smsplit()
      level, nxt = smstate()
    end
  end
end
local function smdel(slug)
  local level, nxt = smstate()
  local b = smbucket(smhash(slug), level, nxt)
  if redis.call('HDEL', smkey(b), slug) == 1 then
    redis.call('HINCRBY', smeta, 'count', -1)
  end
  smtag(b)
end
`

// SitemapFiles is the number of article sitemap files, at least one.
func (s *Store) SitemapFiles(ctx context.Context) (int64, error) {
	st, err := s.rdb.HMGet(ctx, keySitemap, "level", "next").Result()
	if err != nil {
		return 0, fmt.Errorf("store: reading the sitemap state: %w", err)
	}
	level, next := atoiOr0(st[0]), atoiOr0(st[1])
	return 1<<level + next, nil
}

func atoiOr0(v any) int64 {
	str, _ := v.(string)
	n, _ := strconv.ParseInt(str, 10, 64)
	return n
}

// SitemapURL is one article of a sitemap file.
type SitemapURL struct {
	// Path is the article's path under the site root, as Article.Path.
	Path         string
	LastModified time.Time
}

// ErrNoSitemap is returned for a sitemap file number past the last file.
var ErrNoSitemap = errors.New("store: no such sitemap file")

// SitemapFile returns the articles of sitemap file n (1-based), ordered by
// path. It reads one hash of at most SitemapURLs small entries.
func (s *Store) SitemapFile(ctx context.Context, n int64) ([]SitemapURL, error) {
	files, err := s.SitemapFiles(ctx)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > files {
		return nil, ErrNoSitemap
	}
	m, err := s.rdb.HGetAll(ctx, keySitemapFile(n-1)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: reading sitemap file %d: %w", n, err)
	}
	out := make([]SitemapURL, 0, len(m))
	for slug, e := range m {
		pub, mod, _ := strings.Cut(e, " ")
		p, err := strconv.ParseInt(pub, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("store: decoding sitemap entry %q: %w", slug, err)
		}
		published := time.Unix(p, 0).UTC()
		// content.Article.Path, without a whole Article per entry: a file
		// has up to 50,000 of them.
		path := make([]byte, 0, len("/2006/01/")+len(slug))
		path = append(published.AppendFormat(append(path, '/'), "2006/01"), '/')
		u := SitemapURL{Path: string(append(path, slug...)), LastModified: published}
		if mod != "" {
			l, err := strconv.ParseInt(mod, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("store: decoding sitemap entry %q: %w", slug, err)
			}
			u.LastModified = time.Unix(l, 0).UTC()
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b SitemapURL) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// backfillSitemaps fills the sitemap files from the published articles when
// a store holds articles but no files yet (one written before the files
// existed). It runs once, a thousand articles per change.
func (p *Publisher) backfillSitemaps(ctx context.Context) error {
	ok, err := p.Store.rdb.HExists(ctx, keySitemap, "count").Result()
	if err != nil {
		return fmt.Errorf("store: reading the sitemap state: %w", err)
	}
	if ok {
		return nil
	}
	const batch = 1000
	for start := int64(0); ; start += batch {
		slugs, err := p.Store.rdb.ZRange(ctx, keyIndexAll, start, start+batch-1).Result()
		if err != nil {
			return fmt.Errorf("store: listing articles for the sitemaps: %w", err)
		}
		if len(slugs) == 0 {
			return nil
		}
		keys := make([]string, len(slugs))
		for i, slug := range slugs {
			keys[i] = keyArticle(slug)
		}
		docs, err := p.Store.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return fmt.Errorf("store: reading articles for the sitemaps: %w", err)
		}
		c := p.newChange()
		for i, d := range docs {
			str, ok := d.(string)
			if !ok {
				continue
			}
			var rec ArticleRecord
			if err := decodeRecord([]byte(str), &rec); err != nil {
				return fmt.Errorf("store: decoding %s: %w", keys[i], err)
			}
			c.sitemapAdd(&rec.Article)
		}
		c.Invalidate(TagSitemaps)
		if _, err := p.Store.Apply(ctx, c); err != nil {
			return fmt.Errorf("store: filling the sitemaps: %w", err)
		}
	}
}
