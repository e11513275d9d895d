// Package local checks deploy/local/run.sh, the script behind `make run`:
// it refuses ports that are taken before starting anything, fails at once
// (naming the process and showing its last lines) when a process dies
// during start-up or after, waits through a Redis loading its data for as
// long as it makes progress, stops everything it started on Ctrl-C and
// SIGTERM, then exits, and keeps each run's data and logs apart, so that a
// second run beside the first, on other ports, touches nothing of it.
//
// The script runs in a temporary copy of the repository's layout whose
// bin/ holds stand-ins for edge, origin, worker and iwctl, with stand-ins
// for redis-server, redis-cli and curl first on PATH: small shell scripts
// that behave as each case asks (start, die, never answer, answer LOADING).
// Nothing here needs the real service, so each case takes seconds.
//
// makefile_test.go checks the Makefile's targets against what they promise
// and deploy/local/cluster-pass.sh, the Redis Cluster pass of make test and
// make test-cluster, with a stand-in for go.
package local

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// program stands in for bin/origin, bin/worker and bin/edge. Its mode file
// says what it does: ok (answers on its port), fail (exits at once with a
// bind error, as a process whose port is taken does) or hang (runs but
// never answers). It records that it started, and its pid while it runs;
// its first line names the run by its edge port.
const program = `#!/usr/bin/env bash
name=$(basename "$0")
touch "$STUB_STATE/$name.started"
case $name in
  origin) port=${IW_ORIGIN_ADDR##*:} ;;
  edge) port=$IW_EDGE_PORT ;;
  *) port= ;;
esac
echo "$name: starting (edge port $IW_EDGE_PORT)"
mode=$(cat "$STUB_STATE/$name.mode" 2>/dev/null || echo ok)
if [ "$mode" = fail ]; then
  echo "$name: listen tcp 127.0.0.1:$port: bind: address already in use" >&2
  exit 1
fi
echo $$ >"$STUB_STATE/$name.pid"
trap 'echo "$name: stopping"; rm -f "$STUB_STATE/$name.pid"; kill $s 2>/dev/null; exit 0' TERM
[ "$mode" = ok ] && [ -n "$port" ] && touch "$STUB_STATE/up-$port"
sleep 1000 &
s=$!
wait $s
`

const iwctl = `#!/usr/bin/env bash
echo "iwctl $*"
`

// redisServer records its pid and its arguments by port and runs until
// stopped.
const redisServer = `#!/usr/bin/env bash
args="$*"
while [ $# -gt 0 ]; do [ "$1" = --port ] && port=$2; shift; done
echo "$args" >"$STUB_STATE/redis-$port.args"
touch "$STUB_STATE/redis-$port.started"
echo $$ >"$STUB_STATE/redis-$port.pid"
trap 'rm -f "$STUB_STATE/redis-$port.pid"; kill $s 2>/dev/null; exit 0' TERM
sleep 1000 &
s=$!
wait $s
`

// redisCLI answers "-p PORT ping" and "-p PORT info persistence" for the
// stand-in server on PORT: LOADING for N seconds from the first ping when
// the file redis-PORT.loading holds N, with loaded bytes that grow on every
// ping unless redis-PORT.stuck exists; then PONG.
const redisCLI = `#!/usr/bin/env bash
port=$2 cmd=$3 f="$STUB_STATE/redis-$2"
if ! [ -f "$f.pid" ] || ! kill -0 "$(cat "$f.pid")" 2>/dev/null; then
  echo "Could not connect to Redis at 127.0.0.1:$port: Connection refused" >&2
  exit 1
fi
n=$(cat "$f.pings" 2>/dev/null || echo 0)
case $cmd in
  ping)
    n=$((n + 1))
    echo $n >"$f.pings"
    [ -f "$f.first" ] || date +%s >"$f.first"
    if [ -f "$f.loading" ] && [ "$(date +%s)" -lt $(($(cat "$f.first") + $(cat "$f.loading"))) ]; then
      echo "LOADING Redis is loading the dataset in memory"
    else
      echo PONG
    fi ;;
  info)
    b=$((n * 4096))
    [ -f "$f.stuck" ] && b=4096
    printf 'loading:1\r\nloading_loaded_bytes:%s\r\n' "$b" ;;
esac
`

