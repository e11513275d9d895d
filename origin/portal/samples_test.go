package portal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerificationSamplesRun runs the developer portal's webhook
// verification samples — Go, Python and Node — against a signature computed
// here: each must accept it and reject a tampered one. A sample that does
// not work is worse than none.
func TestVerificationSamplesRun(t *testing.T) {
	const secret = "whsec_c2FtcGxlLXNlY3JldC1mb3ItdGVzdHM="
	body := `{"id":"evt_01","type":"article.published","data":{"slug":"x"}}`
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	good := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	bad := "sha256=" + strings.Repeat("0", 64)

	sample := func(lang string) string {
		for _, ex := range verifyExamples {
			if ex.Lang == lang {
				return ex.Code
			}
		}
		t.Fatalf("no %s sample", lang)
		return ""
	}
	need := func(t *testing.T, bin string) string {
		p, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("%s is not installed; make test installs it (deploy/local/deps.sh test)", bin)
		}
		return p
	}
	run := func(t *testing.T, dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("python", func(t *testing.T) {
		py := need(t, "python3")
		dir := t.TempDir()
		prog := sample("python") + "\n\nimport sys\nprint(verify(sys.argv[1].encode(), sys.argv[2], sys.argv[3].encode()))\n"
		os.WriteFile(filepath.Join(dir, "verify.py"), []byte(prog), 0o644)
		if got := run(t, dir, py, "verify.py", body, good, secret); got != "True" {
			t.Errorf("good signature: %s", got)
		}
		if got := run(t, dir, py, "verify.py", body, bad, secret); got != "False" {
			t.Errorf("bad signature: %s", got)
		}
	})
	t.Run("node", func(t *testing.T) {
		node := need(t, "node")
		dir := t.TempDir()
		prog := sample("javascript") + "\n\nconst [body, header, secret] = process.argv.slice(2);\nconsole.log(String(verify(Buffer.from(body), header, secret)));\n"
		os.WriteFile(filepath.Join(dir, "verify.js"), []byte(prog), 0o644)
		if got := run(t, dir, node, "verify.js", body, good, secret); got != "true" {
			t.Errorf("good signature: %s", got)
		}
		if got := run(t, dir, node, "verify.js", body, bad, secret); got != "false" {
			t.Errorf("bad signature: %s", got)
		}
		if got := run(t, dir, node, "verify.js", body, "sha256=zz", secret); got != "false" {
			t.Errorf("malformed signature: %s", got)
		}
	})
	t.Run("go", func(t *testing.T) {
		goBin := need(t, "go")
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/webhook\n\ngo 1.22\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "webhook.go"), []byte(sample("go")), 0o644)
		os.WriteFile(filepath.Join(dir, "webhook_test.go"), []byte(`package webhook

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	for _, tc := range []struct{ header string; want bool }{{os.Getenv("GOOD"), true}, {os.Getenv("BAD"), false}, {"sha256=zz", false}, {"", false}} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(os.Getenv("BODY")))
		r.Header.Set("X-Invoicewire-Signature", tc.header)
		if _, ok := Verify(r, []byte(os.Getenv("SECRET"))); ok != tc.want {
			t.Errorf("%q: %v", tc.header, ok)
		}
	}
}
`), 0o644)
		cmd := exec.Command(goBin, "test", "-count=1", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOOD="+good, "BAD="+bad, "BODY="+body, "SECRET="+secret)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the Go sample: %v\n%s", err, out)
		}
	})
}
