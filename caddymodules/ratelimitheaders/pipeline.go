package ratelimitheaders

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// pipelinedScripts is the Redis client the ulule/limiter store is given: it
// sends the store's script calls (EvalSha, one per pushed client) in
// pipelines, and everything else as it is.
//
// The store's Increment is one blocking call per key. Sent one by one, a
// push cost the edge 12 to 16 µs of CPU (a write and a read system call and
// two goroutine switches per client; BenchmarkSyncFreshClients), about a
// quarter of a core at a million new clients a minute. Calls that arrive
// while a pipeline is in flight wait and go together in the next one, so
// the sync's concurrent pushes share round trips and system calls; the
// store keeps doing the work it is used for (the atomic increment with
// expiry, and reloading its script after NOSCRIPT).
//
// The calls of one pipeline wait on one channel, and the queues' arrays are
// reused: a sync pushes up to thousands of clients every 100 ms, and what
// it allocates in that burst is what the collector's assists charge it for
// (docs/edge-gateway.md, "Traffic").
type pipelinedScripts struct {
	redis.UniversalClient

	mu       sync.Mutex
	pending  *scriptBatch
	spare    []scriptCall // a sent batch's array, for the next one
	flushing bool
}

// scriptBatch is the calls that travel in one pipeline; done is closed once
// it has been answered.
type scriptBatch struct {
	calls []scriptCall
	done  chan struct{}
	// readers counts the callers yet to read their command; the last one
	// hands calls back for reuse.
	readers atomic.Int64
}

// scriptCall is one EvalSha waiting for its pipeline.
type scriptCall struct {
	ctx  context.Context
	sha  string
	keys []string
	args []any
	cmd  *redis.Cmd
}

// EvalSha queues the call and returns once the pipeline that carried it has
// been answered. The first caller to find no pipeline in flight sends the
// queue, and keeps sending what queued meanwhile until the queue is empty.
func (p *pipelinedScripts) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	p.mu.Lock()
	if p.pending == nil {
		p.pending = &scriptBatch{calls: p.spare[:0], done: make(chan struct{})}
		p.spare = nil
	}
	b, i := p.pending, len(p.pending.calls)
	b.calls = append(b.calls, scriptCall{ctx: ctx, sha: sha, keys: keys, args: args})
	if !p.flushing {
		p.flushing = true
		for p.pending != nil {
			batch := p.pending
			p.pending = nil
			p.mu.Unlock()
			p.send(batch)
			p.mu.Lock()
		}
		p.flushing = false
	}
	p.mu.Unlock()
	<-b.done
	// b.calls is not reused before every caller of b has read its command
	// (below, release).
	cmd := b.calls[i].cmd
	p.release(b)
	return cmd
}

// send runs batch as one pipeline. Each command carries its own result or
// error; the pipeline's context is the first call's (the sync gives all of
// them the same deadline).
func (p *pipelinedScripts) send(batch *scriptBatch) {
	pipe := p.UniversalClient.Pipeline()
	for i := range batch.calls {
		c := &batch.calls[i]
		c.cmd = pipe.EvalSha(c.ctx, c.sha, c.keys, c.args...)
	}
	_, _ = pipe.Exec(batch.calls[0].ctx)
	batch.readers.Store(int64(len(batch.calls)))
	close(batch.done)
}

// release is called by each caller of b once it has read its command: the
// last one keeps b's array for the next batch.
func (p *pipelinedScripts) release(b *scriptBatch) {
	if b.readers.Add(-1) != 0 {
		return
	}
	clear(b.calls) // the contexts and commands are not kept alive
	p.mu.Lock()
	if cap(b.calls) > cap(p.spare) {
		p.spare = b.calls[:0]
	}
	p.mu.Unlock()
}
