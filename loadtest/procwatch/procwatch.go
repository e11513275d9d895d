// Package procwatch holds what the load-test harnesses (loadtest/scale,
// loadtest/traffic, loadtest/cluster) ask of the processes they start:
// whether a process answers yet, how much memory it holds, and stopping it.
package procwatch

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WaitFor polls ok every 50 ms until it holds, or fails once timeout has
// passed.
func WaitFor(timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// Answers reports whether GET url answers 200.
func Answers(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// RSS is the resident set size in bytes of process pid, from
// /proc/<pid>/status; 0 when it cannot be read.
func RSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// ThreadTimes are, per thread id of process pid, how long the thread has
// run and how long it has waited, runnable, for a CPU since it started
// (/proc/<pid>/task/*/schedstat, the kernel's schedstats); nil when they
// cannot be read. A harness reads them before and after a phase to tell
// the latency its clients saw from the process's own work apart from the
// time its busiest thread waited for its core.
func ThreadTimes(pid int) map[int]SchedTimes {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	times := make(map[int]SchedTimes, len(tasks))
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread has exited
		}
		// Time on the CPU, time waiting on a run queue, and timeslices, in ns.
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		times[tid] = SchedTimes{Run: time.Duration(run), Wait: time.Duration(wait)}
	}
	return times
}

// SchedTimes are one thread's time on a CPU and time waiting for one.
type SchedTimes struct{ Run, Wait time.Duration }

// BusiestThread is, of the threads in after, the one that ran longest since
// before: its run and wait times over that span.
func BusiestThread(before, after map[int]SchedTimes) SchedTimes {
	var busiest SchedTimes
	for tid, a := range after {
		d := SchedTimes{Run: a.Run - before[tid].Run, Wait: a.Wait - before[tid].Wait}
		if d.Run > busiest.Run {
			busiest = d
		}
	}
	return busiest
}

// CoreTakenAway is the time CPU cpu has spent since boot in hard and soft
// interrupts and stolen by the hypervisor, from /proc/stat: time in which
// no process pinned to that core ran, whatever its own load; 0 when it
// cannot be read.
func CoreTakenAway(cpu int) time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	prefix := "cpu" + strconv.Itoa(cpu) + " "
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		// user nice system idle iowait irq softirq steal …, in clock ticks
		// (100 a second).
		f := strings.Fields(rest)
		if len(f) < 8 {
			return 0
		}
		var ticks int64
		for _, v := range f[5:8] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
		return time.Duration(ticks) * 10 * time.Millisecond
	}
	return 0
}

// Stop ends a started command with SIGTERM and waits for it, sending
// SIGKILL once grace has passed; a command that never started is left alone.
func Stop(cmd *exec.Cmd, grace time.Duration) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		cmd.Process.Kill()
		<-done
	}
}

// LoadAverage is the machine's load average over 1, 5 and 15 minutes, as
// /proc/loadavg gives it, or "?": the wall times a harness reports are read
// beside it.
func LoadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
