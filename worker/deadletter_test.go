package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// TestDeadLetterCap fails every delivery of many events at a real receiver
// that always answers 500, through the real worker and its retries, until
// far more deliveries have been dead-lettered than the cap allows. The
// dead-letter stream then holds at least DeadLetterMax entries and at most
// DeadLetterMax plus one stream node (the worker trims with XADD MAXLEN ~,
// which drops only whole nodes of stream-node-max-entries entries), and the
// newest dead letter is among them: the cap bounds Redis memory under a
// receiver that never recovers, keeping the most recent failures.
func TestDeadLetterCap(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const deadMax, subscribers, eventsN = 5, 3, 80
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	for range subscribers {
		h.subscribe(t, rc.URL+"/hook", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", events.ArticleRetracted)
	}
	cfg := h.config()
	cfg.Schedule = []time.Duration{10 * time.Millisecond}
	cfg.DeadLetterMax = deadMax
	h.start(t, cfg)
	for i := range eventsN {
		h.publish(t, events.ArticleRetracted, map[string]string{"slug": "dead-" + strconv.Itoa(i)})
	}
	// Every delivery is tried twice (the first attempt and one retry), then
	// dead-lettered.
	want := subscribers * eventsN * 2
	eventually(t, 60*time.Second, "every delivery tried twice and the queue empty", func() bool {
		return rc.count() >= want && h.idle(t)
	})
	if got := rc.count(); got != want {
		t.Errorf("the receiver got %d requests; want %d (two per delivery)", got, want)
	}

	node := int64(100)
	if v, err := h.rdb.ConfigGet(ctx, "stream-node-max-entries").Result(); err == nil {
		if n, err := strconv.ParseInt(v["stream-node-max-entries"], 10, 64); err == nil && n > 0 {
			node = n
		}
	}
	n, err := h.rdb.XLen(ctx, webhook.KeyDead).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n < deadMax || n > deadMax+node {
		t.Fatalf("the dead-letter stream holds %d entries after %d dead letters; want between %d and %d", n, subscribers*eventsN, deadMax, deadMax+node)
	}
	t.Logf("%d dead letters written, %d kept (cap %d, stream node %d entries)", subscribers*eventsN, n, deadMax, node)
	if n >= subscribers*eventsN {
		t.Fatalf("the dead-letter stream was never trimmed: %d entries", n)
	}
	// The newest entry is a complete dead letter of this test's deliveries.
	last, err := h.rdb.XRevRangeN(ctx, webhook.KeyDead, "+", "-", 1).Result()
	if err != nil || len(last) != 1 {
		t.Fatalf("newest dead letter: %v %v", last, err)
	}
	var dl webhook.DeadLetter
	if err := json.Unmarshal([]byte(last[0].Values["delivery"].(string)), &dl); err != nil {
		t.Fatal(err)
	}
	if dl.Attempts != 2 || dl.LastStatus != http.StatusInternalServerError || dl.EventType != events.ArticleRetracted {
		t.Errorf("newest dead letter %+v", dl)
	}
}
