// Package cmdtest builds the repository's commands (cmd/<name>) for tests
// that run them as processes.
//
// A command is built the way the running test binary was: with -race when
// make test runs the suite under the race detector. The build then reuses
// the dependencies the test build already compiled, where a plain build
// would compile the whole tree (Caddy's included) a second time, minutes on
// a fresh two-core machine; and the race detector watches the processes too.
package cmdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
)

const module = "github.com/invoicewire/invoicewire"

var (
	mu    sync.Mutex
	built = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Run runs the tests of m, then removes the executables Build made for
// them. A package whose tests call Build runs it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(cmdtest.Run(m)) }
func Run(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	for _, b := range built {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
	return code
}

// Build compiles cmd/name once per test binary and returns the path of the
// executable. It fails the test when the build fails.
func Build(t testing.TB, name string) string {
	t.Helper()
	mu.Lock()
	b, ok := built[name]
	if !ok {
		b = &build{}
		built[name] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = compile(name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func compile(name string) (string, error) {
	// The directory outlives any one test, so that later tests of the same
	// binary reuse the executable; Run removes it.
	dir, err := os.MkdirTemp("", "iw-cmd-"+name)
	if err != nil {
		return "", fmt.Errorf("building cmd/%s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	args := append([]string{"build"}, raceFlags()...)
	args = append(args, "-o", path, module+"/cmd/"+name)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return path, nil
}

// raceFlags returns the build flags of the running binary that a command
// built for it must share: -race when it was built with the race detector.
func raceFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return []string{"-race"}
		}
	}
	return nil
}
