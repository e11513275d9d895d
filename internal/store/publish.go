package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/redis/go-redis/v9"
)

// Publisher applies editorial operations (sync, retract, restore, newsletter)
// to the store. Each operation is one atomic Change carrying its event.
type Publisher struct {
	Store *Store
	// SiteRoot is {site_root}, used for the URLs inside event data.
	SiteRoot string
	// Now is the clock; tests set it.
	Now func() time.Time
	// SitemapURLs is the capacity of an article sitemap file; 0 means
	// SitemapURLs. Tests lower it to see files split.
	SitemapURLs int
	// Prune, when not nil, makes SyncRegistries remove the stored
	// registry entries that the corpus it is given no longer holds: the
	// corpus is then a whole content tree, as `iwctl sync` publishes.
	// Library callers that sync part of a tree (tests, generators) leave
	// it nil, and the entries they do not name stay stored.
	Prune *Prune
}

// Prune is what SyncRegistries needs to remove registry entries safely.
type Prune struct {
	// Unfiled are the slugs of the published articles that have no file
	// in the tree: they stay published (a sync never retracts), so an
	// entry one of them cites must stay too. An article that has a file
	// cannot cite a removed entry: content.Load refuses it.
	Unfiled []string
}

// newChange starts a change that keeps p's sitemap capacity.
func (p *Publisher) newChange() *Change {
	c := NewChange()
	c.sitemapURLs = p.SitemapURLs
	return c
}

// Surrogate keys (docs/decisions.md, cache headers) that content changes purge.
const (
	TagList  = "list"
	TagFeeds = "feeds"
	// TagSitemaps marks the sitemap index and the pages sitemap; each
	// article sitemap file has its own key (TagSitemapFile).
	TagSitemaps = "sitemaps"
	// TagNewsSitemap marks the news sitemap, which any article change may
	// move.
	TagNewsSitemap = "news-sitemap"
	TagSite        = "site"
	TagCountries   = "countries"
	// TagMilestones marks every answer that shows the articles reporting
	// the countries' milestones (the country resources, the timeline, its
	// twin and the calendar): which of them are shown depends on whether
	// each article is published (Store.Countries), so any article's
	// change purges it, as it purges the listings.
	TagMilestones = "milestones"
	TagSpecs      = "specs"
	TagSources    = "sources"
	TagNewsletter = "newsletter"
	// TagSynonyms is purged when the editors' synonym groups change; /ask
	// rebuilds its index on it.
	TagSynonyms = "synonyms"
	// TagIndex marks documents that depend on configuration only (the
	// service index, the discovery documents, the developer portal): no
	// content change purges them; a deploy replaces them.
	TagIndex = "index"
)

// TagArticle and friends build the per-item surrogate keys.
func TagArticle(slug string) string     { return "article:" + slug }
func TagSection(s string) string        { return "section:" + s }
func TagAudience(a string) string       { return "audience:" + a }
func TagCountry(cc string) string       { return "country:" + cc }
func TagSpec(slug string) string        { return "spec:" + slug }
func TagNewsletterWeek(w string) string { return "newsletter:" + w }

// articleTags are the surrogate keys an article's change touches.
func articleTags(a *content.Article) []string {
	tags := []string{TagArticle(a.Slug), TagList, TagSection(a.Section), TagFeeds, TagNewsSitemap, TagSite, TagMilestones}
	for _, au := range a.Audience {
		tags = append(tags, TagAudience(au))
	}
	for _, cc := range a.Countries {
		tags = append(tags, TagCountry(cc))
	}
	return tags
}

func index(c *Change, a *content.Article) {
	sc := score(a.PublishedAt)
	c.zadd(keyIndexAll, sc, a.Slug)
	c.sitemapAdd(a)
	c.zadd(keyIndex("section", a.Section), sc, a.Slug)
	for _, au := range a.Audience {
		c.zadd(keyIndex("audience", au), sc, a.Slug)
	}
	for _, cc := range a.Countries {
		c.zadd(keyIndex("country", cc), sc, a.Slug)
	}
	c.count(a, 1)
}

func unindex(c *Change, a *content.Article) {
	c.zrem(keyIndexAll, a.Slug)
	c.sitemapDel(a.Slug)
	c.zrem(keyIndex("section", a.Section), a.Slug)
	for _, au := range a.Audience {
		c.zrem(keyIndex("audience", au), a.Slug)
	}
	for _, cc := range a.Countries {
		c.zrem(keyIndex("country", cc), a.Slug)
	}
	c.count(a, -1)
}

