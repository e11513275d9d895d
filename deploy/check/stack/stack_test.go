package stack

import (
	"os"
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
