// Package process is the start-up and shutdown the long-running commands
// (cmd/origin and cmd/worker) share: the IW_* configuration, the JSON
// logger, the Redis client (waiting for Redis to finish loading its data),
// the operator listener with /metrics and /healthz, and stopping on SIGINT
// or SIGTERM (docs/operations.md).
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/opsserver"
	"github.com/invoicewire/invoicewire/internal/store"
)

// Process is what a command's run function receives once the shared parts
// are up.
type Process struct {
	// Config is the IW_* environment.
	Config config.Config
	// Log is the process's structured logger.
	Log *slog.Logger
	// Redis is the client for IW_REDIS_URL; Redis has finished loading.
	Redis redis.UniversalClient
	// Ops is the operator listener; a command registers its metrics on
	// Ops.Registry. Main starts and stops it.
	Ops *opsserver.Server
}

// Main runs the command name and exits: it builds the shared parts, with
// the operator listener on the address opsAddr picks from the
// configuration, calls run with a context that ends on SIGINT or SIGTERM
// (or when the operator listener fails), and then stops the operator
// listener within IW_SHUTDOWN_GRACE. An error is printed as "name: error"
// and exits with status 1.
func Main(name string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) {
	if err := start(name, opsAddr, run); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func start(name string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := logging.New(name, cfg.LogLevel)
	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancelCause(signalled)
	defer cancel(nil)

	rdb, err := store.NewClient(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := store.WaitLoaded(ctx, rdb, log); err != nil {
		return err
	}

	p := &Process{Config: cfg, Log: log, Redis: rdb, Ops: opsserver.New(opsAddr(cfg), rdb)}
	go func() {
		if err := p.Ops.ListenAndServe(); err != nil {
			cancel(err)
		}
	}()
	err = run(ctx, p)
	shutdown, done := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer done()
	p.Ops.Shutdown(shutdown)
	if err != nil {
		return err
	}
	// The operator listener failing stops the command as an error.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}
