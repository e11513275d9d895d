package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/invoicewire/invoicewire/internal/freeport"
)

// TestRedisLogger checks that go-redis's own lines (its connection pool's,
// dialling a port nothing listens on) reach Caddy's logger as structured
// warnings, once however often they repeat.
func TestRedisLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	redis.SetLogger(redisLogger(func() *zap.Logger { return zap.New(core) }))
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(freeport.Port(t)), MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	for range 3 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatal("PING of a closed port succeeded")
		}
	}
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("%d entries for three failed dials, want one: %v", len(entries), entries)
	}
	e := entries[0]
	detail, _ := e.ContextMap()["detail"].(string)
	if e.Level != zapcore.WarnLevel || e.LoggerName != "redis" || e.Message != "redis client" || !strings.HasPrefix(detail, "connection pool: failed to dial") {
		t.Fatalf("entry %+v (%v), want a warning with go-redis's line as detail", e.Entry, e.ContextMap())
	}
}
