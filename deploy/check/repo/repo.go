// Package repo finds the Invoicewire repository around deploy/check and
// answers what it holds: the binaries it builds, the IW_* variables its code
// reads. The deploy checks compare the manifests against it.
package repo

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
)

// Root is the repository's top directory: the nearest parent of the working
// directory whose go.mod declares the service's module.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("repo: working directory: %v", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/invoicewire/invoicewire\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("repo: no go.mod of github.com/invoicewire/invoicewire above the working directory")
		}
		dir = parent
	}
}

// HasCommand reports whether cmd/<name> exists, i.e. whether the branch that
// brings that binary has been merged.
func HasCommand(root, name string) bool {
	st, err := os.Stat(filepath.Join(root, "cmd", name))
	return err == nil && st.IsDir()
}

var (
	goVar    = regexp.MustCompile(`"(IW_[A-Z0-9_]+)"`)
	caddyVar = regexp.MustCompile(`\{\$(IW_[A-Z0-9_]+)`)
)

// KnownVars are the IW_* variables some code of the repository reads: a
// quoted "IW_..." name in a non-test Go file, or a {$IW_...} placeholder in
// a Caddyfile.
func KnownVars(t testing.TB, root string) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			switch name {
			case ".git", "node_modules", ".run", "bin", "check":
				return filepath.SkipDir
			}
			return nil
		}
		var re *regexp.Regexp
		switch {
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			re = goVar
		case strings.HasPrefix(name, "Caddyfile"):
			re = caddyVar
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			known[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("repo: reading the IW_* variables the code uses: %v", err)
	}
	return known
}

// Sorted returns the keys of m in order, for stable messages.
func Sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Build compiles the named commands of the repository (cmd/<name>) into dir
// with the service's own module and build cache, and returns their paths.
// They are built with -race when the running test binary was (make test):
// the build then reuses the race-compiled packages the service's own test
// pass left in the cache instead of compiling Caddy's tree a second time,
// and the race detector watches the processes too. The service's
// internal/cmdtest does the same; this module cannot import it.
func Build(t testing.TB, root, dir string, names ...string) map[string]string {
	t.Helper()
	args := []string{"build"}
	if raceBuilt() {
		args = append(args, "-race")
	}
	args = append(args, "-o", dir+string(filepath.Separator))
	out := map[string]string{}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
		out[n] = filepath.Join(dir, n)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("repo: go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// raceBuilt reports whether the running binary was built with -race.
func raceBuilt() bool {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}
