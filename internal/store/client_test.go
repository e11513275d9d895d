package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// freeze stops the redis-server s with SIGSTOP, as a hung Redis that still
// accepts connections, and continues it when the test ends (before s's own
// shutdown, which t.Cleanup runs later).
func freeze(t *testing.T, s *redistest.Server) {
	t.Helper()
	info, err := s.Client().Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatal("INFO server gave no process_id")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
}

// TestClientHonoursDeadlines checks that the clients the processes build
// give up at their caller's deadline on a Redis that does not answer, and
// that the worker's blocking read (XREADGROUP BLOCK, with no deadline)
// still waits out its block time rather than failing.
func TestClientHonoursDeadlines(t *testing.T) {
	s := redistest.Start(t)
	rdb, err := store.NewClient(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := t.Context()
	if err := rdb.XGroupCreateMkStream(ctx, "s", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 1500 * time.Millisecond}).Result()
	if !errors.Is(err, redis.Nil) || time.Since(start) < 1400*time.Millisecond {
		t.Fatalf("XREADGROUP BLOCK 1500: err %v after %v, want redis.Nil after the block time", err, time.Since(start))
	}
	// A deadline beyond the block time does not cut it short either.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = rdb.XReadGroup(dctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 500 * time.Millisecond}).Result()
	cancel()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("XREADGROUP BLOCK 500 under a 5 s deadline: %v, want redis.Nil", err)
	}

	freeze(t, s)
	dctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = rdb.Ping(dctx).Err()
	if took := time.Since(start); err == nil || took > 1500*time.Millisecond {
		t.Fatalf("PING of a frozen Redis under a 500 ms deadline: err %v after %v", err, took)
	}
}
