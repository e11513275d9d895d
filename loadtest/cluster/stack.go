package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/loadtest/procwatch"
)

// proc is a process the run started; it dies with the run (parent-death
// signal).
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// stack is every process of the run and where it listens.
type stack struct {
	dir   string
	env   []string
	procs map[string]*proc

	redis    []string // the six cluster nodes, host:port; the first three start as masters
	redisURL string
	edges    []string // host:port
	admins   []string
	origins  []string
	workers  []string // metrics addresses
	receiver string
}

// freeAddr is a loopback address for one of the stack's servers, below
// the ephemeral range so that no outgoing connection takes its port before
// the server binds it (internal/freeport).
func freeAddr() string {
	addr, err := freeport.Addr()
	if err != nil {
		panic(err)
	}
	return addr
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// start runs args as name, its output in dir/name.log.
func (s *stack) start(name string, env []string, args ...string) error {
	logf, err := os.OpenFile(filepath.Join(s.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(append([]string{}, s.env...), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("cluster: starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	s.procs[name] = p
	return nil
}

// kill ends name with SIGKILL, as a crash would, and waits for it.
func (s *stack) kill(name string) {
	if p := s.procs[name]; p != nil {
		p.cmd.Process.Kill()
		<-p.done
		delete(s.procs, name)
	}
}

// stopAll ends every process with SIGTERM, then SIGKILL after five seconds.
func (s *stack) stopAll() {
	for _, p := range s.procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(5 * time.Second)
	for name, p := range s.procs {
		select {
		case <-p.done:
		case <-deadline:
			p.cmd.Process.Kill()
			<-p.done
		}
		delete(s.procs, name)
	}
}

// tail is the end of name's log, for error messages.
func (s *stack) tail(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// nodeTimeout is the cluster-node-timeout: how long a master may be
// unreachable before its replica takes over.
const nodeTimeout = 1000 * time.Millisecond

// startRedisCluster starts six cluster-enabled redis-servers with
// append-only persistence and joins them with redis-cli --cluster create
// into three masters with a replica each.
func (s *stack) startRedisCluster() error {
	for i := range 6 {
		addr, bus := freeAddr(), freeAddr()
		dir := filepath.Join(s.dir, "redis-"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := s.start("redis-"+strconv.Itoa(i), nil, "redis-server", "--port", port(addr), "--bind", "127.0.0.1",
			"--dir", dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(nodeTimeout/time.Millisecond)),
			"--cluster-port", port(bus), "--protected-mode", "no"); err != nil {
			return err
		}
		s.redis = append(s.redis, addr)
	}
	for _, addr := range s.redis {
		if err := procwatch.WaitFor(10*time.Second, func() bool {
			out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port(addr), "ping").Output()
			return err == nil && bytes.HasPrefix(out, []byte("PONG"))
		}); err != nil {
			return fmt.Errorf("cluster: redis on %s: %w", addr, err)
		}
	}
	args := append([]string{"--cluster", "create"}, s.redis...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := s.waitClusterOK(30 * time.Second); err != nil {
		return err
	}
	s.redisURL = "redis+cluster://" + strings.Join(s.redis, ",")
	return nil
}

// waitClusterOK waits until every live node reports cluster_state:ok and
// every replica has finished its first sync.
func (s *stack) waitClusterOK(timeout time.Duration) error {
	return procwatch.WaitFor(timeout, func() bool {
		for i, addr := range s.redis {
			if s.procs["redis-"+strconv.Itoa(i)] == nil {
				continue
			}
			out, err := exec.Command("redis-cli", "-p", port(addr), "cluster", "info").Output()
			if err != nil || !bytes.Contains(out, []byte("cluster_state:ok")) {
				return false
			}
			repl, err := exec.Command("redis-cli", "-p", port(addr), "info", "replication").Output()
			if err != nil || (bytes.Contains(repl, []byte("role:slave")) && !bytes.Contains(repl, []byte("master_link_status:up"))) {
				return false
			}
		}
		return true
	})
}

// master returns the index of a node that is a master now.
func (s *stack) master() int {
	for i, addr := range s.redis {
		if s.procs["redis-"+strconv.Itoa(i)] == nil {
			continue
		}
		out, _ := exec.Command("redis-cli", "-p", port(addr), "info", "replication").Output()
		if bytes.Contains(out, []byte("role:master")) {
			return i
		}
	}
	return -1
}

// edgeCaddyfile is caddyfile/Caddyfile.production with this edge's admin
// address: the production configuration (several origins, load balancing,
// health checks), served over plain HTTP on a loopback port.
func edgeCaddyfile(dir, admin string) (string, error) {
	b, err := os.ReadFile("caddyfile/Caddyfile.production")
	if err != nil {
		return "", err
	}
	const line = "admin {$IW_EDGE_ADMIN_ADDR:127.0.0.1:2019}"
	if !bytes.Contains(b, []byte(line)) {
		return "", fmt.Errorf("cluster: caddyfile/Caddyfile.production no longer has %q", line)
	}
	cfg := strings.Replace(string(b), line, "admin "+admin, 1)
	path := filepath.Join(dir, "Caddyfile."+port(admin))
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

// startServices starts the receiver, two origins, two workers and three
// edges on the cluster.
func (s *stack) startServices() error {
	s.receiver = freeAddr()
	if err := s.start("receiver", nil, "bin/receiver", "-addr", s.receiver); err != nil {
		return err
	}
	for i := range 2 {
		addr, metrics := freeAddr(), freeAddr()
		s.origins = append(s.origins, addr)
		if err := s.start("origin-"+strconv.Itoa(i), []string{"IW_ORIGIN_ADDR=" + addr, "IW_ORIGIN_METRICS_ADDR=" + metrics}, "bin/origin"); err != nil {
			return err
		}
		wm := freeAddr()
		s.workers = append(s.workers, wm)
		if err := s.start("worker-"+strconv.Itoa(i), []string{"IW_WORKER_METRICS_ADDR=" + wm}, "bin/worker"); err != nil {
			return err
		}
	}
	for i := range 3 {
		addr, admin := freeAddr(), freeAddr()
		cfg, err := edgeCaddyfile(s.dir, admin)
		if err != nil {
			return err
		}
		s.edges, s.admins = append(s.edges, addr), append(s.admins, admin)
		env := []string{"IW_SITE_HOST=http://" + addr, "IW_ORIGIN_ADDRS=" + strings.Join(s.origins, " ")}
		if err := s.start("edge-"+strconv.Itoa(i), env, "bin/edge", "run", "--config", cfg, "--adapter", "caddyfile"); err != nil {
			return err
		}
	}
	ready := map[string]string{"receiver": "http://" + s.receiver + "/stats"}
	for i, o := range s.origins {
		ready["origin-"+strconv.Itoa(i)] = "http://" + o + "/api/v1/"
	}
	for i, w := range s.workers {
		ready["worker-"+strconv.Itoa(i)] = "http://" + w + "/metrics"
	}
	for i, e := range s.edges {
		ready["edge-"+strconv.Itoa(i)] = "http://" + e + "/api/v1/"
	}
	for name, url := range ready {
		if err := procwatch.WaitFor(2*time.Minute, func() bool { return procwatch.Answers(url) }); err != nil {
			return fmt.Errorf("cluster: %s: %w\n%s", name, err, s.tail(name))
		}
	}
	return nil
}