// curl succeeds for a URL whose port a stand-in answers on.
const curl = `#!/usr/bin/env bash
url=${@: -1}
hp=${url#http://}
hp=${hp%%/*}
[ -f "$STUB_STATE/up-${hp##*:}" ]
`

// vars are the port variables run.sh reads, in its order.
var vars = []string{"IW_EDGE_PORT", "IW_EDGE_ADMIN_ADDR", "IW_ORIGIN_ADDR", "IW_ORIGIN_METRICS_ADDR", "IW_WORKER_METRICS_ADDR", "IW_REDIS_URL", "IW_RATELIMIT_REDIS_URL"}

// tree is one copy of the layout, with its own free ports.
type tree struct {
	dir, state string
	ports      map[string]int
	env        []string
}

func newTree(t *testing.T) *tree {
	t.Helper()
	root := repo.Root(t)
	dir := t.TempDir()
	tr := &tree{dir: dir, state: filepath.Join(dir, "state"), ports: map[string]int{}}
	script, err := os.ReadFile(filepath.Join(root, "deploy", "local", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("deploy/local/run.sh", string(script))
	for _, n := range []string{"origin", "worker", "edge"} {
		write("bin/"+n, program)
	}
	write("bin/iwctl", iwctl)
	write("stubs/redis-server", redisServer)
	write("stubs/redis-cli", redisCLI)
	write("stubs/curl", curl)
	if err := os.MkdirAll(tr.state, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range vars {
		tr.ports[v] = freePort(t)
	}
	tr.env = append(os.Environ(),
		"PATH="+filepath.Join(dir, "stubs")+":"+os.Getenv("PATH"),
		"STUB_STATE="+tr.state,
	)
	tr.env = append(tr.env, portEnv(tr.ports)...)
	return tr
}

// portEnv is the IW_* settings that put a run on ports.
func portEnv(p map[string]int) []string {
	return []string{
		fmt.Sprintf("IW_EDGE_PORT=%d", p["IW_EDGE_PORT"]),
		fmt.Sprintf("IW_EDGE_ADMIN_ADDR=127.0.0.1:%d", p["IW_EDGE_ADMIN_ADDR"]),
		fmt.Sprintf("IW_ORIGIN_ADDR=127.0.0.1:%d", p["IW_ORIGIN_ADDR"]),
		fmt.Sprintf("IW_ORIGIN_METRICS_ADDR=127.0.0.1:%d", p["IW_ORIGIN_METRICS_ADDR"]),
		fmt.Sprintf("IW_WORKER_METRICS_ADDR=127.0.0.1:%d", p["IW_WORKER_METRICS_ADDR"]),
		fmt.Sprintf("IW_REDIS_URL=redis://127.0.0.1:%d/0", p["IW_REDIS_URL"]),
		fmt.Sprintf("IW_RATELIMIT_REDIS_URL=redis://127.0.0.1:%d/0", p["IW_RATELIMIT_REDIS_URL"]),
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// set writes a stand-in's behaviour file.
func (tr *tree) set(t *testing.T, name, body string) {
	if err := os.WriteFile(filepath.Join(tr.state, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tr *tree) has(name string) bool {
	_, err := os.Stat(filepath.Join(tr.state, name))
	return err == nil
}

// run is run.sh running.
type run struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func (tr *tree) start(t *testing.T, env ...string) *run {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(tr.dir, "deploy", "local", "run.sh"))
	cmd.Env = append(tr.env, env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so the cleanup can end whatever it left.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &run{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	})
	return r
}

// wait waits for run.sh to exit and returns its status.
func (r *run) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("run.sh still running after %s; output:\n%s", within, r.out)
	}
	if r.err == nil {
		return 0
	}
	if ee, ok := r.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("run.sh: %v", r.err)
	return -1
}

// until waits for cond, failing after a while.
func until(t *testing.T, r *run, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		select {
		case <-r.done:
			t.Fatalf("run.sh exited before %s; output:\n%s", what, r.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20 s; output:\n%s", what, r.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noneLeft: every stand-in that recorded a pid has exited.
func (tr *tree) noneLeft(t *testing.T) {
	t.Helper()
	pids, _ := filepath.Glob(filepath.Join(tr.state, "*.pid"))
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			t.Errorf("%s (pid %d) is still running after run.sh exited", strings.TrimSuffix(filepath.Base(p), ".pid"), pid)
		}
	}
}

// TestPortTaken: each of the seven ports, taken by another program, stops
// run.sh before it starts anything, with a message naming the port and
// the variable that sets it.
func TestPortTaken(t *testing.T) {
	for _, v := range vars {
		t.Run(v, func(t *testing.T) {
			tr := newTree(t)
			port := tr.ports[v]
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			r := tr.start(t)
			if code := r.wait(t, 20*time.Second); code == 0 {
				t.Errorf("exit status 0 with port %d taken; output:\n%s", port, r.out)
			}
			want := fmt.Sprintf("port %d (%s=", port, v)
			if !strings.Contains(r.out.String(), want) || !strings.Contains(r.out.String(), "set "+v) {
				t.Errorf("output does not name the port and %s (want %q); output:\n%s", v, want, r.out)
			}
			if started, _ := filepath.Glob(filepath.Join(tr.state, "*.started")); len(started) > 0 {
				t.Errorf("started %v with a port taken", started)
			}
		})
	}
}

// TestPortTwice: two of its own variables on one port are refused too.
func TestPortTwice(t *testing.T) {
	tr := newTree(t)
	r := tr.start(t, fmt.Sprintf("IW_ORIGIN_METRICS_ADDR=127.0.0.1:%d", tr.ports["IW_ORIGIN_ADDR"]))
	if code := r.wait(t, 20*time.Second); code == 0 {
		t.Errorf("exit status 0; output:\n%s", r.out)
	}
	if !strings.Contains(r.out.String(), "IW_ORIGIN_ADDR and IW_ORIGIN_METRICS_ADDR both use port") {
		t.Errorf("output does not name the two variables; output:\n%s", r.out)
	}
}

// TestDiesDuringStartUp: the origin exits at once; run.sh says so within
// seconds, with the origin's last lines, never starts the edge, stops the
// rest and fails.
func TestDiesDuringStartUp(t *testing.T) {
	tr := newTree(t)
	tr.set(t, "origin.mode", "fail")
	r := tr.start(t)
	if code := r.wait(t, 10*time.Second); code != 1 {
		t.Errorf("exit status %d, want 1; output:\n%s", code, r.out)
	}
	out := r.out.String()
	for _, want := range []string{"origin exited during start-up", "  origin: listen tcp", "address already in use"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q; output:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Invoicewire is running") {
		t.Errorf("claims to be running; output:\n%s", out)
	}
	if tr.has("edge.started") {
		t.Error("started the edge after the origin died")
	}
	tr.noneLeft(t)
}

// TestSignalDuringStartUp: Ctrl-C or SIGTERM while run.sh waits for the
// origin stops what it started and ends the script: the edge is never
// started.
func TestSignalDuringStartUp(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			tr := newTree(t)
			tr.set(t, "origin.mode", "hang")
			r := tr.start(t)
			until(t, r, "origin", func() bool { return tr.has("origin.pid") })
			time.Sleep(300 * time.Millisecond)
			r.cmd.Process.Signal(tc.sig)
			if code := r.wait(t, 10*time.Second); code != tc.code {
				t.Errorf("exit status %d, want %d; output:\n%s", code, tc.code, r.out)
			}
			time.Sleep(200 * time.Millisecond)
			if tr.has("edge.started") {
				t.Errorf("started the edge after %s; output:\n%s", tc.sig, r.out)
			}
			if strings.Contains(r.out.String(), "Invoicewire is running") {
				t.Errorf("claims to be running; output:\n%s", r.out)
			}
			tr.noneLeft(t)
		})
	}
}

// TestRedisLoading: a Redis answering LOADING is waited for as long as it
// makes progress, beyond the stall limit; the service then starts, and a
// process that dies afterwards stops the others and fails the run.
func TestRedisLoading(t *testing.T) {
	tr := newTree(t)
	// Five seconds of LOADING, progress on every ping, a two-second limit.
	tr.set(t, fmt.Sprintf("redis-%d.loading", tr.ports["IW_REDIS_URL"]), "5")
	r := tr.start(t, "RUN_REDIS_STALL_SECONDS=2")
	until(t, r, "Invoicewire is running", func() bool { return strings.Contains(r.out.String(), "Invoicewire is running") })
	b, _ := os.ReadFile(filepath.Join(tr.state, "worker.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("no worker pid")
	}
	// It exits by itself (the stand-in's SIGTERM handler exits 0).
	syscall.Kill(pid, syscall.SIGTERM)
	if code := r.wait(t, 10*time.Second); code != 1 {
		t.Errorf("exit status %d after the worker died, want 1; output:\n%s", code, r.out)
	}
	if !strings.Contains(r.out.String(), "run: worker exited") {
		t.Errorf("does not name the worker; output:\n%s", r.out)
	}
	tr.noneLeft(t)
}

// TestRedisStalled: a Redis whose loading makes no progress is given up
// after the stall limit, not after minutes.
func TestRedisStalled(t *testing.T) {
	tr := newTree(t)
	port := tr.ports["IW_REDIS_URL"]
	tr.set(t, fmt.Sprintf("redis-%d.loading", port), "100000")
	tr.set(t, fmt.Sprintf("redis-%d.stuck", port), "")
	r := tr.start(t, "RUN_REDIS_STALL_SECONDS=2")
	if code := r.wait(t, 15*time.Second); code != 1 {
		t.Errorf("exit status %d, want 1; output:\n%s", code, r.out)
	}
	if !strings.Contains(r.out.String(), "has loaded no more of its data for 2 s") {
		t.Errorf("does not say why; output:\n%s", r.out)
	}
	tr.noneLeft(t)
}

// pidOf reads the pid a stand-in recorded in dir.
func pidOf(t *testing.T, dir, name string) int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, name+".pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatalf("no %s pid", name)
	}
	return pid
}

// TestDiesAfterStartUp: a process killed once the service runs stops the
// others and fails the run, which names it, says how it ended and shows
// the end of its log, as during start-up.
func TestDiesAfterStartUp(t *testing.T) {
	tr := newTree(t)
	r := tr.start(t)
	until(t, r, "Invoicewire is running", func() bool { return strings.Contains(r.out.String(), "Invoicewire is running") })
	// SIGKILL, as the kernel's OOM killer would; the stand-in's own
	// child (its sleep) goes too, or it would keep the output open.
	pid := pidOf(t, tr.state, "worker")
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	syscall.Kill(pid, syscall.SIGKILL)
	for _, c := range strings.Fields(string(children)) {
		if n, _ := strconv.Atoi(c); n > 0 {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
	if code := r.wait(t, 10*time.Second); code != 1 {
		t.Errorf("exit status %d after the worker was killed, want 1; output:\n%s", code, r.out)
	}
	out := r.out.String()
	_, after, _ := strings.Cut(out, "run: worker exited after start-up (status 137)")
	if after == "" {
		t.Fatalf("does not name the worker and its status; output:\n%s", out)
	}
	if want := fmt.Sprintf("  worker: starting (edge port %d)", tr.ports["IW_EDGE_PORT"]); !strings.Contains(after, want) {
		t.Errorf("does not show the end of the worker's log (want %q after the message); output:\n%s", want, out)
	}
	tr.noneLeft(t)
}

// TestSecondRunBeside: a second run in the same checkout, on other ports,
// keeps its own state: each Redis its own data directory, each run its own
// logs, none truncated by the other; and it stops without touching the
// first.
func TestSecondRunBeside(t *testing.T) {
	tr := newTree(t)
	a := tr.start(t)
	until(t, a, "the first run", func() bool { return strings.Contains(a.out.String(), "Invoicewire is running") })

	other := map[string]int{}
	for _, v := range vars {
		other[v] = freePort(t)
	}
	stateB := filepath.Join(tr.dir, "state-b")
	if err := os.MkdirAll(stateB, 0o755); err != nil {
		t.Fatal(err)
	}
	b := tr.start(t, append([]string{"STUB_STATE=" + stateB}, portEnv(other)...)...)
	until(t, b, "the second run", func() bool { return strings.Contains(b.out.String(), "Invoicewire is running") })

	// What each Redis was told: its data directory and its log file.
	flags := func(state string, port int) (dir, logfile string) {
		raw, err := os.ReadFile(filepath.Join(state, fmt.Sprintf("redis-%d.args", port)))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(raw))
		for i := 0; i+1 < len(f); i++ {
			switch f[i] {
			case "--dir":
				dir = f[i+1]
			case "--logfile":
				logfile = f[i+1]
			}
		}
		return dir, logfile
	}
	seen := map[string]string{}
	for _, r := range []struct {
		desc  string
		state string
		port  int
	}{
		{"the first run's Redis", tr.state, tr.ports["IW_REDIS_URL"]},
		{"the first run's counters Redis", tr.state, tr.ports["IW_RATELIMIT_REDIS_URL"]},
		{"the second run's Redis", stateB, other["IW_REDIS_URL"]},
		{"the second run's counters Redis", stateB, other["IW_RATELIMIT_REDIS_URL"]},
	} {
		dir, logfile := flags(r.state, r.port)
		for _, f := range []string{logfile} {
			if prev, ok := seen[f]; ok {
				t.Errorf("%s and %s both write %s", prev, r.desc, f)
			}
			seen[f] = r.desc
		}
		if strings.Contains(r.desc, "counters") {
			continue
		}
		if prev, ok := seen[dir]; ok {
			t.Errorf("%s and %s both keep their data in %s", prev, r.desc, dir)
		}
		seen[dir] = r.desc
	}

	// Each run's logs hold its own lines, the first one's still whole.
	for _, run := range []struct {
		desc      string
		redisPort int
		edgePort  int
	}{
		{"first", tr.ports["IW_REDIS_URL"], tr.ports["IW_EDGE_PORT"]},
		{"second", other["IW_REDIS_URL"], other["IW_EDGE_PORT"]},
	} {
		for _, name := range []string{"origin", "worker", "edge"} {
			file := filepath.Join(tr.dir, ".run", strconv.Itoa(run.redisPort), name+".log")
			log, err := os.ReadFile(file)
			want := fmt.Sprintf("%s: starting (edge port %d)\n", name, run.edgePort)
			if err != nil || !strings.HasPrefix(string(log), want) {
				t.Errorf("the %s run's %s log %s: %q (%v), want it to start with %q", run.desc, name, file, log, err, want)
			}
		}
	}

	b.cmd.Process.Signal(syscall.SIGTERM)
	if code := b.wait(t, 10*time.Second); code != 143 {
		t.Errorf("second run: exit status %d after SIGTERM, want 143; output:\n%s", code, b.out)
	}
	if strings.Contains(a.out.String(), "run: stopping") || !tr.has("worker.pid") {
		t.Errorf("stopping the second run stopped the first; output:\n%s", a.out)
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(t, 10*time.Second); code != 143 {
		t.Errorf("first run: exit status %d after SIGTERM, want 143; output:\n%s", code, a.out)
	}
	tr.noneLeft(t)
}

// syncBuffer is a bytes.Buffer safe for the writer goroutines of exec and
// the test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestEarlierDataMoved: a checkout whose earlier runs kept their data in
// .run/redis (before each run had a directory of its own) keeps it: the
// first run moves it to its own directory and its Redis is started there.
func TestEarlierDataMoved(t *testing.T) {
	tr := newTree(t)
	old := filepath.Join(tr.dir, ".run", "redis", "appendonlydir")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "appendonly.aof.1.base.rdb"), []byte("published"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := tr.start(t)
	until(t, r, "Invoicewire is running", func() bool { return strings.Contains(r.out.String(), "Invoicewire is running") })
	port := tr.ports["IW_REDIS_URL"]
	want := filepath.Join(tr.dir, ".run", strconv.Itoa(port), "redis")
	args, err := os.ReadFile(filepath.Join(tr.state, fmt.Sprintf("redis-%d.args", port)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(args), "--dir "+want+" ") {
		t.Errorf("Redis started with %q; want --dir %s", args, want)
	}
	if b, err := os.ReadFile(filepath.Join(want, "appendonlydir", "appendonly.aof.1.base.rdb")); err != nil || string(b) != "published" {
		t.Errorf("the earlier data is not in %s: %q, %v", want, b, err)
	}
	if _, err := os.Stat(filepath.Join(tr.dir, ".run", "redis")); !os.IsNotExist(err) {
		t.Errorf(".run/redis is still there (%v)", err)
	}
	pid := pidOf(t, tr.state, "worker")
	syscall.Kill(pid, syscall.SIGTERM)
	r.wait(t, 10*time.Second)
	tr.noneLeft(t)
}
