// Package docs checks the configuration tables of README.md and
// docs/edge-gateway.md against the code: every IW_* variable the
// repository reads is in README's table, and each default these tables give
// for an edge variable is the one `make run`'s Caddyfile (caddyfile/Caddyfile)
// falls back to; and the citations of the decisions record against its
// entries (citations_test.go).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// section returns the text under the heading (up to the next heading of
// the same level) of a repository file.
func section(t *testing.T, root, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	level := heading[:strings.Index(heading, " ")+1]
	_, sec, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	sec, _, _ = strings.Cut(sec, "\n"+level)
	return sec
}

// TestREADMENamesEveryVariable: README's Configuration section names every
// IW_* variable a Go file or a Caddyfile of the repository reads.
func TestREADMENamesEveryVariable(t *testing.T) {
	root := repo.Root(t)
	sec := section(t, root, "README.md", "## Configuration")
	for _, v := range repo.Sorted(repo.KnownVars(t, root)) {
		if strings.HasPrefix(v, "IW_REDISTEST_") { // the test suite's own (internal/redistest)
			continue
		}
		if !strings.Contains(sec, "`"+v+"`") {
			t.Errorf("README.md's Configuration section does not name %s", v)
		}
	}
}

var (
	row         = regexp.MustCompile("(?m)^\\| `(IW_[A-Z0-9_]+)` \\| ([^|]*) \\|")
	placeholder = regexp.MustCompile(`\{\$(IW_[A-Z0-9_]+):([^}]*)\}`)
)

// TestEdgeDefaults: where README's or docs/edge-gateway.md's table gives a
// default for a variable caddyfile/Caddyfile reads with a fallback, the
// default cell starts with that fallback (in backquotes), or says
// "empty"/"unset" when the fallback is empty.
func TestEdgeDefaults(t *testing.T) {
	root := repo.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "caddyfile", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	fallback := map[string]string{}
	for _, m := range placeholder.FindAllStringSubmatch(string(b), -1) {
		fallback[m[1]] = m[2]
	}
	for _, doc := range []struct{ file, heading string }{
		{"README.md", "## Configuration"},
		{"docs/edge-gateway.md", "## Configuration"},
	} {
		for _, m := range row.FindAllStringSubmatch(section(t, root, doc.file, doc.heading), -1) {
			name, cell := m[1], strings.TrimSpace(m[2])
			want, ok := fallback[name]
			if !ok {
				continue
			}
			if want == "" {
				if !strings.HasPrefix(cell, "empty") && !strings.HasPrefix(cell, "unset") {
					t.Errorf("%s: %s defaults to %q, but caddyfile/Caddyfile's fallback is empty", doc.file, name, cell)
				}
				continue
			}
			if !strings.HasPrefix(cell, "`"+want+"`") {
				t.Errorf("%s: %s defaults to %q, but caddyfile/Caddyfile falls back to %q", doc.file, name, cell, want)
			}
		}
	}
}

// TestFixedAddressesClaims: where README's or docs/edge-gateway.md's table
// says a shipped Caddyfile fixes a value and ignores its variable, that
// Caddyfile must not read the variable; and the admin API's row says it is
// never public, since whoever reaches it can replace the edge's
// configuration.
func TestFixedAddressesClaims(t *testing.T) {
	root := repo.Root(t)
	caddyfiles := []struct{ name, path string }{
		{"`Caddyfile.production`", "caddyfile/Caddyfile.production"},
		{"Kubernetes Caddyfile", "deploy/k8s/base/Caddyfile"},
	}
	for _, doc := range []struct{ file, heading string }{
		{"README.md", "## Configuration"},
		{"docs/edge-gateway.md", "## Configuration"},
	} {
		sec := section(t, root, doc.file, doc.heading)
		lines := regexp.MustCompile("(?m)^\\| `(IW_[A-Z0-9_]+)` \\|.*$").FindAllStringSubmatch(sec, -1)
		for _, m := range lines {
			name, line := m[1], m[0]
			if name == "IW_EDGE_ADMIN_ADDR" && !strings.Contains(line, "never public") && !strings.Contains(line, "Never public") {
				t.Errorf("%s: the row of %s does not say the admin API is never public", doc.file, name)
			}
			for _, claim := range regexp.MustCompile(`[.;] `).Split(line, -1) {
				if !strings.Contains(claim, "ignore") && !strings.Contains(claim, "fix") {
					continue
				}
				for _, cf := range caddyfiles {
					b, err := os.ReadFile(filepath.Join(root, cf.path))
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(claim, cf.name) && strings.Contains(string(b), "{$"+name) {
						t.Errorf("%s: the row of %s says %q, but %s reads {$%s}", doc.file, name, claim, cf.path, name)
					}
				}
			}
		}
	}
}

// keyExample is an Idempotency-Key header set in an example: a curl -H
// argument or an HTTP message line, with the value that follows.
var keyExample = regexp.MustCompile(`(?i)Idempotency-Key:[ \t]*["']?([^\s'"\\]*)`)

// TestIdempotencyKeysAreFresh: no shipped example sets a fixed
// Idempotency-Key. Keys of anonymous requests are scoped by address, so two
// people behind one NAT who copy a fixed key (and the body beside it) get
// each other's stored answer, registration credentials included, for as
// long as it is kept; an example generates a fresh UUID instead
// (docs/decisions.md, "Idempotency records hold no secret in the clear").
// A value is fresh when it is a shell expansion ($key, $(uuidgen)) or a
// <placeholder>.
func TestIdempotencyKeysAreFresh(t *testing.T) {
	root := repo.Root(t)
	var files []string
	for _, pattern := range []string{"README.md", "docs/*.md", "origin/discovery/docs/*", "origin/portal/*.html", "origin/portal/samples/*.yaml", "origin/portal/samples/webhook/*"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d documents: %v", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range keyExample.FindAllStringSubmatch(line, -1) {
				if v := m[1]; v == "" || !strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "<") {
					t.Errorf("%s:%d: the example sets the fixed Idempotency-Key %q; generate one, as \"$(uuidgen)\"", rel, i+1, v)
				}
			}
		}
	}
}
