package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/redis/go-redis/v9"
)

// Week counters guide listings filtered on two or three values
// (docs/decisions.md, "Filtered pages follow week counters"). Such a page
// walks the smallest of the
// filter's index sets, looking each member up in the others; without help
// a deep offset or a cursor far into a sparse combination walks thousands
// of members that do not match (18-23 ms at a million articles). Every
// filter the counters hash counts (counts.go) also has per-week counts of
// its published articles, so a page skips the weeks that hold no match,
// skips whole weeks to reach its offset, and walks only the week its page
// starts in. Intersecting the sets whole costs about 50 ms at a million
// articles; a set per combination would hold the archive again per filter
// and break the memory goal (docs/scale.md), while the counters cost a few
// bytes a week per combination.
//
// The counts of 64 weeks of one filter share a hash,
// iw:{content}:wk:<week/64>:<filter>, small enough for Redis's compact
// encoding, and each field is a week number: floor(unix seconds / a week)
// of the article's publication time, which the pages derive from the index
// score (weekLua). Fields that fall to zero are deleted, so a hash holds
// only weeks with articles.
const (
	weekSeconds    = 7 * 24 * 3600
	weeksPerKey    = 64
	keyWeeksPrefix = "iw:{content}:wk:"
	// weeksReady, a field of the counters hash, marks week counters that
	// are complete (backfillWeeks); until then pages walk without them.
	weeksReady = "weeks"
	// weeksChunk is how many articles one weeksScript call should read,
	// on average over the archive, and weeksChunkMax at most how many
	// weeks: a call reads every index set within its weeks, atomically,
	// so no call holds Redis for long (two weeks a call at a million
	// articles over twenty years, eight at 100,000).
	weeksChunk    = 2048
	weeksChunkMax = 8
)

// floorDiv is a / b rounded down, as Lua's math.floor(a / b) is, also for
// dates before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// weekOf is the week an article published at t counts in. weekLua computes
// the same week from the index score (score(t) = -t.Unix()): the two must
// agree, which TestWeekGuidedPages checks across week boundaries.
func weekOf(t time.Time) int64 { return floorDiv(t.Unix(), weekSeconds) }

// keyWeeks is the hash that holds the count of filter f in week w.
func keyWeeks(w int64, f string) string {
	return keyWeeksPrefix + strconv.FormatInt(floorDiv(w, weeksPerKey), 10) + ":" + f
}

// weekCounter is one counter an article counts in: its week (the field)
// in the hash of one filter.
type weekCounter struct {
	key, field string
}

// weekCounterOf is the counter of counts field f (countField) in week w.
func weekCounterOf(w int64, f string) weekCounter {
	return weekCounter{key: keyWeeks(w, f), field: strconv.FormatInt(w, 10)}
}

// articleWeeks are the week counters of a listed article: one per filter
// of articleCounts, in the week of its publication. Every path that lists
// or unlists an article moves them through weekCounterOf: this function
// (Change.count) or, for a run of new articles, tallyCounters
// (newFirstPublish).
func articleWeeks(a *content.Article) []weekCounter {
	w := weekOf(a.PublishedAt)
	filters := articleCounts(a)
	out := make([]weekCounter, len(filters))
	for i, f := range filters {
		out[i] = weekCounterOf(w, f)
	}
	return out
}

// weekLua declares, for the scripts, weekOfScore(score), the week of an
// index score (weekOf), and weeksKey(week, filter) (keyWeeks).
var weekLua = fmt.Sprintf(`
local weekSeconds, weeksPerKey = %d, %d
local function weekOfScore(s) return math.floor(-s / weekSeconds) + 0 end
local function weeksKey(w, f) return '%s' .. (math.floor(w / weeksPerKey) + 0) .. ':' .. f end
`, weekSeconds, weeksPerKey, keyWeeksPrefix)

