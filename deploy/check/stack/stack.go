// Package stack starts Invoicewire's real processes for the deploy checks:
// a redis-server on a free loopback port, the content published with iwctl,
// the origin, the worker and the edge (Caddy with the modules, running the
// Kubernetes Caddyfile with loopback addresses), each with its metrics
// listener. Binaries are built from the repository with its own module.
// The edge runs one of the shipped Caddyfiles (Options.Caddyfile): the
// Kubernetes one by default, make run's or the production example.
package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// Stack is a running set of processes.
type Stack struct {
	t    testing.TB
	Root string
	dir  string
	bins map[string]string
	env  []string

	RedisPort     int
	OriginAddr    string // host:port of the origin's public listener
	OriginMetrics string
	WorkerMetrics string
	EdgeAddr      string // host:port of the edge's public listener ("" without edge)
	EdgeMetrics   string

	procs     map[string]*proc
	caddyfile string
}

// proc is a started process and done, closed once cmd.Wait has returned.
// Whether it still runs is asked of done, never of cmd.ProcessState:
// cmd.Wait writes that from the goroutine that waits (os/exec, Cmd.Wait).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Options choose what runs.
type Options struct {
	Edge, Worker bool
	// Env is added to every process's environment (IW_RATELIMIT_QUOTA, …).
	Env []string
	// Caddyfile is the edge's configuration: one of CaddyfileK8s (the
	// default), CaddyfileRun or CaddyfileProduction.
	Caddyfile string
	// Bins, when set, are the commands to run, by name, as repo.Build
	// returns them: a test that starts several stacks builds once.
	Bins map[string]string
}

// The shipped Caddyfiles, by their path in the repository.
const (
	CaddyfileK8s        = "deploy/k8s/base/Caddyfile"
	CaddyfileRun        = "caddyfile/Caddyfile"
	CaddyfileProduction = "caddyfile/Caddyfile.production"
)

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("stack: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start builds the binaries and starts Redis, publishes content/, and
// starts the origin and, as asked, the worker and the edge. Everything is
// stopped when the test ends.
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("stack: redis-server is not installed (deploy/local/deps.sh installs it)")
	}
	root := repo.Root(t)
	names := []string{"origin", "iwctl"}
	if o.Worker {
		names = append(names, "worker")
	}
	if o.Edge {
		names = append(names, "edge")
	}
	if o.Caddyfile == "" {
		o.Caddyfile = CaddyfileK8s
	}
	s := newStack(t, t.TempDir())
	s.Root, s.caddyfile = root, o.Caddyfile
	s.bins = o.Bins
	if s.bins == nil {
		s.bins = repo.Build(t, root, filepath.Join(s.dir, "bin"), names...)
	}
	for _, n := range names {
		if s.bins[n] == "" {
			t.Fatalf("stack: Options.Bins has no %s", n)
		}
	}
	s.RedisPort = FreePort(t)
	s.OriginAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	s.OriginMetrics = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	s.WorkerMetrics = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	public := s.OriginAddr
	if o.Edge {
		s.EdgeAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		s.EdgeMetrics = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		public = s.EdgeAddr
	}
	s.env = append(os.Environ(),
		"IW_PUBLIC_URL=http://"+public,
		fmt.Sprintf("IW_REDIS_URL=redis://127.0.0.1:%d/0", s.RedisPort),
		"IW_ORIGIN_ADDR="+s.OriginAddr,
		"IW_ORIGIN_METRICS_ADDR="+s.OriginMetrics,
		"IW_WORKER_METRICS_ADDR="+s.WorkerMetrics,
		"IW_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8",
		"IW_LOG_LEVEL=warn",
		"IW_SHUTDOWN_GRACE=2s",
		// make run's and the production Caddyfile take their addresses
		// from the environment (the Kubernetes one is rewritten below).
		"IW_EDGE_PORT="+portOf(s.EdgeAddr),
		"IW_EDGE_ADMIN_ADDR="+s.EdgeMetrics,
		"IW_SITE_HOST=http://"+s.EdgeAddr,
		"IW_ORIGIN_ADDRS="+s.OriginAddr,
		// Loopback clients may name others in X-Forwarded-For, as the
		// Kubernetes file's private ranges allow.
		"IW_TRUSTED_PROXIES=127.0.0.0/8",
	)
	if s.caddyfile == CaddyfileProduction && o.Edge {
		// The production file serves /metrics on a loopback site of its
		// own; its admin API (a unix socket on a VM) goes elsewhere.
		s.env = append(s.env,
			"IW_EDGE_METRICS_PORT="+portOf(s.EdgeMetrics),
			fmt.Sprintf("IW_EDGE_ADMIN_ADDR=127.0.0.1:%d", FreePort(t)))
	}
	s.env = append(s.env, o.Env...)

	s.StartRedis()
	s.run("iwctl-sync", s.bins["iwctl"], "sync", filepath.Join(root, "content"))
	s.StartOrigin()
	if o.Worker {
		s.StartWorker()
	}
	if o.Edge {
		s.startEdge()
	}
	return s
}

// newStack is a Stack with no process yet, keeping its files in dir: Start
// fills in the rest, and this package's tests run processes of their own
// in it without building binaries or starting Redis.
func newStack(t testing.TB, dir string) *Stack {
	return &Stack{t: t, dir: dir, procs: map[string]*proc{}}
}

// PublicURL is where clients go: the edge, or the origin without one.
func (s *Stack) PublicURL() string {
	if s.EdgeAddr != "" {
		return "http://" + s.EdgeAddr
	}
	return "http://" + s.OriginAddr
}

