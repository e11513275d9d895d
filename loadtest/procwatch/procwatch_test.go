package procwatch

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestThreadTimesSeeTheBusiestThread(t *testing.T) {
	before := ThreadTimes(os.Getpid())
	if len(before) == 0 {
		t.Fatal("no thread of this process read from /proc")
	}
	// Spin on one locked thread for 200 ms: it must come out as the
	// busiest, with run time of it (a tenth at least, on a machine busy
	// with other tests) and no more than the wall time.
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		}
		close(done)
	}()
	<-done
	busiest := BusiestThread(before, ThreadTimes(os.Getpid()))
	if busiest.Run < 20*time.Millisecond || busiest.Run > 5*time.Second {
		t.Errorf("busiest thread ran %s over a 200 ms spin", busiest.Run)
	}
	if busiest.Wait < 0 {
		t.Errorf("negative wait %s", busiest.Wait)
	}
}

func TestBusiestThread(t *testing.T) {
	before := map[int]SchedTimes{1: {Run: 10, Wait: 5}, 2: {Run: 100, Wait: 0}}
	after := map[int]SchedTimes{
		1: {Run: 60, Wait: 25},  // ran 50, waited 20
		2: {Run: 130, Wait: 1},  // ran 30
		3: {Run: 40, Wait: 400}, // new since before: ran 40
	}
	if got, want := BusiestThread(before, after), (SchedTimes{Run: 50, Wait: 20}); got != want {
		t.Errorf("BusiestThread = %+v, want %+v", got, want)
	}
}

func TestCoreTakenAway(t *testing.T) {
	a := CoreTakenAway(0)
	time.Sleep(30 * time.Millisecond)
	if b := CoreTakenAway(0); b < a {
		t.Errorf("core 0's interrupt and steal time went back from %s to %s", a, b)
	}
	if got := CoreTakenAway(1 << 20); got != 0 {
		t.Errorf("a core that does not exist: %s, want 0", got)
	}
}
