package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// TestUnavailable classifies errors a real redis-server returns: those a
// retry later cures are Unavailable (a 503 for the client), those of the
// request or the code are not (a 500, or the caller's own answer).
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "enable-debug-command yes", "busy-reply-threshold 100")
	rdb := srv.Client()
	if err := rdb.Set(ctx, "a-string", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// A replica refuses writes with READONLY.
	replica := redistest.Start(t, "replicaof 127.0.0.1 "+portOf(t, srv.Addr()))
	// A port nothing listens on refuses the connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	noOne := redis.NewClient(&redis.Options{Addr: closed, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { noOne.Close() })

	loading, reloaded := loadingServer(t, 10_000, 100)
	t.Cleanup(func() { <-reloaded })

	tests := []struct {
		desc string
		err  func(t *testing.T) error
		want bool
	}{
		{desc: "LOADING while the data set is read back", err: func(*testing.T) error { return loading.Get(ctx, "k").Err() }, want: true},
		{desc: "READONLY on a replica", err: func(*testing.T) error { return replica.Client().Set(ctx, "k", "v", 0).Err() }, want: true},
		{desc: "connection refused", err: func(*testing.T) error { return noOne.Get(ctx, "k").Err() }, want: true},
		{desc: "a deadline", err: func(*testing.T) error {
			c, cancel := context.WithTimeout(ctx, time.Nanosecond)
			defer cancel()
			time.Sleep(time.Millisecond)
			slow := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
			defer slow.Close()
			return slow.Get(c, "k").Err()
		}, want: true},
		{desc: "BUSY while a script runs too long", err: func(t *testing.T) error {
			started := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				close(started)
				// Spins for 1 s; other clients get BUSY after busy-reply-threshold.
				done <- rdb.Eval(ctx, `local t = redis.call("TIME") local s = t[1] * 1e6 + t[2]
					repeat t = redis.call("TIME") until t[1] * 1e6 + t[2] - s > 1e6 return 1`, nil).Err()
			}()
			<-started
			other := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
			defer other.Close()
			var err error
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if err = other.Get(ctx, "a-string").Err(); err != nil {
					break
				}
			}
			if e := <-done; e != nil {
				t.Fatalf("the busy script: %v", e)
			}
			return err
		}, want: true},
		{desc: "OOM with noeviction", err: func(t *testing.T) error {
			for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
				if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
					t.Fatal(err)
				}
			}
			defer rdb.ConfigSet(ctx, "maxmemory", "0")
			return rdb.Set(ctx, "k", "v", 0).Err()
		}, want: true},
		{desc: "WRONGTYPE is the code's fault", err: func(*testing.T) error { return rdb.LPush(ctx, "a-string", "x").Err() }, want: false},
		{desc: "an unknown command is the code's fault", err: func(*testing.T) error { return rdb.Do(ctx, "NOSUCHCOMMAND").Err() }, want: false},
		{desc: "a missing key is no error", err: func(*testing.T) error { return rdb.Get(ctx, "missing").Err() }, want: false},
		{desc: "wrapped with what was being done", err: func(*testing.T) error {
			return fmt.Errorf("store: reading: %w", loading.Get(ctx, "k").Err())
		}, want: true},
		{desc: "no error", err: func(*testing.T) error { return nil }, want: false},
		{desc: "a plain error", err: func(*testing.T) error { return errors.New("something else") }, want: false},
	}
	for _, test := range tests {
		t.Run(test.desc, func(t *testing.T) {
			err := test.err(t)
			if test.want && err == nil {
				t.Fatal("the server answered without an error: the case shows nothing")
			}
			if got := store.Unavailable(err); got != test.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", err, got, test.want)
			}
		})
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