// Outcome says what an operation did.
type Outcome struct {
	// Changed is false when the store already held exactly this state.
	Changed bool
	// Event is the kind of event emitted, or "".
	Event string
	// Version is the content version after the change.
	Version int64
	// Removed is true when the change deleted the entry: a registry entry
	// the content tree no longer holds (Publisher.Prune).
	Removed bool
	// MovedFrom and MovedTo are an article's old and new page paths when
	// the change moved it: its published_at went to another month, and the
	// old path now answers 301 (docs/decisions.md, "Site pages at the other
	// form of their address"). No event kind says so; a publisher's report
	// can.
	MovedFrom, MovedTo string
}

// retry runs op until it does not hit ErrConflict, a few times at most.
func retry(op func() (Outcome, error)) (Outcome, error) {
	for i := 0; ; i++ {
		out, err := op()
		if !errors.Is(err, ErrConflict) || i == 4 {
			return out, err
		}
	}
}

func (p *Publisher) articleEvent(kind string, rec *ArticleRecord) (events.Event, error) {
	data := events.NewArticleData(&rec.Article, p.SiteRoot, rec.RetractedAt, rec.RetractionReason)
	return events.New(kind, p.Now(), data)
}

// SyncArticle stores a as the editors wrote it. A new article is published
// (article.published); a new correction emits article.corrected; other edits
// are stored silently; an unchanged article changes nothing. A retracted
// article stays retracted: its text is updated but it is not re-listed.
func (p *Publisher) SyncArticle(ctx context.Context, a *content.Article) (Outcome, error) {
	return retry(func() (Outcome, error) {
		cur, raw, err := p.Store.articleRaw(ctx, a.Slug)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Outcome{}, err
		}
		c, kind, err := p.articleChange(a, cur, raw, nil)
		if c == nil || err != nil {
			return Outcome{}, err
		}
		v, err := p.Store.Apply(ctx, c)
		o := Outcome{Changed: true, Event: kind, Version: v}
		o.MovedFrom, o.MovedTo = moved(cur, a)
		return o, err
	})
}

// moved returns cur's path and a's when a, cur's next state, is at another
// path; "" for a new article (cur nil) or one that stays where it was.
func moved(cur *ArticleRecord, a *content.Article) (from, to string) {
	if cur == nil {
		return "", ""
	}
	if from, to = cur.Article.Path(), a.Path(); from != to {
		return from, to
	}
	return "", ""
}

// articleChange is the change that stores a over cur (nil when the article
// is new), whose stored bytes are raw, and the event it emits; a nil change
// when the store already holds exactly a. published, when not nil, is a's
// record as a new article, already encoded.
func (p *Publisher) articleChange(a *content.Article, cur *ArticleRecord, raw, published []byte) (*Change, string, error) {
	next := &ArticleRecord{Article: *a, State: StatePublished}
	if cur != nil {
		next.State, next.RetractedAt, next.RetractionReason = cur.State, cur.RetractedAt, cur.RetractionReason
	}
	doc := published
	if cur != nil || doc == nil {
		var err error
		if doc, err = json.Marshal(next); err != nil {
			return nil, "", fmt.Errorf("store: encoding article %q: %w", a.Slug, err)
		}
	}
	if cur != nil && bytes.Equal(doc, raw) {
		return nil, "", nil
	}
	c := p.newChange()
	c.expectValue(keyArticle(a.Slug), raw)
	c.set(keyArticle(a.Slug), doc)
	c.Invalidate(articleTags(a)...)
	kind := ""
	switch {
	case cur == nil:
		kind = events.ArticlePublished
	case !next.Retracted() && gainedCorrection(cur.Corrections, a.Corrections):
		kind = events.ArticleCorrected
	}
	if cur != nil {
		c.Invalidate(articleTags(&cur.Article)...)
		if !cur.Retracted() {
			unindex(c, &cur.Article)
		}
	}
	if !next.Retracted() {
		index(c, a)
	}
	if kind != "" {
		ev, err := p.articleEvent(kind, next)
		if err != nil {
			return nil, "", err
		}
		c.Emit(ev)
	}
	return c, kind, nil
}

// gainedCorrection reports whether next holds a correction prev does not
// (article.corrected: a published article gained a correction;
// docs/decisions.md, "Publishing and events"). A correction is known by
// its date: one whose date more entries of next carry than of prev is
// new, so replacing a correction by one of another date in the same edit
// emits, while a fix to an existing correction's text, its date kept, is a
// silent edit. Comparing the counts missed the replacement.
func gainedCorrection(prev, next []content.Correction) bool {
	seen := make(map[int64]int, len(prev))
	for _, c := range prev {
		seen[c.Date.UnixNano()]++
	}
	for _, c := range next {
		k := c.Date.UnixNano()
		if seen[k] == 0 {
			return true
		}
		seen[k]--
	}
	return false
}

