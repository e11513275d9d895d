// Command worker delivers Invoicewire's content events to webhook
// subscribers (docs/decisions.md, delivery). Any number may run against one Redis: they
// share the work through a consumer group and a leased delivery queue.
// Configuration is the IW_* environment described in the README; metrics
// are served on IW_WORKER_METRICS_ADDR.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/opsserver"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := logging.New("worker", cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rdb, err := store.NewClient(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := store.WaitLoaded(ctx, rdb, log); err != nil {
		return err
	}

	// The key is shared through Redis (docs/decisions.md, agent surfaces); wait for Redis rather than
	// fail when the worker starts first.
	var key *signing.Key
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		key, err = signing.NewSource(rdb, cfg.SigningKey).Key(lctx)
		cancel()
		if err == nil || cfg.SigningKey != "" || ctx.Err() != nil {
			break
		}
		log.Warn("worker: waiting for Redis to load the signing key", "err", err)
		time.Sleep(time.Second)
	}
	if err != nil {
		return err
	}

	ops := opsserver.New(cfg.WorkerMetricsAddr, rdb)
	w, err := worker.New(worker.Config{
		SiteRoot:      cfg.PublicURL,
		Key:           key,
		Policy:        cfg.WebhookPolicy(),
		Schedule:      cfg.WebhookRetrySchedule,
		Lease:         cfg.WorkerLease,
		ClaimIdle:     cfg.WorkerClaimIdle,
		Concurrency:   cfg.WorkerConcurrency,
		DisableAfter:  cfg.WebhookDisableAfter,
		DeadLetterMax: cfg.WebhookDeadLetterMax,
		Registry:      ops.Registry,
		Log:           log,
	}, rdb)
	if err != nil {
		return err
	}

	errc := make(chan error, 1)
	go func() {
		if err := ops.ListenAndServe(); err != nil {
			errc <- err
			stop()
		}
	}()
	log.Info("worker started", "metrics", cfg.WorkerMetricsAddr, "key_id", key.ID, "concurrency", cfg.WorkerConcurrency)
	w.Run(ctx, cfg.ShutdownGrace)
	log.Info("worker stopped")
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ops.Shutdown(shutdown)
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}
