// Command origin runs Invoicewire's origin server: the JSON API, the site and
// the discovery documents, behind the edge (docs/architecture.md). Configuration is the
// IW_* environment described in the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/opsserver"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/agentauth"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "origin:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := logging.New("origin", cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := store.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := store.WaitLoaded(ctx, st.Client(), log); err != nil {
		return err
	}

	ops := opsserver.New(cfg.OriginMetricsAddr, st.Client())
	issuers, err := agentauth.ParseIssuers(cfg.IDJAGIssuers)
	if err != nil {
		return err
	}
	srv, err := origin.New(origin.Config{
		SiteRoot: cfg.PublicURL, CacheBytes: cfg.OriginCacheBytes, Log: log, Registry: ops.Registry,
		IDJAGIssuers: issuers, WebhookPolicy: cfg.WebhookPolicy(), SigningKey: cfg.SigningKey,
		MCPAllowedOrigins: cfg.MCPAllowedOrigins,
	}, st)
	if err != nil {
		return err
	}
	defer srv.Close()
	go srv.Follow(ctx, nil)

	public := &http.Server{
		Addr:              cfg.OriginAddr,
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 2)
	go func() {
		if err := public.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("listening on %s: %w", public.Addr, err)
		}
	}()
	go func() {
		if err := ops.ListenAndServe(); err != nil {
			errc <- err
		}
	}()
	log.Info("origin listening", "addr", cfg.OriginAddr, "metrics", cfg.OriginMetricsAddr, "public_url", cfg.PublicURL)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("origin stopping")
	shutdown, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	public.Shutdown(shutdown)
	ops.Shutdown(shutdown)
	return nil
}