// Retract pulls a published article from every list (article.retracted). The
// article then answers 410 gone with reason. Retracting a retracted article
// with the same reason changes nothing; with another reason it corrects the
// reason its 410 gives, keeping retracted_at, and emits no event: no event
// kind of the contract means "a retraction notice changed" (article.retracted
// is an article pulled, and it was pulled already; docs/decisions.md,
// "Publishing and events").
func (p *Publisher) Retract(ctx context.Context, slug, reason string) (Outcome, error) {
	if reason == "" {
		return Outcome{}, errors.New("store: a retraction needs a reason")
	}
	now := p.Now().UTC().Truncate(time.Second)
	return p.setState(ctx, slug, StateRetracted, &now, reason, events.ArticleRetracted)
}

// Restore undoes a retraction: the article is listed again and
// article.published is emitted, since it is published anew (see
// docs/decisions.md). Restoring a published article changes nothing.
func (p *Publisher) Restore(ctx context.Context, slug string) (Outcome, error) {
	return p.setState(ctx, slug, StatePublished, nil, "", events.ArticlePublished)
}

// setState moves an article to state, (un)listing it and emitting kind, unless
// it is in that state already.
func (p *Publisher) setState(ctx context.Context, slug, state string, at *time.Time, reason, kind string) (Outcome, error) {
	return retry(func() (Outcome, error) {
		cur, raw, err := p.Store.articleRaw(ctx, slug)
		if err != nil {
			return Outcome{}, err
		}
		next, emit := *cur, kind
		if cur.State == state {
			if state != StateRetracted || cur.RetractionReason == reason {
				return Outcome{}, nil
			}
			// A new reason for a retraction: only the notice changes.
			next.RetractionReason, emit = reason, ""
		} else {
			next.State, next.RetractedAt, next.RetractionReason = state, at, reason
		}
		doc, err := json.Marshal(&next)
		if err != nil {
			return Outcome{}, fmt.Errorf("store: encoding article %q: %w", slug, err)
		}
		c := p.newChange()
		c.expectValue(keyArticle(slug), raw)
		c.set(keyArticle(slug), doc)
		switch {
		case emit == "":
			// Still retracted: it stays out of every index.
		case next.Retracted():
			unindex(c, &cur.Article)
		default:
			index(c, &next.Article)
		}
		c.Invalidate(articleTags(&cur.Article)...)
		if emit != "" {
			ev, err := p.articleEvent(emit, &next)
			if err != nil {
				return Outcome{}, err
			}
			c.Emit(ev)
		}
		v, err := p.Store.Apply(ctx, c)
		return Outcome{Changed: true, Event: emit, Version: v}, err
	})
}

// SyncCountry stores a country; no event exists for countries.
func (p *Publisher) SyncCountry(ctx context.Context, cty *content.Country) (Outcome, error) {
	return p.syncHash(ctx, keyCountries, cty.Code, cty, nil, countryTags(cty.Code)...)
}

// countryTags are the surrogate keys a country's change purges.
func countryTags(cc string) []string {
	return []string{TagCountries, TagCountry(cc), TagFeeds, TagSite}
}

// SyncSource stores a registry entry; no event exists for sources.
func (p *Publisher) SyncSource(ctx context.Context, src *content.Source) (Outcome, error) {
	return p.syncHash(ctx, keySources, src.Slug, src, nil, sourceTags(src.Slug)...)
}

// sourceTags are the surrogate keys a source's change purges.
func sourceTags(string) []string { return []string{TagSources, TagSite} }

// SyncSynonyms stores the editors' synonym groups (aliases.yaml's terms); no
// event exists for them.
func (p *Publisher) SyncSynonyms(ctx context.Context, groups [][]string) (Outcome, error) {
	if groups == nil {
		groups = [][]string{}
	}
	return p.syncHash(ctx, keySynonyms, synonymsField, groups, nil, TagSynonyms)
}