// StartRedis starts (or restarts, on the same port and data) redis-server
// with append-only persistence, as make run does.
func (s *Stack) StartRedis() {
	data := filepath.Join(s.dir, "redis")
	if err := os.MkdirAll(data, 0o755); err != nil {
		s.t.Fatalf("stack: creating Redis's data directory: %v", err)
	}
	s.start("redis", "redis-server", "--port", strconv.Itoa(s.RedisPort), "--bind", "127.0.0.1",
		"--dir", data, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "")
	s.waitTCP("redis", fmt.Sprintf("127.0.0.1:%d", s.RedisPort))
}

// StartOrigin starts (or restarts) the origin and waits until it answers.
func (s *Stack) StartOrigin() {
	s.start("origin", s.bins["origin"])
	s.waitHTTP("origin", "http://"+s.OriginAddr+"/api/v1/")
}

// StartWorker starts (or restarts) the worker and waits for its metrics.
func (s *Stack) StartWorker() {
	s.start("worker", s.bins["worker"])
	s.waitHTTP("worker", "http://"+s.WorkerMetrics+"/metrics")
}

// Caddyfile is the shipped Caddyfile this stack runs, with its fixed
// addresses replaced by the stack's loopback ones: the same file, run for
// real. The Kubernetes file's site and metrics listener are rewritten; the
// production file and make run's take every address from the environment.
func (s *Stack) Caddyfile() string {
	b, err := os.ReadFile(filepath.Join(s.Root, filepath.FromSlash(s.caddyfile)))
	if err != nil {
		s.t.Fatal(err)
	}
	var rewrites []struct{ re, repl string }
	switch s.caddyfile {
	case CaddyfileK8s:
		rewrites = []struct{ re, repl string }{
			{`(?m)^\tadmin 127\.0\.0\.1:2019$`, fmt.Sprintf("\tadmin 127.0.0.1:%d", FreePort(s.t))},
			// Same site addresses, other ports, bound to loopback only.
			{`(?m)^:8080 \{$`, ":" + portOf(s.EdgeAddr) + " {\n\tbind 127.0.0.1"},
			{`(?m)^:9180 \{$`, ":" + portOf(s.EdgeMetrics) + " {\n\tbind 127.0.0.1"},
			{`(?m)^(\t+)name origin$`, "${1}name 127.0.0.1"},
			{`(?m)^(\t+)port 8081$`, "${1}port " + portOf(s.OriginAddr)},
		}
	case CaddyfileProduction, CaddyfileRun:
	default:
		s.t.Fatalf("stack: unknown Caddyfile %q", s.caddyfile)
	}
	c := string(b)
	for _, r := range rewrites {
		re := regexp.MustCompile(r.re)
		if !re.MatchString(c) {
			s.t.Fatalf("stack: %s no longer has %s; update deploy/check/stack", s.caddyfile, r.re)
		}
		c = re.ReplaceAllString(c, r.repl)
	}
	return c
}

// portOf is the port of a host:port address ("" for none).
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

func (s *Stack) startEdge() {
	path := filepath.Join(s.dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(s.Caddyfile()), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.start("edge", s.bins["edge"], "run", "--config", path, "--adapter", "caddyfile")
	// The Kubernetes file answers /healthz on its metrics listener; the
	// others serve /metrics on the admin listener.
	ready := "http://" + s.EdgeMetrics + "/metrics"
	if s.caddyfile == CaddyfileK8s {
		ready = "http://" + s.EdgeMetrics + "/healthz"
	}
	s.waitHTTP("edge", ready)
	// The admin listener starts before the sites' listeners do.
	s.waitHTTP("edge", "http://"+s.EdgeAddr+"/api/v1/")
}

// run runs a command to completion.
func (s *Stack) run(name, bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(s.env, "XDG_CONFIG_HOME="+s.dir, "XDG_DATA_HOME="+s.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("stack: %s: %v\n%s", name, err, out)
	}
}

// Run runs a binary of the stack (iwctl …) to completion and returns its output.
func (s *Stack) Run(name string, args ...string) string {
	cmd := exec.Command(s.bins[name], args...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("stack: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *Stack) start(name, bin string, args ...string) {
	if old := s.procs[name]; old != nil {
		select {
		case <-old.done:
		default:
			s.t.Fatalf("stack: %s is already running", name)
		}
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(s.env, "XDG_CONFIG_HOME="+s.dir, "XDG_DATA_HOME="+s.dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("stack: starting %s: %v", name, err)
	}
	done := make(chan struct{})
	s.procs[name] = &proc{cmd: cmd, done: done}
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	s.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if s.t.Failed() {
			s.t.Logf("stack: last lines of %s.log:\n%s", name, s.Tail(name, 15))
		}
	})
}

// Stop stops a process: gracefully (SIGTERM) or as a crash (SIGKILL),
// killing it after 10 seconds. It returns once the process has been waited
// for, so that it can be started again under its name at once.
func (s *Stack) Stop(name string, crash bool) {
	p := s.procs[name]
	if p == nil {
		s.t.Fatalf("stack: %s never started", name)
	}
	sig := syscall.SIGTERM
	if crash {
		sig = syscall.SIGKILL
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail returns the last n lines of a process's log.
func (s *Stack) Tail(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *Stack) waitTCP(name, addr string) {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("stack: %s did not listen on %s:\n%s", name, addr, s.Tail(name, 20))
}

func (s *Stack) waitHTTP(name, url string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("stack: %s did not answer %s:\n%s", name, url, s.Tail(name, 20))
}

// Scrape fetches a /metrics endpoint's text.
func Scrape(ctx context.Context, addr string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, fmt.Errorf("scraping %s: %w", addr, err)
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("scraping %s: status %d", addr, resp.StatusCode)
	}
	return buf.Bytes(), nil
}
