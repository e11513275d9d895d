package logging_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/logging"
)

// TestRouteRedis checks that go-redis's own lines (here its connection
// pool's, dialling a port nothing listens on) become JSON records of the
// process's logger, one per kind however often go-redis repeats it.
func TestRouteRedis(t *testing.T) {
	var buf logging.Buffer
	logging.RouteRedis(logging.NewTo(&buf, "test", "info"))
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(freeport.Port(t)), MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	for range 3 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatal("PING of a closed port succeeded")
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %d lines, want one for three failed dials:\n%s", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not a JSON record: %q", lines[0])
	}
	detail, _ := rec["detail"].(string)
	if rec["level"] != "WARN" || rec["msg"] != "redis client" || rec["process"] != "test" ||
		!strings.HasPrefix(detail, "connection pool: failed to dial") {
		t.Fatalf("record %v, want a warning with go-redis's line as detail", rec)
	}
}

// TestRedisLoggerInterval checks the rate limit: a line of each kind per
// interval, the next one counting those held back.
func TestRedisLoggerInterval(t *testing.T) {
	type line struct {
		msg        string
		suppressed int
	}
	var got []line
	l := logging.NewRedisLogger(time.Minute, func(_ context.Context, msg string, suppressed int) {
		got = append(got, line{msg, suppressed})
	})
	now := time.Unix(1e9, 0)
	logging.SetRedisLoggerClock(l, func() time.Time { return now })
	for i := range 5 {
		l.Printf(context.Background(), "redis: dial %d", i)
		now = now.Add(10 * time.Second)
	}
	l.Printf(context.Background(), "other %s", "kind")
	now = now.Add(20 * time.Second)
	l.Printf(context.Background(), "redis: dial %d", 9)
	want := []line{{"dial 0", 0}, {"other kind", 0}, {"dial 9", 4}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
