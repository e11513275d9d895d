package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/redis/go-redis/v9"
)

// Countries returns every tracked country, ordered by code, its milestones
// citing only published articles (publishedReports).
func (s *Store) Countries(ctx context.Context) ([]*content.Country, error) {
	out, err := hashAll(ctx, s, keyCountries, func(c *content.Country) string { return c.Code })
	if err != nil {
		return nil, err
	}
	return out, s.publishedReports(ctx, out)
}

// Country returns one country by lowercase code, its milestones citing
// only published articles (publishedReports).
func (s *Store) Country(ctx context.Context, code string) (*content.Country, error) {
	c, err := hashOne[content.Country](ctx, s, keyCountries, code)
	if err != nil {
		return nil, err
	}
	return c, s.publishedReports(ctx, []*content.Country{c})
}

// publishedReports drops from the countries' milestones every report of an
// article that is not published: retracted since the editors cited it, or
// not stored yet. A milestone's reports are resolved from content/ when a
// country is synced, but whether an article is published lives in Redis
// alone (docs/decisions.md, retraction and correction), so it is read
// here, where every reader of a country gets it: the index of all
// published articles holds exactly the published slugs, and one ZMSCORE
// asks it about every report at once. An article's change purges
// TagMilestones, the key of every answer that shows reports.
func (s *Store) publishedReports(ctx context.Context, countries []*content.Country) error {
	var slugs []any
	seen := map[string]bool{}
	for _, c := range countries {
		for i := range c.Milestones {
			for _, r := range c.Milestones[i].Reports {
				if !seen[r.Slug] {
					seen[r.Slug] = true
					slugs = append(slugs, r.Slug)
				}
			}
		}
	}
	if len(slugs) == 0 {
		return nil
	}
	// ZMSCORE answers nil for a missing member; go-redis's ZMScore would
	// read that as the score 0.
	scores, err := s.rdb.Do(ctx, append([]any{"ZMSCORE", keyIndexAll}, slugs...)...).Slice()
	if err != nil {
		return fmt.Errorf("store: reading which cited articles are published: %w", err)
	}
	published := make(map[string]bool, len(slugs))
	for i, sc := range scores {
		if sc != nil && i < len(slugs) {
			published[slugs[i].(string)] = true
		}
	}
	for _, c := range countries {
		for i := range c.Milestones {
			m := &c.Milestones[i]
			m.Reports = slices.DeleteFunc(m.Reports, func(r content.ArticleRef) bool { return !published[r.Slug] })
		}
	}
	return nil
}

// CountriesByCode returns the tracked countries among codes, ordered by code,
// in one HMGET: an article page names two or three countries, and decoding
// the whole registry with its milestones per page was most of a page's
// cost (docs/scale.md).
func (s *Store) CountriesByCode(ctx context.Context, codes []string) ([]*content.Country, error) {
	out, err := hashSome[content.Country](ctx, s, keyCountries, codes)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *content.Country) int { return cmp.Compare(a.Code, b.Code) })
	return out, s.publishedReports(ctx, out)
}

// SpecsBySlug returns the tracked specifications among slugs, in their
// order, in one HMGET.
func (s *Store) SpecsBySlug(ctx context.Context, slugs []string) ([]*content.Spec, error) {
	return hashSome[content.Spec](ctx, s, keySpecs, slugs)
}

// Specs returns every tracked specification, ordered by slug.
func (s *Store) Specs(ctx context.Context) ([]*content.Spec, error) {
	return hashAll(ctx, s, keySpecs, func(sp *content.Spec) string { return sp.Slug })
}

// Spec returns one specification by slug.
func (s *Store) Spec(ctx context.Context, slug string) (*content.Spec, error) {
	return hashOne[content.Spec](ctx, s, keySpecs, slug)
}

// synonymsField is the one field of keySynonyms.
const synonymsField = "terms"

// Synonyms returns the editors' synonym groups for /ask; none before the
// first sync.
func (s *Store) Synonyms(ctx context.Context) ([][]string, error) {
	groups, err := hashOne[[][]string](ctx, s, keySynonyms, synonymsField)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return *groups, nil
}

// Sources returns the registry of cited publishers, ordered by slug.
func (s *Store) Sources(ctx context.Context) ([]*content.Source, error) {
	return hashAll(ctx, s, keySources, func(src *content.Source) string { return src.Slug })
}

func hashAll[T any](ctx context.Context, s *Store, key string, id func(*T) string) ([]*T, error) {
	m, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", key, err)
	}
	out := make([]*T, 0, len(m))
	for field, raw := range m {
		v := new(T)
		if err := json.Unmarshal([]byte(raw), v); err != nil {
			return nil, fmt.Errorf("store: decoding %s %q: %w", key, field, err)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *T) int { return cmp.Compare(id(a), id(b)) })
	return out, nil
}

// hashSome decodes the fields of key among fields, in their order, leaving
// out those that are absent; a field named twice is decoded once.
func hashSome[T any](ctx context.Context, s *Store, key string, fields []string) ([]*T, error) {
	var seen []string
	for _, f := range fields {
		if !slices.Contains(seen, f) {
			seen = append(seen, f)
		}
	}
	if fields = seen; len(fields) == 0 {
		return nil, nil
	}
	vals, err := s.rdb.HMGet(ctx, key, fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", key, err)
	}
	out := make([]*T, 0, len(vals))
	for i, raw := range vals {
		str, ok := raw.(string)
		if !ok {
			continue
		}
		v := new(T)
		if err := json.Unmarshal([]byte(str), v); err != nil {
			return nil, fmt.Errorf("store: decoding %s %q: %w", key, fields[i], err)
		}
		out = append(out, v)
	}
	return out, nil
}

func hashOne[T any](ctx context.Context, s *Store, key, field string) (*T, error) {
	raw, err := s.rdb.HGet(ctx, key, field).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading %s %q: %w", key, field, err)
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("store: decoding %s %q: %w", key, field, err)
	}
	return v, nil
}

// Newsletter is one sent weekly issue (docs/decisions.md, newsletter).
type Newsletter struct {
	Week     string    `json:"week"`
	Title    string    `json:"title"`
	Intro    string    `json:"intro,omitempty"`
	SentAt   time.Time `json:"sent_at"`
	Articles []string  `json:"articles"`
}

// Newsletter returns one sent issue by week ("2026-w47").
func (s *Store) Newsletter(ctx context.Context, week string) (*Newsletter, error) {
	raw, err := s.rdb.Get(ctx, keyNewsletter(week)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading newsletter %s: %w", week, err)
	}
	var n Newsletter
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("store: decoding newsletter %s: %w", week, err)
	}
	return &n, nil
}

// Newsletters returns the most recent sent issues, newest first.
func (s *Store) Newsletters(ctx context.Context, limit int) ([]*Newsletter, error) {
	weeks, err := s.rdb.ZRevRange(ctx, keyNewsletters, 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("store: listing newsletters: %w", err)
	}
	out := make([]*Newsletter, 0, len(weeks))
	for _, w := range weeks {
		n, err := s.Newsletter(ctx, w)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
