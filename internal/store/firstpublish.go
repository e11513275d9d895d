package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/invalidation"
)

// firstPublishBatch bounds the articles of one firstPublish call: Lua's
// unpack takes at most about 8,000 values, and a ZADD of the index of all
// articles gets two per article.
const firstPublishBatch = 256

// firstPublishScript publishes a run of articles that are not in the store
// yet, as one atomic change (docs/decisions.md, "A first publish's records
// do not pass through its script") with the
// MSETNX of their records that follows it in the same transaction
// (firstPublish.queue): every record, index entry, sitemap entry and event
// of the run, one content version and one invalidation message. The change
// script does the same per article; one call per run saves what each call
// and each command costs Redis beyond the work itself (each index gets one
// ZADD of the run's members, each sitemap file one HSET), which was most
// of a first publish's Redis time. The records do not pass through the
// script: Redis makes every script argument a Lua string, hashing each of
// its bytes, and the records are three quarters of a run's bytes. The
// arguments are laid out so that each command takes a range of them as
// they are (unpack), without Lua building tables.
//
// KEYS[1] is the version, KEYS[2] the events stream, KEYS[3] the change
// times (changedLua), KEYS[4] to KEYS[n+3] the n articles' keys, then the
// index keys. ARGV[1] is the
// invalidation channel, ARGV[2] the surrogate keys as a JSON array, ARGV[3]
// the capacity of a sitemap file, ARGV[4] n, ARGV[5] the number of
// indexes; then n pairs (slug, sitemap entry), n events of four arguments
// (id, type, created_at, data), per index its key, the number of its
// members m and m pairs (score, slug), then the position of the counts key
// in KEYS, the number of counters and as many pairs (counter, increment)
// (counts.go), then the number of week counters and as many triples
// (position of its key in KEYS, week, increment) (weeks.go). It returns
// the new content version, or -1, writing nothing, when one of the
// articles exists already: the MSETNX after it then writes nothing either,
// since it checks the same keys and nothing runs between the two.
var firstPublishScript = redis.NewScript(changedLua + `
local smcap = tonumber(ARGV[3])
local smtags = {}
` + sitemapLua + `
local n, g = tonumber(ARGV[4]), tonumber(ARGV[5])
if redis.call('EXISTS', unpack(KEYS, 4, n + 3)) > 0 then return -1 end
local i = 6
smaddall(i, n)
i = i + 2 * n
local v = redis.call('INCR', KEYS[1])
for _ = 1, n do
  redis.call('XADD', KEYS[2], '*', 'id', ARGV[i], 'type', ARGV[i+1], 'created_at', ARGV[i+2], 'data', ARGV[i+3])
  i = i + 4
end
for _ = 1, g do
  local m = tonumber(ARGV[i+1])
  redis.call('ZADD', ARGV[i], unpack(ARGV, i + 2, i + 1 + 2 * m))
  i = i + 2 + 2 * m
end
local counts = KEYS[tonumber(ARGV[i])]
for j = i + 2, i + 2 * tonumber(ARGV[i+1]), 2 do
  redis.call('HINCRBY', counts, ARGV[j], ARGV[j+1])
end
i = i + 2 + 2 * tonumber(ARGV[i+1])
for j = i + 1, i + 3 * tonumber(ARGV[i]), 3 do
  redis.call('HINCRBY', KEYS[tonumber(ARGV[j])], ARGV[j+1], ARGV[j+2])
end
local tags = ARGV[2]
if #smtags > 0 then
  tags = string.sub(tags, 1, -2) .. ',"' .. table.concat(smtags, '","') .. '"]'
end
recordChanged(tags)
redis.call('PUBLISH', ARGV[1], '{"version":' .. v .. ',"keys":' .. tags .. '}')
return v
`)

// firstPublish is one call of firstPublishScript and the MSETNX of the
// run's records.
type firstPublish struct {
	keys    []string
	args    []any
	records []any // pairs (article key, record)
}

// queue adds the run's writes to tx, a transaction: the script, then the
// records. The script goes by EVAL, not EVALSHA: a script missing from
// Redis's cache (a restart, SCRIPT FLUSH) would fail inside the
// transaction while the MSETNX after it stored the records with nothing
// else. The body costs a few bytes an article.
func (fp *firstPublish) queue(ctx context.Context, tx redis.Pipeliner) (*redis.Cmd, *redis.BoolCmd) {
	return firstPublishScript.Eval(ctx, tx, fp.keys, fp.args...), tx.MSetNX(ctx, fp.records...)
}

