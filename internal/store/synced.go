package store

import (
	"context"
	"fmt"
)

// keySynced maps an article's slug to the digest of the content file it was
// last published from (see Publisher users such as iwctl sync): a later sync
// skips the files whose digest has not moved instead of parsing them again.
const keySynced = "iw:{content}:synced"

// syncedBatch bounds the fields one HSCAN or HSET moves, so a million-entry
// hash never blocks Redis in one command.
const syncedBatch = 5000

// SyncedDigests returns every recorded file digest, by slug.
func (s *Store) SyncedDigests(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, keySynced, cursor, "*", syncedBatch).Result()
		if err != nil {
			return nil, fmt.Errorf("store: reading synced digests: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// SetSyncedDigests records the digests of files whose articles are now
// stored exactly as the files say. It is written after the articles: a sync
// that stops in between leaves files that are parsed again next time, never
// a digest for content that is not stored.
func (s *Store) SetSyncedDigests(ctx context.Context, digests map[string]string) error {
	batch := make([]any, 0, 2*syncedBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := s.rdb.HSet(ctx, keySynced, batch...).Err(); err != nil {
			return fmt.Errorf("store: recording synced digests: %w", err)
		}
		batch = batch[:0]
		return nil
	}
	for slug, d := range digests {
		if batch = append(batch, slug, d); len(batch) == 2*syncedBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
