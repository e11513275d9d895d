package process

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestStart runs start against a real Redis: run sees a loaded Redis and a
// serving operator listener, run's error is the command's, and an operator
// listener that cannot listen stops run and is reported.
func TestStart(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_LOG_LEVEL", "error")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	failed := errors.New("run failed")

	testCases := []struct {
		desc    string
		addr    string
		run     func(ctx context.Context, p *Process) error
		wantErr func(error) bool
	}{
		{
			desc: "run's error is returned",
			addr: freeAddr,
			run: func(ctx context.Context, p *Process) error {
				if err := p.Redis.Ping(ctx).Err(); err != nil {
					return err
				}
				return failed
			},
			wantErr: func(err error) bool { return errors.Is(err, failed) },
		},
		{
			desc: "a busy operator address stops run and is the error",
			addr: busy.Addr().String(),
			run: func(ctx context.Context, p *Process) error {
				<-ctx.Done()
				return nil
			},
			wantErr: func(err error) bool {
				var op *net.OpError
				return errors.As(err, &op)
			},
		},
		{
			desc: "the operator listener serves while run runs",
			addr: freeAddr,
			run: func(ctx context.Context, p *Process) error {
				for {
					resp, err := http.Get("http://" + freeAddr + "/healthz")
					if err == nil {
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							return errors.New(resp.Status)
						}
						return nil
					}
					if ctx.Err() != nil {
						return ctx.Err()
					}
					time.Sleep(10 * time.Millisecond)
				}
			},
			wantErr: func(err error) bool { return err == nil },
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			err := start("test", func(config.Config) string { return tc.addr }, tc.run)
			if !tc.wantErr(err) {
				t.Errorf("start returned %v", err)
			}
		})
	}
}
