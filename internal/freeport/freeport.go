// Package freeport finds TCP ports for the servers tests start (redis-server,
// Caddy, the binaries), outside the range the kernel hands out to outgoing
// connections.
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
	"strconv"
	"strings"
	"testing"
)

// lowest is the first port considered: above the well-known and the
// commonly configured server ports.
const lowest = 20000

// Ports returns n distinct ports that nothing listens on now, on any
// address, below the kernel's ephemeral range. Each is held until all are
// found, so none is returned twice.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	top := ephemeralStart()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			t.Fatalf("freeport: no free port between %d and %d after 1000 tries", lowest, top)
		}
		p := lowest + rand.IntN(top-lowest)
		// All interfaces: Caddy binds ":port", redis-server the loopback.
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, p)
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
