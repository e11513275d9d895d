// Command origin runs Invoicewire's origin server: the JSON API, the site and
// the discovery documents, behind the edge (docs/architecture.md). Configuration is the
// IW_* environment described in the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/process"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/agentauth"
)

func main() {
	process.Main("origin", "IW_ORIGIN_METRICS_ADDR", func(c config.Config) string { return c.OriginMetricsAddr }, run)
}

func run(ctx context.Context, p *process.Process) error {
	cfg, log := p.Config, p.Log
	issuers, err := agentauth.ParseIssuers(cfg.IDJAGIssuers)
	if err != nil {
		return err
	}
	srv, err := origin.New(origin.Config{
		SiteRoot: cfg.PublicURL, CacheBytes: cfg.OriginCacheBytes, Log: log, Registry: p.Ops.Registry,
		IDJAGIssuers: issuers, WebhookPolicy: cfg.WebhookPolicy(), SigningKey: cfg.SigningKey,
		MCPAllowedOrigins: cfg.MCPAllowedOrigins,
	}, store.New(p.Redis))
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
	// The address is bound before "origin listening" is logged, so the
	// log never announces a listener that then fails to bind.
	l, err := net.Listen("tcp", cfg.OriginAddr)
	if err != nil {
		return fmt.Errorf("IW_ORIGIN_ADDR: listening on %s: %w", cfg.OriginAddr, err)
	}
	errc := make(chan error, 1)
	go func() {
		if err := public.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serving on %s: %w", cfg.OriginAddr, err)
		}
	}()
	log.Info("origin listening", "addr", l.Addr().String(), "metrics", cfg.OriginMetricsAddr, "public_url", cfg.PublicURL)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("origin stopping")
	shutdown, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := public.Shutdown(shutdown); err != nil {
		// Requests still open when IW_SHUTDOWN_GRACE ran out (an /ask or
		// /mcp event stream, a slow upload) would otherwise keep their
		// connections while the deferred srv.Close and the process take
		// Redis from under them; Close ends them now. Stopping stays
		// clean: the grace is the bound operators asked for.
		log.Warn("origin: shutdown grace over with requests still open; closing their connections",
			"grace_seconds", cfg.ShutdownGrace.Seconds(), "err", err)
		public.Close()
	}
	return nil
}
