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
	"io"
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
// configuration (the variable addrVar, named when the listener fails),
// calls run with a context that ends on SIGINT or SIGTERM (or when the
// operator listener fails), and then stops the operator listener within
// IW_SHUTDOWN_GRACE. An error, from the configuration on, is logged as a
// JSON record at error level ("<name> failed", with err) and exits with
// status 1 (README, "logs are JSON on stderr"). A stop signal is a clean
// exit even while the command is still starting, waiting for Redis: a
// service manager stopping it is not a failure (docs/operations.md).
func Main(name, addrVar string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) {
	os.Exit(mainCode(os.Stderr, name, addrVar, opsAddr, run))
}

// mainCode is Main writing its log to w and returning the exit status.
func mainCode(w io.Writer, name, addrVar string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) int {
	cfg, err := config.FromEnv()
	level := cfg.LogLevel
	if err != nil {
		// The configuration failed, perhaps on IW_LOG_LEVEL itself: what
		// it asks for is used when valid, info otherwise.
		level = os.Getenv("IW_LOG_LEVEL")
	}
	log := logging.NewTo(w, name, level)
	// go-redis logs on its own (a failed dial); its lines join the
	// process's JSON log.
	logging.RouteRedis(log)
	if err == nil {
		err = start(cfg, log, addrVar, opsAddr, run)
	}
	if err != nil {
		log.Error(name+" failed", "err", err)
		return 1
	}
	return 0
}

// start runs run with the shared parts. What it returns decides the exit:
// the operator listener's failure wins over run's error, since run then
// only reports the cancellation it caused (a worker waiting for its signing
// key would blame Redis); a cancellation caused by the stop signal is a
// clean stop, wherever start-up had got to.
func start(cfg config.Config, log *slog.Logger, addrVar string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) error {
	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancelCause(signalled)
	defer cancel(nil)
	// stopped reports whether err is only the stop signal's cancellation.
	stopped := func(err error) bool {
		return signalled.Err() != nil && errors.Is(err, context.Canceled)
	}

	rdb, err := store.NewClient(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := store.WaitLoaded(ctx, rdb, log); err != nil {
		if stopped(err) {
			return nil
		}
		return fmt.Errorf("waiting for Redis to load its data: %w", err)
	}

	p := &Process{Config: cfg, Log: log, Redis: rdb, Ops: opsserver.New(opsAddr(cfg), rdb)}
	go func() {
		if err := p.Ops.ListenAndServe(); err != nil {
			cancel(fmt.Errorf("%s: %w", addrVar, err))
		}
	}()
	err = run(ctx, p)
	// What run left running (the invalidation follower, say) stops with
	// ctx before the deferred Close takes the Redis client from under it:
	// a follower that lost its connection while ctx still ran would log a
	// warning after the failure, as if it came after it.
	cause := context.Cause(ctx)
	cancel(nil)
	shutdown, done := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer done()
	p.Ops.Shutdown(shutdown)
	// The operator listener failing stops the command as an error.
	if cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if err != nil && !stopped(err) {
		return err
	}
	return nil
}
