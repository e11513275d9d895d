package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/redis/go-redis/v9"
)

// syncBatch is how many articles a corpus sync reads, compares and writes
// per round trip to Redis.
const syncBatch = 512

// SyncArticles stores articles, in their order, as SyncArticle would one by
// one, but a batch at a time: one MGET reads the stored records; an article
// whose stored record is byte for byte what SyncArticle would write is
// skipped without decoding anything; the others go out in one pipeline, in
// order: each changed article as its own atomic change, and each run of
// articles new to the store as one atomic change (firstPublishScript) that
// still emits one article.published per article. A change that meets a
// concurrent write (a retraction between the read and the write, an
// article published meanwhile) is redone article by article by
// SyncArticle. Unchanged archives therefore cost one round trip per batch,
// and a full publish is bound by Redis, not by round trips.
//
// likelyNew, when not nil, names the articles the caller believes are not
// in the store (iwctl: those it has no digest of): they are not read
// first, only written as first publishes. Reading a batch waits behind the
// previous batch's writes in Redis, and at a first publish of a million
// that wait was a fifth of the time (docs/scale.md). A wrong guess costs
// time, never correctness: an article that exists after all makes its
// run's change write nothing (firstPublishScript checks), and the run is
// redone article by article. report, if not nil, is told of every article
// that changed.
func (p *Publisher) SyncArticles(ctx context.Context, articles []*content.Article, likelyNew func(slug string) bool, report func(kind, id string, o Outcome)) error {
	return p.syncArticles(ctx, articles, likelyNew, func(slug string, o Outcome, err error) error {
		if err != nil {
			return fmt.Errorf("store: syncing article %s: %w", slug, err)
		}
		if o.Changed && report != nil {
			report("article", slug, o)
		}
		return nil
	})
}

func (p *Publisher) syncArticles(ctx context.Context, articles []*content.Article, likelyNew func(string) bool, step func(slug string, o Outcome, err error) error) error {
	if len(articles) == 0 {
		return nil
	}
	// The changes go by EVALSHA, which cannot fall back to EVAL in a
	// pipeline (a run's first publish goes by EVAL: firstPublish.queue).
	if err := applyScript.Load(ctx, p.Store.rdb).Err(); err != nil {
		return fmt.Errorf("store: loading the change script: %w", err)
	}
	// A batch is encoded and read while the one before it executes: Redis
	// runs the writes on one thread, and a first publish waited for each
	// pipeline before encoding the next batch, which left a core idle
	// about a third of the time (docs/scale.md, publishing a million).
	// The batches hold different articles (a slug is in one file), so
	// reading one does not depend on the writes of the other, and each
	// batch's outcomes are still reported, in order, before the next
	// batch's writes are sent.
	var inFlight *sentBatch
	for lo := 0; lo < len(articles); lo += syncBatch {
		b, err := p.prepareBatch(ctx, articles[lo:min(lo+syncBatch, len(articles))], likelyNew, step)
		if ferr := inFlight.finish(ctx, p, step); ferr != nil {
			return ferr
		}
		inFlight = nil
		if err != nil || b == nil {
			return err
		}
		inFlight = b.send(ctx)
	}
	return inFlight.finish(ctx, p, step)
}

// batchCall is one write of a batch: one change of one article, or one
// first publish of a run of them (with the MSETNX of its records, stored).
type batchCall struct {
	articles []*content.Article
	kind     string
	// movedFrom and movedTo are a single change's Outcome.MovedFrom and
	// MovedTo.
	movedFrom, movedTo string
	cmd                *redis.Cmd
	stored             *redis.BoolCmd
}

// sentBatch is a batch's writes, queued in order in one transaction: a
// run's script and the MSETNX of its records must run with nothing
// between them (firstPublishScript), which a transaction guarantees on
// Redis Cluster too, since every key carries the {content} hash tag. The
// batch is therefore applied as a whole, as each change in it was.
type sentBatch struct {
	pipe  redis.Pipeliner
	calls []*batchCall
	done  chan struct{}
}

