package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// answerTimeout bounds reaching Redis before a command runs: connecting,
// the TLS handshake of a rediss:// URL and the answer to one PING.
const answerTimeout = 5 * time.Second

// checkAnswers dials the Redis server of a single-server client as go-redis
// would and sends it one PING, before a command sends anything, so that a
// URL whose scheme does not match the port fails at once and says so.
// Through go-redis a rediss:// URL at a plain Redis waits: the server reads
// the TLS ClientHello as the start of an inline command and never answers,
// and go-redis gives the handshake its whole dial timeout on each of its
// dial attempts (tls.DialWithDialer heeds no context), then reports only
// "context deadline exceeded" (about 51 s for a sync); a redis:// URL at a
// TLS-only port reports a bare "EOF". Any answer to the PING, an error
// such as NOAUTH or LOADING included, is left to the command: the server
// is there. A cluster client (redis+cluster://, which has no TLS form) is
// not checked: one of its seed nodes may be down while the others serve.
// The error names the address, never the URL and so never its password.
func checkAnswers(ctx context.Context, rdb redis.UniversalClient) error {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	opts := c.Options()
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, opts.Network, opts.Addr)
	if err != nil {
		return fmt.Errorf("reaching redis at %s: %w", opts.Addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // a cancelled command stops waiting too
	defer stop()
	scheme, other := "redis:// (no TLS)", "rediss://"
	if opts.TLSConfig != nil {
		scheme, other = "rediss:// (TLS)", "redis://"
		tc := tls.Client(conn, opts.TLSConfig.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			var rh tls.RecordHeaderError
			switch {
			case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
				return fmt.Errorf("redis at %s did not complete a TLS handshake within %s: IW_REDIS_URL is %s; check its scheme and port (a plain Redis port takes %s)", opts.Addr, answerTimeout, scheme, other)
			case errors.As(err, &rh):
				return fmt.Errorf("redis at %s did not answer in TLS (%w): IW_REDIS_URL is %s; check its scheme and port (a plain Redis port takes %s)", opts.Addr, err, scheme, other)
			}
			return fmt.Errorf("TLS handshake with redis at %s: %w", opts.Addr, err)
		}
		conn = tc
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return fmt.Errorf("sending PING to redis at %s: %w", opts.Addr, err)
	}
	var first [1]byte
	_, err = conn.Read(first[:])
	switch {
	case err == nil && (opts.TLSConfig != nil || first[0] != 0x15):
		return nil // an answer; on a plain connection 0x15 starts a TLS alert
	case err != nil && (ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)):
		return fmt.Errorf("redis at %s accepted the connection but did not answer PING within %s", opts.Addr, answerTimeout)
	case opts.TLSConfig == nil:
		return fmt.Errorf("redis at %s closed the connection without answering PING: IW_REDIS_URL is %s; check its scheme and port (a TLS-only Redis port takes %s)", opts.Addr, scheme, other)
	}
	return fmt.Errorf("redis at %s closed the connection without answering PING: %w", opts.Addr, err)
}
