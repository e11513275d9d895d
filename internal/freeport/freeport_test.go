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
