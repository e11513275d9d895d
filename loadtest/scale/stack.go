package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/loadtest/procwatch"
)

// proc is a process the run started: the binaries of bin/ and redis-server.
type proc struct {
	name string
	cmd  *exec.Cmd
	// log keeps the process's output, for errors and for lines the run
	// reads (the origin's "index built").
	log *logging.Buffer
}

// start runs name with args and env added to the run's environment. The
// process dies with the run (parent-death signal).
func start(name string, env []string, args ...string) (*proc, error) {
	p := &proc{name: filepath.Base(name), log: &logging.Buffer{}}
	p.cmd = exec.Command(name, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("scale: starting %s: %w", name, err)
	}
	return p, nil
}

// stop ends the process with SIGTERM, then SIGKILL after ten seconds.
func (p *proc) stop() {
	if p != nil {
		procwatch.Stop(p.cmd, 10*time.Second)
	}
}

// rss is the process's resident set size in bytes.
func (p *proc) rss() int64 { return procwatch.RSS(p.cmd.Process.Pid) }

// run is what runOnce measured of a finished command.
type run struct {
	wall, cpu time.Duration
	peakRSS   int64
	out       string
}

// runOnce runs a command to its end and reports its wall time, CPU time
// (user and system: on a shared machine the wall time depends on what else
// runs) and peak RSS.
func runOnce(name string, env []string, args ...string) (r run, err error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	t0 := time.Now()
	err = cmd.Run()
	r.wall = time.Since(t0)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.peakRSS = ru.Maxrss << 10
			r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	r.out = b.String()
	if err != nil {
		err = fmt.Errorf("scale: %s %s: %w\n%s", name, strings.Join(args, " "), err, tail(r.out, 2000))
	}
	return r, err
}

// freePort is a port for one of the stack's servers, below the ephemeral
// range so that no outgoing connection takes it before the server binds it
// (internal/freeport).
func freePort() (int, error) {
	ports, err := freeport.Find(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// startRedis starts a fresh redis-server with no persistence in dir.
func startRedis(dir string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	p, err := start("redis-server", nil, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return p, "redis://" + addr + "/0", nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, "", errors.New("scale: redis-server did not start:\n" + p.log.String())
}

// waitHTTP polls until check answers true or timeout passes, and returns
// how long that took.
func waitHTTP(ctx context.Context, timeout time.Duration, check func(ctx context.Context) bool) (time.Duration, error) {
	t0 := time.Now()
	for time.Since(t0) < timeout {
		if check(ctx) {
			return time.Since(t0), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("scale: not ready after %s", timeout)
}

// status performs req and returns its status and body.
func status(client *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
