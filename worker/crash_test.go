package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/cmdtest"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/worker"
)

func TestMain(m *testing.M) { os.Exit(cmdtest.Run(m)) }

// startWorkerProcess runs the real worker binary against the harness.
func (h *harness) startWorkerProcess(t testing.TB, extraEnv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(cmdtest.Build(t, "worker"))
	cmd.Env = append(os.Environ(),
		"IW_REDIS_URL="+h.redis.URL(),
		"IW_PUBLIC_URL="+siteRoot,
		"IW_SIGNING_KEY="+h.key.EncodeSeed(),
		"IW_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8",
		"IW_WORKER_METRICS_ADDR=127.0.0.1:0",
		"IW_WORKER_CLAIM_IDLE=2s",
		"IW_WEBHOOK_RETRY_SCHEDULE=200ms,200ms,200ms,200ms",
		"IW_LOG_LEVEL=warn",
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("worker %d stderr:\n%s", cmd.Process.Pid, stderr.String())
		}
	})
	return cmd
}

// TestKillDuringFanOut kills a worker process with SIGKILL while 500 events
// are being fanned out to 5 subscribers, starts a new one, and checks that
// every (event, subscriber) pair is delivered at least once, and that every
// duplicate carries the same webhook-id and body.
func TestKillDuringFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills worker processes")
	}
	h := newHarness(t)
	type pair struct{ sub, event string }
	var mu sync.Mutex
	got := map[pair][]delivery{}
	total := 0
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
	})
	const subs, evts = 5, 500
	ids := map[string]string{}
	for i := range subs {
		path := fmt.Sprintf("/s%d", i)
		ids[path] = h.subscribe(t, rc.URL+path, "secret-of-sixteen+", events.ArticlePublished).ID
	}

	first := h.startWorkerProcess(t)
	ctx := context.Background()
	published := make(chan []string, 1)
	go func() {
		var out []string
		for b := 0; b < evts/50; b++ {
			pipe := h.rdb.Pipeline()
			for range 50 {
				e, _ := events.New(events.ArticlePublished, time.Now(), map[string]any{"slug": fmt.Sprintf("a-%d", len(out))})
				out = append(out, e.ID)
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: events.Stream, Values: e.Fields()})
			}
			pipe.Exec(ctx)
			time.Sleep(50 * time.Millisecond)
		}
		published <- out
	}()
	eventually(t, 60*time.Second, "the first deliveries", func() bool { return rc.count() >= 300 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	killedAt := rc.count()
	eventIDs := <-published

	h.startWorkerProcess(t)
	eventually(t, 120*time.Second, "every pair delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range rc.deliveries()[total:] {
			p := pair{ids[strings.TrimPrefix(d.URL, rc.URL)], d.Header.Get("webhook-id")}
			got[p] = append(got[p], d)
			total++
		}
		return len(got) >= subs*evts && h.idle(t)
	})

	dups := 0
	for _, sid := range ids {
		for _, eid := range eventIDs {
			ds := got[pair{sid, eid}]
			if len(ds) == 0 {
				t.Errorf("event %s never reached %s", eid, sid)
				continue
			}
			dups += len(ds) - 1
			for _, d := range ds {
				if e := envelope(t, d.Body); e.ID != eid || !bytes.Equal(d.Body, ds[0].Body) {
					t.Errorf("a copy of %s to %s has another id or body", eid, sid)
				}
			}
		}
	}
	pending, err := h.rdb.XPending(ctx, events.Stream, worker.Group).Result()
	if err != nil || pending.Count != 0 {
		t.Errorf("events left pending: %+v %v", pending, err)
	}
	t.Logf("killed after %d deliveries; %d requests in all for %d pairs (%d duplicates)", killedAt, total, subs*evts, dups)
}