// weeksScript computes the week counters of weeks ARGV[1] down to ARGV[2]
// from the index sets, atomically: each counter is exact when written and
// every later change moves it. The other arguments are the sections, the
// audiences and the countries, each list preceded by its length. The
// counters of the weeks' articles are overwritten, whatever the changes
// made before left there. A counter of a filter with no article in a week
// needs no writing: it is zero already, since a change moves a counter
// with its article and a counter that would fall below one is deleted
// (the change script's wincr), so a positive counter means an article
// that came into the week since, and is still there.
var weeksScript = redis.NewScript(weekLua + `
local hi, lo = tonumber(ARGV[1]), tonumber(ARGV[2])
local i = 3
local function list()
  local n = tonumber(ARGV[i])
  local t = {}
  for j = i + 1, i + n do t[#t+1] = ARGV[j] end
  i = i + 1 + n
  return t
end
local sections, audiences, countries = list(), list(), list()
local idx = 'iw:{content}:idx:'
local minS, maxS = -(hi + 1) * weekSeconds + 1, -lo * weekSeconds
-- Every article of the weeks with its values; each has one section.
local art = {}
for _, s in ipairs(sections) do
  local r = redis.call('ZRANGE', idx .. 'section:' .. s, minS, maxS, 'BYSCORE', 'WITHSCORES')
  for j = 1, #r, 2 do art[r[j]] = {w = weekOfScore(tonumber(r[j+1])), s = s, a = {}, c = {}} end
end
-- Then their audiences (field a) and countries (field c).
for _, g in ipairs({{'audience:', audiences, 'a'}, {'country:', countries, 'c'}}) do
  for _, v in ipairs(g[2]) do
    for _, m in ipairs(redis.call('ZRANGE', idx .. g[1] .. v, minS, maxS, 'BYSCORE')) do
      local t = art[m]
      if t then t[g[3]][#t[g[3]]+1] = v end
    end
  end
end
-- The same filters as articleCounts (counts.go).
local counts = {}
local function inc(f, w)
  local t = counts[f]
  if not t then t = {}; counts[f] = t end
  t[w] = (t[w] or 0) + 1
end
for _, t in pairs(art) do
  for _, au in ipairs(t.a) do
    inc('s=' .. t.s .. '&a=' .. au .. '&c=', t.w)
    for _, cc in ipairs(t.c) do
      inc('s=&a=' .. au .. '&c=' .. cc, t.w)
      inc('s=' .. t.s .. '&a=' .. au .. '&c=' .. cc, t.w)
    end
  end
  for _, cc in ipairs(t.c) do inc('s=' .. t.s .. '&a=&c=' .. cc, t.w) end
end
for f, t in pairs(counts) do
  for w, n in pairs(t) do redis.call('HSET', weeksKey(w, f), w, n) end
end
return 1
`)

// backfillWeeks computes the week counters of every week that holds
// articles, a few weeks per call (weeksChunk), newest first, unless they are
// ready: once per store, the first sync of one written before the week
// counters existed. A change made meanwhile moves the counters of its
// week, which its chunk then overwrites from the sets if it has not run
// yet; a week with no articles when the backfill starts has counters at
// zero, since a counter is only ever moved with its article and a deleted
// field stands for zero, so an article listed there later counts exactly.
// Pages ignore the counters until the flag is set.
func (p *Publisher) backfillWeeks(ctx context.Context, countries []*content.Country) error {
	rdb := p.Store.rdb
	ok, err := rdb.HExists(ctx, keyCounts, weeksReady).Result()
	if err != nil {
		return fmt.Errorf("store: reading the week counters' state: %w", err)
	}
	if ok {
		return nil
	}
	newest, err := rdb.ZRangeWithScores(ctx, keyIndexAll, 0, 0).Result()
	if err != nil {
		return fmt.Errorf("store: reading the newest article: %w", err)
	}
	oldest, err := rdb.ZRangeWithScores(ctx, keyIndexAll, -1, -1).Result()
	if err != nil {
		return fmt.Errorf("store: reading the oldest article: %w", err)
	}
	if len(newest) > 0 && len(oldest) > 0 {
		values := []any{len(content.Sections)}
		for _, s := range content.Sections {
			values = append(values, s)
		}
		values = append(values, len(content.Audiences))
		for _, au := range content.Audiences {
			values = append(values, au)
		}
		values = append(values, len(countries))
		for _, cty := range countries {
			values = append(values, cty.Code)
		}
		n, err := rdb.ZCard(ctx, keyIndexAll).Result()
		if err != nil {
			return fmt.Errorf("store: counting articles: %w", err)
		}
		top, bottom := floorDiv(int64(-newest[0].Score), weekSeconds), floorDiv(int64(-oldest[0].Score), weekSeconds)
		step := min(weeksChunkMax, max(1, weeksChunk*(top-bottom+1)/max(n, 1)))
		for hi := top; hi >= bottom; hi -= step {
			args := append([]any{hi, hi - step + 1}, values...)
			if err := weeksScript.Run(ctx, rdb, []string{keyCounts}, args...).Err(); err != nil {
				return fmt.Errorf("store: computing the week counters of weeks %d-%d: %w", hi-step+1, hi, err)
			}
		}
	}
	if err := rdb.HSet(ctx, keyCounts, weeksReady, "1").Err(); err != nil {
		return fmt.Errorf("store: marking the week counters ready: %w", err)
	}
	return nil
}
