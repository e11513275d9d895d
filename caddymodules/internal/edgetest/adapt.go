package edgetest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// separator splits a .caddyfiletest file into the Caddyfile and the JSON it
// adapts to, as in Caddy's own caddytest/integration/caddyfile_adapt.
const separator = "\n----------\n"

// AssertAdaptFiles checks every testdata/*.caddyfiletest of the calling
// package: each Caddyfile must adapt to exactly the JSON after the
// separator. With UPDATE_GOLDEN=1 in the environment it rewrites the JSON
// instead (review the diff before committing).
func AssertAdaptFiles(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.caddyfiletest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.caddyfiletest files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, want, ok := strings.Cut(string(raw), separator)
			if !ok {
				t.Fatalf("%s: no %q separator", f, strings.TrimSpace(separator))
			}
			if os.Getenv("UPDATE_GOLDEN") == "1" {
				out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
				if err != nil {
					t.Fatalf("adapting %s: %v", f, err)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, out, "", "\t"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(cfg+separator+pretty.String()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !caddytest.CompareAdapt(t, f, cfg, "caddyfile", strings.TrimRight(want, "\n")) {
				t.Errorf("%s: adapted JSON differs (diff above; UPDATE_GOLDEN=1 rewrites it)", f)
			}
		})
	}
}
