package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitLoaded blocks while Redis answers LOADING: after a restart it reads
// its append-only file back before it serves, which takes seconds for a
// large data set, and a process started meanwhile would otherwise fail on
// its first command. Every master of a cluster is asked. It returns at once
// when Redis answers, or fails in any other way (the caller's own handling
// of an unreachable Redis applies then), and with ctx's error when ctx ends
// first.
func WaitLoaded(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) error {
	logged := false
	for {
		err := pingAll(ctx, rdb)
		if err == nil || !redis.HasErrorPrefix(err, "LOADING") {
			if logged {
				log.Info("redis finished loading its data")
			}
			return nil
		}
		if !logged {
			log.Info("waiting for redis to load its data", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func pingAll(ctx context.Context, rdb redis.UniversalClient) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	}
	return rdb.Ping(ctx).Err()
}
