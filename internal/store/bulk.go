package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/redis/go-redis/v9"
)

// syncBatch is how many articles a corpus sync reads, compares and writes
// per round trip to Redis.
const syncBatch = 512

// syncArticles stores articles, in their order, as SyncArticle would one by
// one, but a batch at a time: one MGET reads the stored records; an article
// whose stored record is byte for byte what SyncArticle would write is
// skipped without decoding anything; the changes of the others go out as
// one pipeline of atomic changes, still one change and one event per
// article and in order. A change that meets a concurrent write (a
// retraction between the read and the write) is redone alone by
// SyncArticle. Unchanged archives therefore cost one round trip per batch,
// and a full publish is bound by Redis, not by round trips.
func (p *Publisher) syncArticles(ctx context.Context, articles []*content.Article, step func(slug string, o Outcome, err error) error) error {
	if len(articles) == 0 {
		return nil
	}
	// The pipeline sends EVALSHA only, which cannot fall back to EVAL.
	if err := applyScript.Load(ctx, p.Store.rdb).Err(); err != nil {
		return fmt.Errorf("store: loading the change script: %w", err)
	}
	docs := make([][]byte, syncBatch)
	for lo := 0; lo < len(articles); lo += syncBatch {
		batch := articles[lo:min(lo+syncBatch, len(articles))]
		if err := encodePublished(batch, docs); err != nil {
			return err
		}
		keys := make([]string, len(batch))
		for i, a := range batch {
			keys[i] = keyArticle(a.Slug)
		}
		stored, err := p.Store.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return fmt.Errorf("store: reading articles to sync: %w", err)
		}
		var (
			changes []*Change
			kinds   []string
			which   []*content.Article
		)
		for i, a := range batch {
			var raw []byte
			var cur *ArticleRecord
			if s, ok := stored[i].(string); ok {
				if s == string(docs[i]) {
					continue // published and unchanged: the common case
				}
				raw = []byte(s)
				cur = &ArticleRecord{}
				if err := json.Unmarshal(raw, cur); err != nil {
					return fmt.Errorf("store: decoding article %q: %w", a.Slug, err)
				}
			}
			c, kind, err := p.articleChange(a, cur, raw, docs[i])
			if err != nil {
				return step(a.Slug, Outcome{}, err)
			}
			if c != nil {
				changes, kinds, which = append(changes, c), append(kinds, kind), append(which, a)
			}
		}
		versions, errs := p.Store.applyAll(ctx, changes)
		for i, a := range which {
			o, err := Outcome{Changed: true, Event: kinds[i], Version: versions[i]}, errs[i]
			if errors.Is(err, ErrConflict) || isNoScript(err) {
				o, err = p.SyncArticle(ctx, a)
			}
			if err := step(a.Slug, o, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodePublished writes into docs the record each article of batch has
// when published and never retracted, on every CPU: encoding is most of a
// sync's work in Go.
func encodePublished(batch []*content.Article, docs [][]byte) error {
	workers := min(runtime.GOMAXPROCS(0), len(batch))
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(batch); i += workers {
				doc, err := json.Marshal(&ArticleRecord{Article: *batch[i], State: StatePublished})
				if err != nil {
					errs[w] = fmt.Errorf("store: encoding article %q: %w", batch[i].Slug, err)
					return
				}
				docs[i] = doc
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// applyAll applies changes in order in one pipeline. Each is atomic on its
// own, exactly as Apply; the i-th version or error belongs to the i-th
// change.
func (s *Store) applyAll(ctx context.Context, changes []*Change) ([]int64, []error) {
	versions, errs := make([]int64, len(changes)), make([]error, len(changes))
	if len(changes) == 0 {
		return versions, errs
	}
	pipe := s.rdb.Pipeline()
	sent := make([]int, 0, len(changes))
	for i, c := range changes {
		applyScript.EvalSha(ctx, pipe, c.keys, c.args()...)
		sent = append(sent, i)
	}
	cmds, _ := pipe.Exec(ctx)
	for k, cmd := range cmds {
		i := sent[k]
		v, err := cmd.(*redis.Cmd).Int64()
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("store: applying change: %w", err)
		case v < 0:
			errs[i] = ErrConflict
		default:
			versions[i] = v
		}
	}
	return versions, errs
}

// isNoScript reports a script cache emptied between the load and the
// pipeline (a Redis restart or SCRIPT FLUSH); Apply recovers from it.
func isNoScript(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT")
}
