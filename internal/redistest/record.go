package redistest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// make test runs the suite twice: on one server, then on a Redis Cluster.
// Only the tests that start the suite's Redis through New behave
// differently in the second pass; every other test would repeat the same
// work. So the first pass records them: when IW_REDISTEST_RECORD names a
// file, New appends one line per top-level test, "<package directory>
// <test name>", and deploy/local/cluster-pass.sh runs only those in the
// cluster pass.
var (
	recordFile = os.Getenv("IW_REDISTEST_RECORD")
	recorded   sync.Map // top-level test names already written by this process
)

// record notes that t's top-level test started the suite's Redis.
func record(t testing.TB) {
	if recordFile == "" {
		return
	}
	name, _, _ := strings.Cut(t.Name(), "/")
	if _, seen := recorded.LoadOrStore(name, true); seen {
		return
	}
	// go test runs each test binary in its package's directory.
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("redistest: recording %s for the cluster pass: %v", name, err)
	}
	f, err := os.OpenFile(recordFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("redistest: recording %s for the cluster pass: %v", name, err)
	}
	defer f.Close()
	// One short write with O_APPEND: the lines of test binaries running in
	// parallel do not interleave.
	if _, err := fmt.Fprintf(f, "%s %s\n", dir, name); err != nil {
		t.Fatalf("redistest: recording %s for the cluster pass: %v", name, err)
	}
}
