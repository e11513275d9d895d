package openapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/invoicewire/invoicewire/origin/origintest"
)

// clientDir is the npm project that holds the linter, the generator and the
// tiny TypeScript client (origin/openapi/clientcheck).
const clientDir = "clientcheck"

// npmRun runs npm in clientDir and fails t with its output on error.
func npmRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = clientDir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// needNpm fails, naming the install command, when npm itself is absent:
// make test installs Node.js and npm (and runs npm ci here), so a machine
// without them is not set up, and skipping would hide the lint and the
// generated client. When the packages are missing (a fresh clone without
// make), they are installed from the committed package-lock.json.
func needNpm(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is not installed; make test installs it (deploy/local/deps.sh test, or apt-get install nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules", ".bin", "redocly")); err != nil {
		npmRun(t, nil, "ci", "--no-audit", "--no-fund")
	}
}

var (
	buildOnce sync.Once
	buildOut  string
	buildErr  error
)

// generateAndCompile runs openapi-typescript on openapi.json and compiles the
// client with tsc, once per test binary.
func generateAndCompile(t *testing.T) {
	t.Helper()
	needNpm(t)
	buildOnce.Do(func() {
		for _, script := range []string{"generate", "build"} {
			cmd := exec.Command("npm", "run", "--silent", script)
			cmd.Dir = clientDir
			out, err := cmd.CombinedOutput()
			buildOut += string(out)
			if err != nil {
				buildErr = err
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("generating and compiling the client: %v\n%s", buildErr, buildOut)
	}
}

// TestRedoclyLint lints the document with Redocly CLI (rules in
// redocly.yaml, reasoned exceptions in .redocly.lint-ignore.yaml): zero
// errors and zero warnings.
func TestRedoclyLint(t *testing.T) {
	needNpm(t)
	// JSON output on stdout; Redocly's banners go to stderr.
	cmd := exec.Command("npx", "--no-install", "redocly", "lint", "--config", "../redocly.yaml", "--format=json", "../openapi.json")
	cmd.Dir = clientDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var report struct {
		Totals   struct{ Errors, Warnings, Ignored int } `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("redocly lint: %v; output is not its JSON report (%v):\n%s\n%s", err, jerr, out, stderr.String())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors+report.Totals.Warnings > 0 || err != nil {
		t.Fatalf("redocly lint: %d errors, %d warnings (%v)", report.Totals.Errors, report.Totals.Warnings, err)
	}
}

// TestGeneratedClientCompiles generates TypeScript types from the document
// with openapi-typescript and compiles the client that uses them with tsc.
// The generated types and the client are checked in strict mode; the
// declaration files of the libraries (node's, the DOM's) are not
// (skipLibCheck), which took two thirds of tsc's time and checks nothing of
// ours.
func TestGeneratedClientCompiles(t *testing.T) {
	generateAndCompile(t)
	if _, err := os.Stat(filepath.Join(clientDir, "dist", "main.js")); err != nil {
		t.Fatalf("tsc produced no dist/main.js: %v", err)
	}
}

// TestGeneratedClientAgainstOrigin runs the compiled client against a real
// origin (real Redis, the synthetic corpus): GET /, GET /articles?limit=2,
// GET /countries/de (and its 404 twin), POST /ask at {site_root} and POST
// /webhooks without a token (401), each checked by the client. The POSTs send
// the smallest bodies the contract allows, so a request schema whose
// generated type asks for more fails TestGeneratedClientCompiles.
func TestGeneratedClientAgainstOrigin(t *testing.T) {
	generateAndCompile(t)
	inst := origintest.Start(t)
	cmd := exec.Command("node", "dist/main.js")
	cmd.Dir = clientDir
	cmd.Env = append(os.Environ(), "IW_BASE_URL="+inst.BaseURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the generated client failed against %s: %v\n%s", inst.BaseURL, err, out)
	}
	t.Logf("%s", out)
}

// goCheckDir is the module that pins oapi-codegen and the runtime its code
// imports (origin/openapi/gocheck), apart from the main module's go.mod.
const goCheckDir = "gocheck"

// goRun runs the go command in dir, outside any workspace, and fails t with
// its output on error.
func goRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// TestGoClientGenerates generates a Go client from the document with the
// pinned oapi-codegen and a plain configuration (models and client, no
// renames or collision resolution, nothing filtered out) and vets it: the
// document is for client generators (docs/architecture.md), and the common
// Go one must take it as it is, webhooks section included. The client is
// written to a copy of gocheck's go.mod and go.sum, so that it builds
// against the pinned runtime and nothing is left in the tree.
func TestGoClientGenerates(t *testing.T) {
	mod := t.TempDir()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(goCheckDir, name))
		if err != nil {
			t.Fatalf("reading the generator's module: %v", err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), b, 0o644); err != nil {
			t.Fatalf("copying the generator's module: %v", err)
		}
	}
	doc, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(mod, "client", "client.gen.go")
	goRun(t, goCheckDir, "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, doc)
	goRun(t, mod, "vet", "./client")
}
