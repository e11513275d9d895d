package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/logging"
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
			cfg, err := config.FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			err = start(cfg, slog.New(slog.DiscardHandler), "IW_TEST_METRICS_ADDR", func(config.Config) string { return tc.addr }, tc.run)
			if !tc.wantErr(err) {
				t.Errorf("start returned %v", err)
			}
		})
	}
}

// jsonLines parses every line of a process's log as a JSON record.
func jsonLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if strings.TrimSpace(log) == "" {
		return nil
	}
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q\nwhole log:\n%s", line, log)
		}
		out = append(out, rec)
	}
	return out
}

// stopDuringStart is a command that is stopped while it still starts: it
// signals itself and, as the worker waiting for its signing key does,
// returns the cancellation wrapped.
func stopDuringStart(ctx context.Context, p *Process) error {
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		return err
	}
	<-ctx.Done()
	return fmt.Errorf("signing: reading the key: %w", ctx.Err())
}

// waitForCancel is a command that runs until its context ends and then
// reports the cancellation, as one still starting does.
func waitForCancel(ctx context.Context, p *Process) error {
	<-ctx.Done()
	return fmt.Errorf("signing: reading the key: %w", ctx.Err())
}

// TestMainLogsJSON checks that what a process writes on stderr is JSON
// records: its fatal error (with status 1), whether from the configuration,
// from start-up or from the command, and go-redis's own lines while Redis
// is unreachable; and that a stop signal, even during start-up, is a clean
// exit with no error record.
func TestMainLogsJSON(t *testing.T) {
	closed := "redis://127.0.0.1:" + strconv.Itoa(freeport.Port(t)) + "/0"
	testCases := []struct {
		desc string
		env  map[string]string
		// addr is the operator listener's address; 127.0.0.1:0 if empty.
		addr    string
		run     func(ctx context.Context, p *Process) error
		want    int
		wantErr string
		// wantRedis: a record of go-redis's own. redisMayLog: whether one
		// may appear or not; a stop that cancels a command in flight can
		// make go-redis warn as it closes the connection.
		wantRedis, redisMayLog bool
	}{
		{
			desc:    "an operator address without a port is the error, naming its variable, over run's cancellation",
			addr:    "nope",
			run:     waitForCancel,
			want:    1,
			wantErr: "IW_TEST_METRICS_ADDR: operator listener on nope: listen tcp: address nope: missing port in address",
		},
		{
			desc:        "a stop signal while run still starts",
			run:         stopDuringStart,
			want:        0,
			redisMayLog: true,
		},
		{
			desc:      "a stop signal while run still starts, with Redis unreachable",
			env:       map[string]string{"IW_REDIS_URL": closed},
			run:       stopDuringStart,
			want:      0,
			wantRedis: true,
		},
		{
			desc:    "a configuration error",
			env:     map[string]string{"IW_SHUTDOWN_GRACE": "soon"},
			want:    1,
			wantErr: "IW_SHUTDOWN_GRACE",
		},
		{
			desc: "run's error, with Redis unreachable",
			env:  map[string]string{"IW_REDIS_URL": closed},
			run: func(ctx context.Context, p *Process) error {
				return fmt.Errorf("signing: %w", p.Redis.Ping(ctx).Err())
			},
			want:      1,
			wantErr:   "signing: ",
			wantRedis: true,
		},
		{
			desc: "success",
			run:  func(ctx context.Context, p *Process) error { return nil },
			want: 0,
		},
	}
	rs := redistest.New(t)
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Setenv("IW_REDIS_URL", rs.URL())
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			addr := tc.addr
			if addr == "" {
				addr = "127.0.0.1:0"
			}
			var buf logging.Buffer
			code := mainCode(&buf, "test", "IW_TEST_METRICS_ADDR", func(config.Config) string { return addr }, tc.run)
			if code != tc.want {
				t.Errorf("exit status %d, want %d", code, tc.want)
			}
			recs := jsonLines(t, buf.String())
			sawRedis := false
			for _, r := range recs {
				if r["msg"] == "redis client" {
					sawRedis = true
				}
			}
			if sawRedis != tc.wantRedis && !tc.redisMayLog {
				t.Errorf("go-redis's record logged: %v, want %v\n%s", sawRedis, tc.wantRedis, buf.String())
			}
			if tc.wantErr == "" {
				for _, r := range recs {
					if r["level"] == "ERROR" {
						t.Errorf("an error record %v, want none", r)
					}
				}
				return
			}
			last := recs[len(recs)-1]
			if errText, _ := last["err"].(string); last["level"] != "ERROR" || last["msg"] != "test failed" || last["process"] != "test" || !strings.Contains(errText, tc.wantErr) {
				t.Errorf("last record %v, want the error mentioning %q", last, tc.wantErr)
			}
		})
	}
}