// newFirstPublish renders the call that publishes articles (at most
// firstPublishBatch) as new: docs are their records, evs their
// article.published events.
func (p *Publisher) newFirstPublish(articles []*content.Article, docs [][]byte, evs []events.Event) *firstPublish {
	c := p.newChange() // for its key positions and sitemap capacity
	n := len(articles)
	records := make([]any, 0, 2*n)
	for i, a := range articles {
		k := keyArticle(a.Slug)
		c.key(k)
		records = append(records, k, docs[i])
	}
	tags := map[string]bool{}
	type index struct {
		key     string
		members []any
	}
	var indexes []*index
	// The indexes by filter and value ("" for the index of all), so that
	// an index's key is written once per run, not per article.
	type indexOf struct{ filter, value string }
	byFilter := map[indexOf]*index{}
	add := func(filter, value string, sc, slug any) {
		ix := byFilter[indexOf{filter, value}]
		if ix == nil {
			key := keyIndexAll
			if filter != "" {
				key = keyIndex(filter, value)
			}
			c.key(key)
			ix = &index{key: key}
			byFilter[indexOf{filter, value}] = ix
			indexes = append(indexes, ix)
		}
		ix.members = append(ix.members, sc, slug)
	}
	args := make([]any, 5, 5+6*n+14*n)
	args[0], args[2], args[3] = invalidation.Channel, c.sitemapCap(), n
	for _, a := range articles {
		args = append(args, a.Slug, sitemapEntry(a))
	}
	for i, a := range articles {
		e := evs[i]
		args = append(args, e.ID, e.Type, e.CreatedAt.Format(time.RFC3339Nano), []byte(e.Data))
		for _, t := range articleTags(a) {
			tags[t] = true
		}
		// Boxed once for all the article's indexes.
		var sc, slug any = score(a.PublishedAt), a.Slug
		add("", "", sc, slug)
		add("section", a.Section, sc, slug)
		for _, au := range a.Audience {
			add("audience", au, sc, slug)
		}
		for _, cc := range a.Countries {
			add("country", cc, sc, slug)
		}
	}
	for _, ix := range indexes {
		args = append(args, ix.key, len(ix.members)/2)
		args = append(args, ix.members...)
	}
	fields, counts, weeks, weekCounts := tallyCounters(articles)
	args = append(args, c.key(keyCounts), len(fields))
	for _, f := range fields {
		args = append(args, f, counts[f])
	}
	args = append(args, len(weeks))
	for _, w := range weeks {
		wc := weekCounterOf(w.week, w.filter)
		args = append(args, c.key(wc.key), wc.field, weekCounts[w])
	}
	list := make([]string, 0, len(tags))
	for t := range tags {
		list = append(list, t)
	}
	tagJSON, _ := json.Marshal(list) // strings always encode
	args[1], args[4] = tagJSON, len(indexes)
	return &firstPublish{keys: c.keys, args: args, records: records}
}

// filterWeek is a week counter (weeks.go) before its key is written out.
type filterWeek struct {
	week   int64
	filter string
}

// tallyCounters returns the counters (counts.go) and the week counters
// (weeks.go) that a run of articles moves, each in the order first met, and
// by how much: the counters of articleCounts and the week counters of
// articleWeeks, with each counter's name written once. A run is a few days of
// articles (a sync goes oldest first), so most of its articles share their
// weeks' counters, whose keys are only written once.
func tallyCounters(articles []*content.Article) (fields []string, counts map[string]int, weeks []filterWeek, weekCounts map[filterWeek]int) {
	counts, weekCounts = map[string]int{}, map[filterWeek]int{}
	// The run's articles share a few filters: each field is written once.
	field := map[ArticleFilter]string{}
	for _, a := range articles {
		w := weekOf(a.PublishedAt)
		eachCount(a, func(af ArticleFilter) {
			f, ok := field[af]
			if !ok {
				f = countField(af)
				field[af] = f
			}
			if counts[f] == 0 {
				fields = append(fields, f)
			}
			counts[f]++
			fw := filterWeek{week: w, filter: f}
			if weekCounts[fw] == 0 {
				weeks = append(weeks, fw)
			}
			weekCounts[fw]++
		})
	}
	return fields, counts, weeks, weekCounts
}
