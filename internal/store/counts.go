package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/redis/go-redis/v9"
)

// The totals of listings filtered on two or three values (docs/decisions.md,
// "Filtered totals are counters"). Counting an intersection of index sets (ZINTERCARD) walks
// the smallest set whole: about 35 ms for section and audience at 100,000
// articles, ten times that at a million, on every such page. Instead every
// change that adds an article to the indexes or takes it out moves a
// counter per combination of its values, in the same atomic change, and a
// page reads its total with one HGET.
const (
	keyCounts = "iw:{content}:counts"
	// countsReady marks counters that are complete: set when they were
	// computed from the index sets (backfillCounts), before which a page
	// counts the intersection itself.
	countsReady = "ready"
)

// countField names the counter of a filter on two or more values, or "".
func countField(f ArticleFilter) string {
	n := 0
	for _, v := range []string{f.Section, f.Audience, f.Country} {
		if v != "" {
			n++
		}
	}
	if n < 2 {
		return ""
	}
	return "s=" + f.Section + "&a=" + f.Audience + "&c=" + f.Country
}

// articleCounts are the counters an article listed in the indexes counts
// in: every filter on two or three of its values.
func articleCounts(a *content.Article) []string {
	var out []string
	eachCount(a, func(f ArticleFilter) { out = append(out, countField(f)) })
	return out
}

// eachCount calls counter with the filter of each of articleCounts, in
// its order.
func eachCount(a *content.Article, counter func(ArticleFilter)) {
	audiences, countries := unique(a.Audience), unique(a.Countries)
	for _, au := range audiences {
		counter(ArticleFilter{Section: a.Section, Audience: au})
		for _, cc := range countries {
			counter(ArticleFilter{Audience: au, Country: cc})
			counter(ArticleFilter{Section: a.Section, Audience: au, Country: cc})
		}
	}
	for _, cc := range countries {
		counter(ArticleFilter{Section: a.Section, Country: cc})
	}
}

func unique(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// count moves the counters of a by delta, and its week counters
// (weeks.go).
func (c *Change) count(a *content.Article, delta int) {
	k := c.key(keyCounts)
	for _, f := range articleCounts(a) {
		c.ops = append(c.ops, changeOp{Op: "hincr", Key: k, A: f, B: delta})
	}
	for _, wc := range articleWeeks(a) {
		c.ops = append(c.ops, changeOp{Op: "wincr", Key: c.key(wc.key), A: wc.field, B: delta})
	}
}

// countsScript sets the counters of the filters in ARGV, three arguments
// each (section, audience, country, "" when not filtered), from the index
// sets: one ZINTERCARD each, over the smallest of its sets.
var countsScript = redis.NewScript(`
local prefix = 'iw:{content}:idx:'
for i = 1, #ARGV, 3 do
  local s, a, c = ARGV[i], ARGV[i+1], ARGV[i+2]
  local keys = {}
  if s ~= '' then keys[#keys+1] = prefix .. 'section:' .. s end
  if a ~= '' then keys[#keys+1] = prefix .. 'audience:' .. a end
  if c ~= '' then keys[#keys+1] = prefix .. 'country:' .. c end
  local n = redis.call('ZINTERCARD', #keys, unpack(keys))
  local f = 's=' .. s .. '&a=' .. a .. '&c=' .. c
  if n > 0 then redis.call('HSET', KEYS[1], f, n) else redis.call('HDEL', KEYS[1], f) end
end
return 1
`)

// countsChunk is how many counters one countsScript call computes: a call
// is atomic, so each counter is exact when set and every later change
// moves it, while no call holds Redis for long even at a million articles.
const countsChunk = 8

// backfillCounts computes the counters of every filter on two or three of
// the values of sections, audiences and countries, unless they are ready:
// once per store, the first sync of one written before the counters
// existed.
func (p *Publisher) backfillCounts(ctx context.Context, countries []*content.Country) error {
	ok, err := p.Store.rdb.HExists(ctx, keyCounts, countsReady).Result()
	if err != nil {
		return fmt.Errorf("store: reading the listing counters: %w", err)
	}
	if ok {
		return nil
	}
	var filters []any
	for _, au := range content.Audiences {
		for _, s := range content.Sections {
			filters = append(filters, s, au, "")
		}
		for _, cty := range countries {
			filters = append(filters, "", au, cty.Code)
			for _, s := range content.Sections {
				filters = append(filters, s, au, cty.Code)
			}
		}
	}
	for _, s := range content.Sections {
		for _, cty := range countries {
			filters = append(filters, s, "", cty.Code)
		}
	}
	for lo := 0; lo < len(filters); lo += 3 * countsChunk {
		if err := countsScript.Run(ctx, p.Store.rdb, []string{keyCounts}, filters[lo:min(lo+3*countsChunk, len(filters))]...).Err(); err != nil {
			return fmt.Errorf("store: computing the listing counters: %w", err)
		}
	}
	if err := p.Store.rdb.HSet(ctx, keyCounts, countsReady, "1").Err(); err != nil {
		return fmt.Errorf("store: marking the listing counters ready: %w", err)
	}
	return nil
}