// SyncSpec stores a specification. A tracked spec whose version or
// last_changed moved emits spec.updated; a newly tracked one does not.
func (p *Publisher) SyncSpec(ctx context.Context, sp *content.Spec) (Outcome, error) {
	updated := func(old []byte) (string, any, error) {
		if old == nil {
			return "", nil, nil
		}
		var prev content.Spec
		if err := json.Unmarshal(old, &prev); err != nil {
			return "", nil, fmt.Errorf("store: decoding spec %q: %w", sp.Slug, err)
		}
		if prev.Version == sp.Version && timeEqual(prev.LastChanged, sp.LastChanged) {
			return "", nil, nil
		}
		return events.SpecUpdated, sp.Public(), nil
	}
	return p.syncHash(ctx, keySpecs, sp.Slug, sp, updated, specTags(sp.Slug)...)
}

// specTags are the surrogate keys a specification's change purges.
func specTags(slug string) []string { return []string{TagSpecs, TagSpec(slug), TagSite} }

func timeEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// syncHash writes one registry entry when it differs, with the event that
// eventFor derives from the previous value (nil when there was none).
func (p *Publisher) syncHash(ctx context.Context, key, field string, v any, eventFor func(old []byte) (string, any, error), tags ...string) (Outcome, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return Outcome{}, fmt.Errorf("store: encoding %s %q: %w", key, field, err)
	}
	old, err := p.Store.rdb.HGet(ctx, key, field).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Outcome{}, fmt.Errorf("store: reading %s %q: %w", key, field, err)
	}
	if old != nil && bytes.Equal(old, doc) {
		return Outcome{}, nil
	}
	c := NewChange()
	c.hset(key, field, doc)
	c.Invalidate(tags...)
	kind := ""
	if eventFor != nil {
		k, data, err := eventFor(old)
		if err != nil {
			return Outcome{}, err
		}
		if k != "" {
			ev, err := events.New(k, p.Now(), data)
			if err != nil {
				return Outcome{}, err
			}
			c.Emit(ev)
			kind = k
		}
	}
	ver, err := p.Store.Apply(ctx, c)
	return Outcome{Changed: true, Event: kind, Version: ver}, err
}

// SyncCorpus publishes a whole content tree: the registries first, so no
// article refers to an entry not stored yet, then the articles oldest first,
// so events go out in publication order. report, if not nil, is told of
// every entry that changed.
func (p *Publisher) SyncCorpus(ctx context.Context, c *content.Corpus, report func(kind, id string, o Outcome)) error {
	if err := p.SyncRegistries(ctx, c, report); err != nil {
		return err
	}
	// c.Articles is newest first (content.Load's order).
	byAge := slices.Clone(c.Articles)
	slices.SortStableFunc(byAge, func(a, b *content.Article) int { return a.PublishedAt.Compare(b.PublishedAt) })
	return p.SyncArticles(ctx, byAge, nil, report)
}

// SyncRegistries publishes what a content tree holds besides its articles
// (sources, countries, specs, synonym groups), which the articles refer
// to: a sync stores them before any article. report is as SyncCorpus's.
// With p.Prune set it also removes the sources, countries and specs the
// tree no longer holds (reported with Outcome.Removed), unless a published
// article still cites one: then it returns an error naming the entry and
// the article, having written nothing.
func (p *Publisher) SyncRegistries(ctx context.Context, c *content.Corpus, report func(kind, id string, o Outcome)) error {
	var removals []removal
	if p.Prune != nil {
		var err error
		if removals, err = p.removals(ctx, c, p.Prune.Unfiled); err != nil {
			return err
		}
	}
	step := func(kind, id string, o Outcome, err error) error {
		if err != nil {
			return fmt.Errorf("store: syncing %s %s: %w", kind, id, err)
		}
		if o.Changed && report != nil {
			report(kind, id, o)
		}
		return nil
	}
	for _, s := range c.Sources {
		o, err := p.SyncSource(ctx, s)
		if err := step("source", s.Slug, o, err); err != nil {
			return err
		}
	}
	for _, cty := range c.Countries {
		o, err := p.SyncCountry(ctx, cty)
		if err := step("country", cty.Code, o, err); err != nil {
			return err
		}
	}
	for _, sp := range c.Specs {
		o, err := p.SyncSpec(ctx, sp)
		if err := step("spec", sp.Slug, o, err); err != nil {
			return err
		}
	}
	o, err := p.SyncSynonyms(ctx, c.Synonyms)
	if err := step("synonyms", synonymsField, o, err); err != nil {
		return err
	}
	for _, r := range removals {
		o, err := p.remove(ctx, r)
		if err := step(r.kind, r.id, o, err); err != nil {
			return err
		}
	}
	if err := p.backfillSitemaps(ctx); err != nil {
		return err
	}
	if err := p.backfillCounts(ctx, c.Countries); err != nil {
		return err
	}
	return p.backfillWeeks(ctx, c.Countries)
}
