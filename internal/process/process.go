// Package process is the start-up and shutdown the long-running commands
// (cmd/origin and cmd/worker) share: the IW_* configuration, the JSON
// logger, the Redis client (waiting for Redis to finish loading its data),
// the operator listener with /metrics and /healthz, and stopping on SIGINT
// or SIGTERM (docs/operations.md).
package process

import (
	"context"
	"errors"
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
// configuration, calls run with a context that ends on SIGINT or SIGTERM
// (or when the operator listener fails), and then stops the operator
// listener within IW_SHUTDOWN_GRACE. An error, from the configuration on,
// is logged as a JSON record at error level ("<name> failed", with err)
// and exits with status 1 (README, "logs are JSON on stderr").
func Main(name string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) {
	os.Exit(mainCode(os.Stderr, name, opsAddr, run))
}

// mainCode is Main writing its log to w and returning the exit status.
func mainCode(w io.Writer, name string, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) int {
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
		err = start(cfg, log, opsAddr, run)
	}
	if err != nil {
		log.Error(name+" failed", "err", err)
		return 1
	}
	return 0
}

func start(cfg config.Config, log *slog.Logger, opsAddr func(config.Config) string, run func(ctx context.Context, p *Process) error) error {
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
