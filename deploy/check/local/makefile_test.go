package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// makeDryRun is what make -n prints for target, with vars set on the
// command line.
func makeDryRun(t *testing.T, root, target string, vars ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory", target}, vars...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return string(out)
}

// TestPhonyTargetsHaveRules: every target the Makefile declares phony has
// a rule. A phony name without one does nothing and exits 0 ("make vet"
// did), so whoever runs it believes it passed.
func TestPhonyTargetsHaveRules(t *testing.T) {
	root := repo.Root(t)
	var text string
	for _, f := range []string{"Makefile", "loadtest/edge.mk"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text += string(b) + "\n"
	}
	phony := regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindAllStringSubmatch(text, -1)
	if len(phony) == 0 {
		t.Fatal("the Makefile declares no phony target")
	}
	for _, m := range phony {
		for _, name := range strings.Fields(m[1]) {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:`).MatchString(text) {
				t.Errorf(".PHONY names %s, but no rule makes it", name)
			}
		}
	}
}

// clusterPass is the command line of the Redis Cluster pass in make -n's
// output: from GO= to the end of the cluster-pass.sh command.
var clusterPass = regexp.MustCompile(`GO=\S+ deploy/local/cluster-pass\.sh[^;\n]*`)

// TestClusterPassAsMakeTest: make test-cluster runs the Redis Cluster pass
// exactly as make test does (README, "Tests and measurements": "runs only
// this pass"): the same script, record, race flag and timeout; with no
// record yet it names every package that starts Redis for the script to
// run whole.
func TestClusterPassAsMakeTest(t *testing.T) {
	root := repo.Root(t)
	record := filepath.Join(t.TempDir(), "redis-tests")
	if err := os.WriteFile(record, []byte("example.com/p TestA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := clusterPass.FindString(makeDryRun(t, root, "test", "REDIS_TESTS="+record))
	if want == "" || !strings.Contains(want, " -race ") || !strings.Contains(want, " -timeout ") {
		t.Fatalf("make -n test: no cluster pass with -race and -timeout in %q", want)
	}
	testCases := []struct {
		desc, record, pkgs string
	}{
		{desc: "after make test: the recorded tests", record: record, pkgs: ""},
		{desc: "no record yet: every package that starts Redis", record: filepath.Join(t.TempDir(), "none"), pkgs: "example.com/p example.com/q"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			out := makeDryRun(t, root, "test-cluster", "REDIS_TESTS="+tc.record, "REDIS_PKGS="+tc.pkgs)
			got := clusterPass.FindString(out)
			if w := strings.Replace(want, record, tc.record, 1); got != w {
				t.Errorf("make -n test-cluster runs\n\t%q\nwant make test's\n\t%q", got, w)
			}
			if !strings.Contains(out, `CLUSTER_PASS_PKGS="`+tc.pkgs+`" `) {
				t.Errorf("make -n test-cluster: CLUSTER_PASS_PKGS is not %q in\n%s", tc.pkgs, out)
			}
		})
	}
}

// goStandIn stands in for go in deploy/local/cluster-pass.sh: it prints
// the Redis URL it was given and its arguments, one a line.
const goStandIn = `#!/usr/bin/env bash
echo "IW_REDIS_URL=$IW_REDIS_URL"
printf '%s\n' "$@"
`

// TestClusterPassScript: deploy/local/cluster-pass.sh runs the recorded
// tests of the recorded packages on Redis Cluster with the flags it is
// given; without a record, the packages of CLUSTER_PASS_PKGS whole; with
// neither, it fails rather than pass having run nothing.
func TestClusterPassScript(t *testing.T) {
	root := repo.Root(t)
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	if err := os.WriteFile(goBin, []byte(goStandIn), 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "redis-tests")
	if err := os.WriteFile(record, []byte("example.com/p TestB\nexample.com/p TestA\nexample.com/q TestA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testCases := []struct {
		desc, record, pkgs string
		wantErr            bool
		want               []string
	}{
		{desc: "recorded tests", record: record, want: []string{"IW_REDIS_URL=redis+cluster://", "test", "-race", "-count=1", "-timeout", "20m", "-run", "^(TestA|TestB)$", "example.com/p", "example.com/q"}},
		{desc: "recorded tests win over packages", record: record, pkgs: "example.com/r", want: []string{"IW_REDIS_URL=redis+cluster://", "test", "-race", "-count=1", "-timeout", "20m", "-run", "^(TestA|TestB)$", "example.com/p", "example.com/q"}},
		{desc: "no record: the packages whole", record: filepath.Join(dir, "none"), pkgs: "example.com/p example.com/q", want: []string{"IW_REDIS_URL=redis+cluster://", "test", "-race", "-count=1", "-timeout", "20m", "example.com/p", "example.com/q"}},
		{desc: "neither", record: filepath.Join(dir, "none"), wantErr: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(root, "deploy", "local", "cluster-pass.sh"), tc.record, "-race", "-count=1", "-timeout", "20m")
			cmd.Env = append(os.Environ(), "GO="+goBin, "CLUSTER_PASS_PKGS="+tc.pkgs)
			out, err := cmd.Output()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("cluster-pass.sh succeeded with no record and no packages:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("cluster-pass.sh: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) == 0 || !strings.HasPrefix(lines[0], "cluster-pass: ") {
				t.Fatalf("cluster-pass.sh printed %q, want its summary line first", out)
			}
			if got := strings.Join(lines[1:], " "); got != strings.Join(tc.want, " ") {
				t.Errorf("go was run as\n\t%s\nwant\n\t%s", got, strings.Join(tc.want, " "))
			}
		})
	}
}
