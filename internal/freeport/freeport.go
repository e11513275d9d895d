// Package freeport finds TCP ports for the servers that tests and load test
// harnesses start (redis-server, Caddy, the binaries), outside the range
// the kernel hands out to outgoing connections.
//
// A port the kernel gives a listener on port 0 comes from that ephemeral
// range, and is free again once the listener closes: until the test's
// server binds it, any outgoing connection on the machine may take it as
// its local port, and with the suites running in parallel (hundreds of
// connections to Redis a second) one did, failing a test with "bind:
// address already in use". Ports below the range are never taken that way;
// only another server could, and each pick here is random among thousands.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lowest is the first port considered: above the well-known and the
// commonly configured server ports.
const lowest = 20000

var (
	mu sync.Mutex
	// given holds the ports returned so far in this process: a port picked
	// for a server that has not bound it yet still looks free.
	given = map[int]bool{}
	// claims holds, open for the life of the process, the lock file of
	// each port it was given, so that no other process picks it: the test
	// packages run in parallel processes, and one of them bound a port
	// another had picked and was about to bind ("bind: address already in
	// use" in a fresh-clone make test).
	claims []*os.File
)

// claimDir holds one lock file per port claimed by a running process.
var claimDir = filepath.Join(os.TempDir(), "invoicewire-freeport")

// claim takes port's lock file for this process, or reports that another
// process holds it. The kernel releases the lock when the process exits.
func claim(port int) bool {
	if err := os.MkdirAll(claimDir, 0o777); err != nil {
		return true // no lock files: fall back to the checks above
	}
	f, err := os.OpenFile(filepath.Join(claimDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	claims = append(claims, f)
	return true
}

// Find returns n distinct ports that nothing listens on now, on any
// address, below the kernel's ephemeral range, none of them returned
// before in this process nor claimed by another process now. Each is held
// until all are found.
func Find(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	top := ephemeralStart()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("freeport: no free port between %d and %d after 1000 tries", lowest, top)
		}
		p := lowest + rand.IntN(top-lowest)
		if given[p] || !claim(p) {
			continue
		}
		// All interfaces: Caddy binds ":port", redis-server the loopback.
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, p)
	}
	for _, p := range ports {
		given[p] = true
	}
	return ports, nil
}

// Addr returns a free loopback address ("127.0.0.1:port") as Find does,
// for the load test harnesses, which start their servers outside tests.
func Addr() (string, error) {
	ports, err := Find(1)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// Ports returns n ports as Find does, failing t when none are found.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	ports, err := Find(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// Port returns one port as Ports does.
func Port(t testing.TB) int {
	t.Helper()
	return Ports(t, 1)[0]
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (Linux's default when it cannot be read).
func ephemeralStart() int {
	start := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err == nil && lo > lowest+1000 {
			start = lo
		}
	}
	return start
}
