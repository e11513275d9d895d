package store_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// loadingServer starts a redis-server with keys keys and sets it reloading
// them slowly, for real: DEBUG RELOAD saves and reloads the dataset,
// key-load-delay (a redis-server setting its own test suite uses for this)
// sleeps delayMicros on every key, and loading-process-events-interval-bytes
// keeps the server answering other clients, with LOADING, in between. It
// returns once a client has seen LOADING, with that client (which retries
// nothing) and the reload's outcome.
func loadingServer(t *testing.T, keys, delayMicros int) (*redis.Client, <-chan error) {
	t.Helper()
	srv := redistest.Start(t, "enable-debug-command yes", "appendonly no")
	ctx := context.Background()
	admin := srv.Client()
	if err := admin.Do(ctx, "DEBUG", "POPULATE", keys).Err(); err != nil {
		t.Fatalf("DEBUG POPULATE: %v", err)
	}
	for _, kv := range [][2]string{{"key-load-delay", strconv.Itoa(delayMicros)}, {"loading-process-events-interval-bytes", "1024"}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatalf("CONFIG SET %s: %v", kv[0], err)
		}
	}
	// DEBUG RELOAD answers when the reload is over, which on a busy
	// machine takes longer than go-redis's 3 s read timeout.
	reloader := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { reloader.Close() })
	reloaded := make(chan error, 1)
	go func() { reloaded <- reloader.Do(ctx, "DEBUG", "RELOAD").Err() }()

	// A slow answer is not LOADING: on a busy machine the loading server
	// may take longer than go-redis's 3 s read timeout to answer between
	// two batches of keys, and WaitLoaded (rightly) lets other errors
	// through to the caller.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rdb.Ping(ctx).Err()
		if redis.HasErrorPrefix(err, "LOADING") {
			return rdb, reloaded
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never answered LOADING (last: %v); the test cannot show anything", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// A process started while Redis is still reading its data back waits until
// every key is there, instead of failing on LOADING.
func TestWaitLoadedWaitsThroughLoading(t *testing.T) {
	const keys = 20_000
	ctx := context.Background()
	rdb, reloaded := loadingServer(t, keys, 100) // about 2 s of loading

	var logs logging.Buffer
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := store.WaitLoaded(wctx, rdb, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatalf("WaitLoaded: %v", err)
	}
	// Returned: loading is over by the server's own account (loading:0) and
	// commands succeed. The key count is not compared: under heavy machine
	// load redis-server 7.0 has been seen to finish DEBUG RELOAD with
	// key-load-delay a few thousand keys short, and to report loading:0
	// while its DBSIZE still moved by a few dozen before DEBUG RELOAD
	// answered. Neither is WaitLoaded's to see; returning while INFO still
	// says loading:1 is.
	info, err := rdb.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "loading:0") {
		t.Fatalf("after WaitLoaded INFO persistence = %q, %v; want loading:0", info, err)
	}
	n, err := rdb.DBSize(ctx).Result()
	if err != nil || n == 0 {
		t.Fatalf("after WaitLoaded DBSIZE = %d, %v; want the reloaded keys and no error", n, err)
	}
	if err := <-reloaded; err != nil {
		t.Errorf("DEBUG RELOAD: %v", err)
	}
	if !strings.Contains(logs.String(), "waiting for redis to load its data") ||
		!strings.Contains(logs.String(), "redis finished loading its data") {
		t.Errorf("WaitLoaded logged %q; want the wait and its end", logs.String())
	}
}

// WaitLoaded gives up when its context ends while Redis is still loading.
func TestWaitLoadedStopsWithItsContext(t *testing.T) {
	rdb, _ := loadingServer(t, 20_000, 1000) // about 20 s of loading
	wctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := store.WaitLoaded(wctx, rdb, slog.New(slog.NewTextHandler(&logging.Buffer{}, nil))); err == nil {
		t.Fatal("WaitLoaded returned nil while Redis was still loading")
	}
}
