package store

import (
	"context"
	"fmt"
)

// ArticlesBySlug reads the records of several articles in one round trip
// (one MGET: every article key shares the {content} hash tag, so the keys
// sit in one slot of a cluster too). The result is aligned with slugs: nil
// where no article has that slug. Retracted records are returned as they
// are; the caller decides what a retraction means to it.
func (s *Store) ArticlesBySlug(ctx context.Context, slugs []string) ([]*ArticleRecord, error) {
	if len(slugs) == 0 {
		return nil, nil
	}
	keys := make([]string, len(slugs))
	for i, slug := range slugs {
		keys[i] = keyArticle(slug)
	}
	docs, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading %d articles: %w", len(slugs), err)
	}
	out := make([]*ArticleRecord, len(slugs))
	for i, d := range docs {
		str, ok := d.(string)
		if !ok {
			continue // no such article
		}
		var rec ArticleRecord
		if err := decodeRecord([]byte(str), &rec); err != nil {
			return nil, fmt.Errorf("store: decoding article %q: %w", slugs[i], err)
		}
		out[i] = &rec
	}
	return out, nil
}
