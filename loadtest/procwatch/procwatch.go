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
