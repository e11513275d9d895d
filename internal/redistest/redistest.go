// Package redistest starts real redis-server processes for tests, the way
// net/http/httptest starts real HTTP servers: each on a free loopback port,
// with its own data directory, stopped when the test ends.
//
// Tests never mock Redis; they run against the same server the service uses.
// New starts "the suite's Redis": one server, or a three-master Redis
// Cluster when the test process runs in cluster mode (see New), so the same
// integration tests cover both deployments of docs/architecture.md.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/freeport"
)

// Backend is a Redis a test owns: a single *Server or a *Cluster.
type Backend interface {
	// URL is the backend as an IW_REDIS_URL value.
	URL() string
	// Client returns a new client for the backend, closed at cleanup.
	Client() redis.UniversalClient
	// Stop shuts the backend down gracefully; safe to call twice.
	Stop()
	// Kill ends every process with SIGKILL, as a crash would.
	Kill()
	// Restart stops the backend (with SIGKILL when crash is true) and
	// starts it again on the same ports and data directories, returning
	// once it serves commands again.
	Restart(crash bool)
}

// clusterMode is read once, when the test binary starts, so a test that
// sets IW_REDIS_URL for the code under test (t.Setenv) does not switch the
// backend of the tests after it.
var clusterMode = strings.HasPrefix(os.Getenv("IW_REDIS_URL"), "redis+cluster://")

// ClusterMode reports whether New starts clusters in this test process.
func ClusterMode() bool { return clusterMode }

// New starts the suite's Redis for t: a single server (Start) by default,
// and a local three-master Redis Cluster (StartCluster) when the test
// process was started with IW_REDIS_URL beginning with "redis+cluster://"
// (as in `IW_REDIS_URL=redis+cluster:// go test ./...`, which make test
// runs). Only the scheme selects the mode: any addresses in the variable
// are ignored, because tests flush, kill and restart their Redis and so
// always start their own throwaway servers on free ports.
//
// Tests that depend on one server's specifics call Start directly.
func New(t testing.TB) Backend {
	t.Helper()
	record(t)
	if clusterMode {
		return StartCluster(t)
	}
	return Start(t)
}

// ForEachNode runs f on every node behind rdb, one after the other: the
// server of a plain client, or each master of a cluster client. Keyless
// commands that describe one node (KEYS, PUBSUB NUMSUB, CLIENT KILL) go to
// a single, arbitrary node on a cluster client; a test that means all of
// them sends them through ForEachNode.
func ForEachNode(ctx context.Context, rdb redis.UniversalClient, f func(ctx context.Context, node *redis.Client) error) error {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		c, ok := rdb.(*redis.Client)
		if !ok {
			return fmt.Errorf("redistest: ForEachNode: unsupported client %T", rdb)
		}
		return f(ctx, c)
	}
	var mu sync.Mutex
	return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		// ForEachMaster calls f concurrently; one at a time is simpler for
		// the callers and costs nothing on three nodes.
		mu.Lock()
		defer mu.Unlock()
		return f(ctx, n)
	})
}

// Keys returns the keys matching pattern on every node behind rdb. For
// tests on small data sets.
func Keys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var out []string
	err := ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, pattern).Result()
		out = append(out, keys...)
		return err
	})
	return out, err
}

// Hashes reads the hashes at keys whole, as "key field" → value: what a
// test compares before and after a change that must leave them alone.
func Hashes(t testing.TB, rdb redis.UniversalClient, keys ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range keys {
		m, err := rdb.HGetAll(context.Background(), k).Result()
		if err != nil {
			t.Fatalf("redistest: reading hash %s: %v", k, err)
		}
		for f, v := range m {
			out[k+" "+f] = v
		}
	}
	return out
}

// Server is one redis-server process owned by a test.
type Server struct {
	t    testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
	args []string
}

// Start launches a redis-server with append-only persistence (the settings
// of docs/architecture.md) on a free port and registers its shutdown with t.Cleanup.
// Extra redis.conf directives may be passed as "name value" strings.
func Start(t testing.TB, directives ...string) *Server {
	t.Helper()
	s := newServer(t, freeport.Port(t), directives)
	if err := s.launch(); err != nil {
		t.Fatal(err)
	}
	return s
}

// newServer prepares a server on port without starting it; its shutdown is
// registered with t.Cleanup.
func newServer(t testing.TB, port int, directives []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH (make test installs it): %v", err)
	}
	dir := t.TempDir()
	s := &Server{t: t, dir: dir, port: port, args: serverArgs(bin, dir, port, directives)}
	t.Cleanup(s.Stop)
	return s
}

// serverArgs is the command line of a redis-server on port with its data
// in dir, with extra redis.conf directives ("name value").
func serverArgs(bin, dir string, port int, directives []string) []string {
	args := []string{
		bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--appendonly", "yes",
		"--appendfsync", "everysec",
		"--save", "",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	for _, d := range directives {
		name, value, _ := strings.Cut(d, " ")
		args = append(args, "--"+name, value)
	}
	return args
}

// launch starts the process and waits until it answers PING. It returns an
// error rather than failing the test so clusters can launch nodes from
// several goroutines.
func (s *Server) launch() error {
	s.cmd = exec.Command(s.args[0], s.args[1:]...)
	s.cmd.SysProcAttr = procAttr()
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	if err := waitReady(s.Addr()); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's address as an IW_REDIS_URL value.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a new go-redis client for the server, closed at cleanup.
func (s *Server) Client() redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Stop shuts the server down, saving nothing beyond what the append-only
// file already holds. It is safe to call twice.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Kill ends the server with SIGKILL, as a crash would; only what reached the
// append-only file survives.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart stops the server (gracefully, or with SIGKILL when crash is true)
// and starts it again on the same port and data directory.
func (s *Server) Restart(crash bool) {
	s.t.Helper()
	s.down(crash)
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) down(crash bool) {
	if crash {
		s.Kill()
	} else {
		s.Stop()
	}
}

// waitReady polls addr with PING until it answers, for at most 30 s: a
// server reading a large append-only file back answers LOADING meanwhile.
func waitReady(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		err = ping(addr)
		if err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.Join(fmt.Errorf("redistest: redis-server on %s did not answer PING within 30s", addr), err)
}

// ping sends one PING. It dials first with net.Dial, since go-redis
// retries (and logs) a refused dial five times, and uses a new client each
// time, since go-redis throttles a client's dialling after failures. A
// server still replaying its append-only file answers LOADING, an error:
// a ready server has its data back.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}
