package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A process stopped with Stop can be started again under its name at once,
// as the observability checks restart the origin and Redis: Stop returns
// only once the process has been waited for, and start does not read the
// exec.Cmd that the waiting goroutine writes (run with -race).
func TestStopThenStartAgain(t *testing.T) {
	s := newStack(t, t.TempDir())
	s.env = os.Environ()
	for _, crash := range []bool{false, true, false} {
		s.start("sleeper", "sleep", "30")
		s.Stop("sleeper", crash)
	}
	s.start("sleeper", "sleep", "30")
}

// fatalTB is a testing.TB whose Fatal and Fatalf record the message and
// end the goroutine, as testing's do, without failing the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatal(args ...any) { f.msg = fmt.Sprint(args...); runtime.Goexit() }
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn with tb and returns the message it failed with ("" if none).
func fatal(tb *fatalTB, fn func()) string {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	<-done
	return tb.msg
}

// When Redis's data directory cannot be created, StartRedis says so and
// starts no redis-server, rather than one that fails on a --dir that is
// not a directory.
func TestStartRedisDataDirectory(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "redis")
	if err := os.WriteFile(data, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tb := &fatalTB{TB: t}
	s := newStack(tb, dir)
	s.env = os.Environ()
	s.RedisPort = FreePort(t)
	msg := fatal(tb, s.StartRedis)
	if !strings.Contains(msg, "data directory") || !strings.Contains(msg, data) {
		t.Errorf("StartRedis failed with %q; want the data directory %s named", msg, data)
	}
	if s.procs["redis"] != nil {
		t.Error("StartRedis started redis-server without its data directory")
	}
}
