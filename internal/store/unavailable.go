package store

import (
	"errors"
	"os"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Unavailable tells whether err means Redis cannot serve right now, rather
// than a fault of the request or of the code, so that a client is told 503
// with Retry-After instead of 500 (docs/decisions.md, "Redis unreachable"):
//   - a network error (a refused connection is a *net.OpError too) or a
//     timeout;
//   - a Redis that is there but cannot serve the command for now: reading
//     its data back after a restart (LOADING), full and refusing writes
//     (OOM, with maxmemory-policy noeviction), out of connections, a
//     replica that lost or is changing its master (MASTERDOWN, READONLY),
//     a cluster failing over (CLUSTERDOWN, TRYAGAIN), or busy with a long
//     script (BUSY).
//
// Each is found with the library's checks rather than by matching error
// text, except BUSY, which it has no check for.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrDeadlineExceeded) ||
		redis.IsLoadingError(err) || redis.IsOOMError(err) || redis.IsMaxClientsError(err) ||
		redis.IsMasterDownError(err) || redis.IsReadOnlyError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) ||
		redis.HasErrorPrefix(err, "BUSY ")
}
