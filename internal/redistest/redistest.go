// Package redistest starts real redis-server processes for tests, the way
// net/http/httptest starts real HTTP servers: each on a free loopback port,
// with its own data directory, stopped when the test ends.
//
// Tests never mock Redis; they run against the same server the service uses.
package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process owned by a test.
type Server struct {
	t    testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
	args []string
}

// Start launches a redis-server with append-only persistence (the settings
// of DESIGN §5) on a free port and registers its shutdown with t.Cleanup.
// Extra redis.conf directives may be passed as "name value" strings.
func Start(t testing.TB, directives ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH (make test installs it): %v", err)
	}
	s := &Server{t: t, dir: t.TempDir(), port: freePort(t)}
	s.args = []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--appendonly", "yes",
		"--appendfsync", "everysec",
		"--save", "",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}
	for _, d := range directives {
		name, value, _ := strings.Cut(d, " ")
		s.args = append(s.args, "--"+name, value)
	}
	s.args = append([]string{bin}, s.args...)
	s.launch()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) launch() {
	s.t.Helper()
	s.cmd = exec.Command(s.args[0], s.args[1:]...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redistest: starting redis-server: %v", err)
	}
	waitReady(s.t, s.Addr())
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's address as an IW_REDIS_URL value.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a new go-redis client for the server, closed at cleanup.
func (s *Server) Client() *redis.Client {
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
	if crash {
		s.Kill()
	} else {
		s.Stop()
	}
	s.launch()
}

func waitReady(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redistest: redis-server on %s did not answer PING within 10s", addr)
}

// freePort asks the kernel for an unused loopback port. Another process could
// take it before redis-server binds it; the window is small and a clash fails
// the test loudly rather than silently.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
