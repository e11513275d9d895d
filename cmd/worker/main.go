// Command worker delivers Invoicewire's content events to webhook
// subscribers (docs/decisions.md, delivery). Any number may run against one Redis: they
// share the work through a consumer group and a leased delivery queue.
// Configuration is the IW_* environment described in the README; metrics
// are served on IW_WORKER_METRICS_ADDR.
package main

import (
	"context"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/process"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/worker"
)

func main() {
	process.Main("worker", "IW_WORKER_METRICS_ADDR", func(c config.Config) string { return c.WorkerMetricsAddr }, run)
}

func run(ctx context.Context, p *process.Process) error {
	cfg, log := p.Config, p.Log
	// The key is shared through Redis (docs/decisions.md, agent surfaces); wait for Redis rather than
	// fail when the worker starts first.
	var key *signing.Key
	var err error
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		key, err = signing.NewSource(p.Redis, cfg.SigningKey).Key(lctx)
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

	w, err := worker.New(worker.Config{
		SiteRoot:      cfg.PublicURL,
		Key:           key,
		Policy:        cfg.WebhookPolicy(),
		Schedule:      cfg.WebhookRetrySchedule,
		Lease:         cfg.WorkerLease,
		ClaimIdle:     cfg.WorkerClaimIdle,
		Concurrency:   cfg.WorkerConcurrency,
		PerReceiver:   cfg.WorkerPerReceiver,
		DisableAfter:  cfg.WebhookDisableAfter,
		DeadLetterMax: cfg.WebhookDeadLetterMax,
		Registry:      p.Ops.Registry,
		Log:           log,
	}, p.Redis)
	if err != nil {
		return err
	}
	log.Info("worker started", "metrics", cfg.WorkerMetricsAddr, "key_id", key.ID, "concurrency", cfg.WorkerConcurrency, "per_receiver", cfg.WorkerPerReceiver)
	w.Run(ctx, cfg.ShutdownGrace)
	log.Info("worker stopped")
	return nil
}
