//go:build !linux

package redistest

import "syscall"

// procAttr is nil where the kernel has no parent-death signal: a test binary
// that dies without its cleanups leaves its servers running there.
func procAttr() *syscall.SysProcAttr { return nil }
