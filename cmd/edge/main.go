// Command edge is Invoicewire's edge gateway (docs/architecture.md, "A read:
// edge → origin → store"): the Caddy v2
// server with its standard modules and Invoicewire's own handler modules
// compiled in. It is configured by caddyfile/Caddyfile.
//
// Run it as any Caddy binary:
//
//	edge run --config caddyfile/Caddyfile --adapter caddyfile
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	_ "time/tzdata"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	_ "github.com/invoicewire/invoicewire/caddymodules"
	"github.com/invoicewire/invoicewire/internal/logging"
)

// gcPercent is the edge's GOGC unless the environment sets one. A cache hit
// allocates about 80 short-lived objects, most of them Caddy's per-request
// state, while the live heap is mostly the cache: at Go's default of 100 the
// collector took about a fifth of the CPU under load, and 400 cut the CPU of
// a hit by about 12% (docs/edge-gateway.md, "GC"). Left alone, that lets
// a heap that is mostly a full cache grow to five times what is live, so
// the edge_cache and rate_limit_headers modules set a soft memory limit
// from their configured sizes (caddymodules/internal/memorybudget; 464 MiB
// with make run's defaults; GOMEMLIMIT overrides it): below it GOGC 400
// keeps collections rare, near it the collector runs as often as needed.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if err := checkEnv(os.Args, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
	redis.SetLogger(redisLogger(caddy.Log))
	caddycmd.Main()
}

// redisLogger routes go-redis's own lines (a failed dial while Redis is
// down) into Caddy's logger, which log returns at each line (Caddy's
// default logger changes with its configuration), as warnings named
// "redis", at most one of a kind every logging.RedisInterval: the edge's
// log stays structured (README, "logs are JSON on stderr").
func redisLogger(log func() *zap.Logger) *logging.RedisLogger {
	return logging.NewRedisLogger(logging.RedisInterval, func(_ context.Context, msg string, suppressed int) {
		log().Named("redis").Warn("redis client", zap.String("detail", msg), zap.Int("suppressed", suppressed))
	})
}
