package redistest

import "syscall"

// procAttr makes the kernel kill a redis-server when the test process that
// started it dies without running its cleanups (a -timeout panic, SIGKILL,
// a closed output pipe), so no server outlives its test binary. The signal
// is tied to the starting OS thread, which the Go runtime keeps alive unless
// a goroutine locked to it exits; tests here lock none.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
