package store

import (
	"context"
	"fmt"
)

// StoredArticle is an article record as stored, decoded on demand: a
// reader that knows these bytes already (the ask engine's cache of
// analysed texts) skips decoding them.
type StoredArticle []byte

// Decode decodes the record.
func (r StoredArticle) Decode() (*ArticleRecord, error) {
	var rec ArticleRecord
	if err := decodeRecord(r, &rec); err != nil {
		return nil, fmt.Errorf("store: decoding an article: %w", err)
	}
	return &rec, nil
}

// ArticlesBySlug reads the records of several articles in one round trip
// (one MGET: every article key shares the {content} hash tag, so the keys
// sit in one slot of a cluster too), undecoded. The result is aligned with
// slugs: nil where no article has that slug. Retracted records are
// returned as they are; the caller decides what a retraction means to it.
func (s *Store) ArticlesBySlug(ctx context.Context, slugs []string) ([]StoredArticle, error) {
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
	out := make([]StoredArticle, len(slugs))
	for i, d := range docs {
		if str, ok := d.(string); ok {
			out[i] = StoredArticle(str)
		}
	}
	return out, nil
}
