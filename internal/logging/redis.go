package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisInterval is how often go-redis may log a line of one kind: with
// Redis down its connection pool reports every failed dial, one or two
// lines a second per process, which say nothing the first did not. The
// lines held back are counted in the next one.
const RedisInterval = 30 * time.Second

// RedisLogger is go-redis's logger (redis.SetLogger) writing through emit,
// at most one line per call site (format string) every interval; the
// message has go-redis's "redis: " prefix removed, and suppressed counts
// the lines of that kind held back since the last one.
type RedisLogger struct {
	emit     func(ctx context.Context, msg string, suppressed int)
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	kinds map[string]*redisKind
}

type redisKind struct {
	last       time.Time
	suppressed int
}

// NewRedisLogger returns a RedisLogger writing through emit at most once per
// interval for each kind of line.
func NewRedisLogger(interval time.Duration, emit func(ctx context.Context, msg string, suppressed int)) *RedisLogger {
	return &RedisLogger{emit: emit, interval: interval, now: time.Now, kinds: map[string]*redisKind{}}
}

// Printf implements go-redis's internal.Logging.
func (l *RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	now := l.now()
	l.mu.Lock()
	k := l.kinds[format]
	if k == nil {
		// Keyed by go-redis's format strings, a fixed set of its call
		// sites; the bound only guards against one built at run time.
		if len(l.kinds) >= 1024 {
			clear(l.kinds)
		}
		k = &redisKind{}
		l.kinds[format] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < l.interval {
		k.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := k.suppressed
	k.last, k.suppressed = now, 0
	l.mu.Unlock()
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	if ctx == nil {
		ctx = context.Background()
	}
	l.emit(ctx, msg, suppressed)
}

// RouteRedis makes go-redis log through log, as warnings (a failed dial,
// a connection dropped: the process carries on and retries), at most once
// every RedisInterval for each kind of line. go-redis's logger is global to
// the process, so the last call wins.
func RouteRedis(log *slog.Logger) {
	redis.SetLogger(NewRedisLogger(RedisInterval, func(ctx context.Context, msg string, suppressed int) {
		log.WarnContext(ctx, "redis client", "detail", msg, "suppressed", suppressed)
	}))
}
