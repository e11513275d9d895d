package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/loadtest/procwatch"
)

// proc is a process the run started, pinned to a core.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
}

// start runs bin with args on cpu (taskset), its output in dir/name.log.
// The process dies with the run (parent-death signal).
func start(dir, name, cpu string, env []string, bin string, args ...string) (*proc, error) {
	logf, err := os.Create(dir + "/" + name + ".log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", append([]string{"-c", cpu, bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("traffic: starting %s: %w", name, err)
	}
	return &proc{name: name, cmd: cmd, log: logf}, nil
}

// stop ends the process with SIGTERM, then SIGKILL after ten seconds.
func (p *proc) stop() {
	if p == nil {
		return
	}
	procwatch.Stop(p.cmd, 10*time.Second)
	p.log.Close()
}

// pid is the process's id (taskset execs the binary, so it is the binary's).
func (p *proc) pid() int { return p.cmd.Process.Pid }

// rss is the process's resident set size in bytes.
func (p *proc) rss() int64 { return procwatch.RSS(p.pid()) }

// cpu is the CPU time the process has used (user + system), from /proc.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the whole line, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// startRedis starts a redis-server with no persistence (both roles of this
// run are rebuilt from scratch) and returns its URL.
func startRedis(dir, name, cpu string) (*proc, string, error) {
	addr, err := freeport.Addr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	p, err := start(dir, name, cpu, nil, "redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no")
	if err != nil {
		return nil, "", err
	}
	if err := procwatch.WaitFor(10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("traffic: %s did not start: %w", name, err)
	}
	return p, "redis://" + addr + "/0", nil
}

// redisStats are the counters of INFO stats the report uses.
type redisStats struct{ commands, netIn, netOut int64 }

func readRedisStats(ctx context.Context, rdb *redis.Client) redisStats {
	s, _ := rdb.Info(ctx, "stats").Result()
	field := func(name string) int64 {
		for line := range strings.SplitSeq(s, "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	return redisStats{field("total_commands_processed"), field("total_net_input_bytes"), field("total_net_output_bytes")}
}

// gcStats are the edge's Go GC pause totals from its /metrics.
type gcStats struct {
	pauseSum float64 // seconds
	count    float64
	maxPause float64 // the largest recent pause (quantile 1)
}

func readGC(metricsURL string) gcStats {
	v := readMetrics(metricsURL, "go_gc_duration_seconds_sum", "go_gc_duration_seconds_count", `go_gc_duration_seconds{quantile="1"}`)
	return gcStats{pauseSum: v[0], count: v[1], maxPause: v[2]}
}

// cacheOutcomes are the edge cache's outcomes (caddy_edge_cache_requests_total),
// in the order of their names.
var cacheOutcomes = []string{"hit", "stale", "encoded", "miss", "revalidated", "refresh", "stale_if_error", "collapsed", "bypass"}

// readCacheOutcomes reads the edge cache's count of each of cacheOutcomes.
func readCacheOutcomes(metricsURL string) []float64 {
	names := make([]string, len(cacheOutcomes))
	for i, o := range cacheOutcomes {
		names[i] = `caddy_edge_cache_requests_total{outcome="` + o + `"}`
	}
	return readMetrics(metricsURL, names...)
}

// readMetrics reads the edge's /metrics once and returns the values of
// the series named, in order (a name includes its labels as written
// there); 0 for one that is missing.
func readMetrics(metricsURL string, names ...string) []float64 {
	values := make([]float64, len(names))
	resp, err := http.Get(metricsURL)
	if err != nil {
		return values
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for i, name := range names {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				values[i], _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return values
}

// saveProfile writes what url answers (a pprof profile) to path; a failure
// is reported, not saved as a profile.
func saveProfile(url, path string) {
	if err := fetchProfile(url, path); err != nil {
		fmt.Fprintln(os.Stderr, "traffic: profile:", err)
	}
}

func fetchProfile(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("reading %s: %w", url, err)
	}
	return f.Close()
}
