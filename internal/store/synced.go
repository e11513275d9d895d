package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The digests of the content files each article was last published from
// (see Publisher users such as iwctl sync): a later sync skips the files
// whose digest has not moved instead of parsing them again.
//
// They are kept small (docs/decisions.md, "Sync digests are kept compact"):
// a digest is
// recorded under 8 bytes of the hash of its article's slug rather than
// the slug, in one of syncedBuckets hashes chosen by more of that hash, so
// that each bucket stays within Redis's compact (listpack) encoding up to
// a few million articles: about 30 bytes an article instead of about 130
// in one large hash of slugs. Two slugs sharing those 8 bytes cost at most
// a file parsed again: a digest is only ever compared with the digest of
// the file at hand.
const (
	keySyncedPrefix = "iw:{content}:synced:"
	// keySyncedLegacy is the single hash of slugs the digests lived in
	// before; it is dropped at the next recording.
	keySyncedLegacy = "iw:{content}:synced"
	syncedBuckets   = 4096
)

// syncedBatch bounds the buckets one pipeline reads, or the fields one HSET
// writes.
const syncedBatch = 256

func keySynced(b int) string { return keySyncedPrefix + strconv.Itoa(b) }

// syncedField returns the bucket and field of slug's digest.
func syncedField(slug string) (bucket int, field string) {
	h := sha256.Sum256([]byte(slug))
	return int(binary.BigEndian.Uint16(h[:2]) % syncedBuckets), string(h[2:10])
}

// SyncedDigests are the recorded file digests.
type SyncedDigests map[string]string

// Of returns the digest recorded for slug, or "".
func (d SyncedDigests) Of(slug string) string {
	b, f := syncedField(slug)
	return d[strconv.Itoa(b)+":"+f]
}

// SyncedDigests returns every recorded file digest.
func (s *Store) SyncedDigests(ctx context.Context) (SyncedDigests, error) {
	out := SyncedDigests{}
	for lo := 0; lo < syncedBuckets; lo += syncedBatch {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, 0, syncedBatch)
		for b := lo; b < min(lo+syncedBatch, syncedBuckets); b++ {
			cmds = append(cmds, pipe.HGetAll(ctx, keySynced(b)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("store: reading synced digests: %w", err)
		}
		for i, cmd := range cmds {
			prefix := strconv.Itoa(lo+i) + ":"
			for f, d := range cmd.Val() {
				out[prefix+f] = d
			}
		}
	}
	return out, nil
}

// SetSyncedDigests records the digests, by slug, of files whose articles
// are now stored exactly as the files say. It is written after the
// articles: a sync that stops in between leaves files that are parsed
// again next time, never a digest for content that is not stored.
func (s *Store) SetSyncedDigests(ctx context.Context, digests map[string]string) error {
	if len(digests) == 0 {
		return nil
	}
	byBucket := map[int][]any{}
	for slug, d := range digests {
		b, f := syncedField(slug)
		byBucket[b] = append(byBucket[b], f, d)
	}
	pipe := s.rdb.Pipeline()
	pipe.Unlink(ctx, keySyncedLegacy)
	for b, fields := range byBucket {
		for lo := 0; lo < len(fields); lo += 2 * syncedBatch {
			pipe.HSet(ctx, keySynced(b), fields[lo:min(lo+2*syncedBatch, len(fields))]...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: recording synced digests: %w", err)
	}
	return nil
}
