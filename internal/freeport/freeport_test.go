package freeport

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	// At random among the ~12,000 ports below the range, 500 picks
	// would repeat about 10 times.
	for range 500 {
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

// A port one process was given is never given to another while the first
// runs: the test packages run in parallel processes.
func TestAnotherProcessNeverGetsAClaimedPort(t *testing.T) {
	if os.Getenv("FREEPORT_CHILD") != "" {
		// The child: try to claim the ports the parent holds.
		for _, s := range strings.Fields(os.Getenv("FREEPORT_CHILD")) {
			p, _ := strconv.Atoi(s)
			if claim(p) {
				fmt.Println("claimed", p)
			}
		}
		return
	}
	ports := Ports(t, 20)
	var list []string
	for _, p := range ports {
		list = append(list, strconv.Itoa(p))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAnotherProcessNeverGetsAClaimedPort$")
	cmd.Env = append(os.Environ(), "FREEPORT_CHILD="+strings.Join(list, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "claimed") {
		t.Errorf("another process claimed ports this one holds:\n%s", out)
	}
}
