//go:build unix

package redistest

import "syscall"

// Freeze stops the server with SIGSTOP: it keeps its listening socket, so
// clients connect and send, but nothing is answered, as with a hung Redis.
// The server continues (SIGCONT) when the test ends, before its own
// shutdown, which needs it running to handle the interrupt.
func (s *Server) Freeze() {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatal("redistest: Freeze on a server that is not running")
	}
	p := s.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("redistest: stopping redis-server: %v", err)
	}
	s.t.Cleanup(func() { p.Signal(syscall.SIGCONT) })
}
