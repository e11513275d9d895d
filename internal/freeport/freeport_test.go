package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPortsAreFreeDistinctAndBelowTheEphemeralRange(t *testing.T) {
	top := ephemeralStart()
	ports := Ports(t, 50)
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lowest || p >= top {
			t.Errorf("port %d outside [%d, %d)", p, lowest, top)
		}
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d cannot be bound after Ports returned it: %v", p, err)
			continue
		}
		l.Close()
	}
}

// Ports picked one call at a time, as a harness picks an address per
// server, are never picked twice: the servers have not bound them yet.
func TestSeparateCallsNeverRepeatAPort(t *testing.T) {
	seen := map[int]bool{}
	// At random among the ~12,000 ports below the range, 2,000 picks
	// would repeat about 150 times.
	for range 2000 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		_, ps, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(ps)
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}
