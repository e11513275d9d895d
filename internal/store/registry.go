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

// Countries returns every tracked country, ordered by code.
func (s *Store) Countries(ctx context.Context) ([]*content.Country, error) {
	return hashAll(ctx, s, keyCountries, func(c *content.Country) string { return c.Code })
}

// Country returns one country by lowercase code.
func (s *Store) Country(ctx context.Context, code string) (*content.Country, error) {
	return hashOne[content.Country](ctx, s, keyCountries, code)
}

// CountriesByCode returns the tracked countries among codes, ordered by code,
// in one HMGET: an article page names two or three countries, and decoding
// the whole registry with its milestones per page was most of a page's
// cost (docs/scale.md).
func (s *Store) CountriesByCode(ctx context.Context, codes []string) ([]*content.Country, error) {
	out, err := hashSome[content.Country](ctx, s, keyCountries, codes)
	slices.SortFunc(out, func(a, b *content.Country) int { return cmp.Compare(a.Code, b.Code) })
	return out, err
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