// prepareBatch encodes batch, reads what the store holds of it (except
// the articles likelyNew names) and queues the writes of the articles that
// changed. It returns nil when a change could not be made (after telling
// step, whose error it returns).
func (p *Publisher) prepareBatch(ctx context.Context, batch []*content.Article, likelyNew func(string) bool, step func(slug string, o Outcome, err error) error) (*sentBatch, error) {
	docs := make([][]byte, len(batch))
	if err := encodePublished(batch, docs); err != nil {
		return nil, err
	}
	stored, err := p.readStored(ctx, batch, likelyNew)
	if err != nil {
		return nil, err
	}
	// The batch's writes in order: runs of articles new to the store
	// (stored[i] == nil), at most firstPublishBatch long, each with its
	// call, and single articles that are stored already.
	type span struct {
		lo, hi int
		fp     *firstPublish
	}
	var spans []span
	var runs []int // positions in spans
	for i := 0; i < len(batch); {
		j := i + 1
		if stored[i] == nil {
			for j < len(batch) && j-i < firstPublishBatch && stored[j] == nil {
				j++
			}
			runs = append(runs, len(spans))
		}
		spans = append(spans, span{lo: i, hi: j})
		i = j
	}
	// The runs' calls, events included, are rendered on every CPU like
	// the records: on one, they were a tenth of a first publish's time.
	if err := parallel(len(runs), func(k int) error {
		sp := &spans[runs[k]]
		evs := make([]events.Event, sp.hi-sp.lo)
		for i := range evs {
			ev, err := p.articleEvent(events.ArticlePublished, &ArticleRecord{Article: *batch[sp.lo+i], State: StatePublished})
			if err != nil {
				return err
			}
			evs[i] = ev
		}
		sp.fp = p.newFirstPublish(batch[sp.lo:sp.hi], docs[sp.lo:sp.hi], evs)
		return nil
	}); err != nil {
		return nil, err
	}
	b := &sentBatch{pipe: p.Store.rdb.TxPipeline()}
	for _, sp := range spans {
		if sp.fp != nil {
			cmd, stored := sp.fp.queue(ctx, b.pipe)
			b.calls = append(b.calls, &batchCall{articles: batch[sp.lo:sp.hi], kind: events.ArticlePublished,
				cmd: cmd, stored: stored})
			continue
		}
		a, doc := batch[sp.lo], docs[sp.lo]
		s, _ := stored[sp.lo].(string)
		if s == string(doc) {
			continue // published and unchanged: the common case
		}
		raw := []byte(s)
		cur := &ArticleRecord{}
		if err := decodeRecord(raw, cur); err != nil {
			return nil, fmt.Errorf("store: decoding article %q: %w", a.Slug, err)
		}
		c, kind, err := p.articleChange(a, cur, raw, doc)
		if err != nil {
			return nil, step(a.Slug, Outcome{}, err)
		}
		if c != nil {
			call := &batchCall{articles: []*content.Article{a}, kind: kind,
				cmd: applyScript.EvalSha(ctx, b.pipe, c.keys, c.args()...)}
			call.movedFrom, call.movedTo = moved(cur, a)
			b.calls = append(b.calls, call)
		}
	}
	return b, nil
}

// readStored returns the stored record of each article of batch, nil for
// those not stored, without reading those likelyNew names (taken as not
// stored).
func (p *Publisher) readStored(ctx context.Context, batch []*content.Article, likelyNew func(string) bool) ([]any, error) {
	stored := make([]any, len(batch))
	var keys []string
	var at []int
	for i, a := range batch {
		if likelyNew == nil || !likelyNew(a.Slug) {
			keys = append(keys, keyArticle(a.Slug))
			at = append(at, i)
		}
	}
	if len(keys) == 0 {
		return stored, nil
	}
	vals, err := p.Store.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading articles to sync: %w", err)
	}
	for k, i := range at {
		stored[i] = vals[k]
	}
	return stored, nil
}

// send executes the batch's pipeline in the background; finish waits for
// it.
func (b *sentBatch) send(ctx context.Context) *sentBatch {
	b.done = make(chan struct{})
	if len(b.calls) == 0 {
		close(b.done)
		return b
	}
	go func() {
		defer close(b.done)
		b.pipe.Exec(ctx) // each command's error is read by finish
	}()
	return b
}

// finish waits for a sent batch and tells step the outcome of each of its
// articles, in order. A change that met a concurrent write (a retraction
// between the read and the write, an article published meanwhile) is
// redone article by article by SyncArticle. A nil batch has nothing to
// finish.
func (b *sentBatch) finish(ctx context.Context, p *Publisher, step func(slug string, o Outcome, err error) error) error {
	if b == nil {
		return nil
	}
	<-b.done
	for _, c := range b.calls {
		v, err := c.cmd.Int64()
		if err == nil && v < 0 {
			err = ErrConflict
		}
		if c.stored != nil && (err == nil || errors.Is(err, ErrConflict)) {
			// The MSETNX stores the records exactly when the script
			// found none of them (firstPublishScript).
			if stored, serr := c.stored.Result(); serr != nil {
				err = serr
			} else if stored != (err == nil) {
				err = fmt.Errorf("store: the records of %d new articles were stored=%v, their run's change %v", len(c.articles), stored, err)
			}
		}
		if errors.Is(err, ErrConflict) || isNoScript(err) {
			for _, a := range c.articles {
				o, err := p.SyncArticle(ctx, a)
				if err := step(a.Slug, o, err); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			err = fmt.Errorf("store: applying change: %w", err)
		}
		for _, a := range c.articles {
			if err := step(a.Slug, Outcome{Changed: true, Event: c.kind, Version: v, MovedFrom: c.movedFrom, MovedTo: c.movedTo}, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// parallel runs f(0) … f(n-1) on every CPU and returns their errors.
func parallel(n int, f func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// encodePublished writes into docs the record each article of batch has
// when published and never retracted, on every CPU: encoding is most of a
// sync's work in Go.
func encodePublished(batch []*content.Article, docs [][]byte) error {
	return parallel(len(batch), func(i int) error {
		doc, err := encodePublishedRecord(batch[i])
		if err != nil {
			return fmt.Errorf("store: encoding article %q: %w", batch[i].Slug, err)
		}
		docs[i] = doc
		return nil
	})
}

// isNoScript reports a script cache emptied between the load and the
// pipeline (a Redis restart or SCRIPT FLUSH); Apply recovers from it.
func isNoScript(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT")
}
