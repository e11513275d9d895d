package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/invoicewire/invoicewire/caddymodules/edgecache"
	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// TestCaddyfilesAdapt pins what caddyfile/Caddyfile and the production
// example adapt to, directive order included (docs/architecture.md). UPDATE_GOLDEN=1
// rewrites the golden JSON.
func TestCaddyfilesAdapt(t *testing.T) {
	testCases := []struct {
		desc, file, golden string
		env                map[string]string
	}{
		{desc: "make run", file: "../../caddyfile/Caddyfile", golden: "testdata/Caddyfile.json"},
		{desc: "production example", file: "../../caddyfile/Caddyfile.production", golden: "testdata/Caddyfile.production.json", env: map[string]string{
			"IW_REDIS_URL":    "redis://redis.internal:6379/0",
			"IW_PUBLIC_URL":   "https://invoicewire.example",
			"IW_ORIGIN_ADDRS": "10.0.1.1:8081 10.0.1.2:8081",
		}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			// Every IW_ variable unset, so the file's defaults apply.
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "IW_") {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
			}
			for k, v := range test.env {
				t.Setenv(k, v)
			}
			cfg, err := os.ReadFile(test.file)
			if err != nil {
				t.Fatal(err)
			}
			if os.Getenv("UPDATE_GOLDEN") == "1" {
				out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				var pretty bytes.Buffer
				json.Indent(&pretty, out, "", "\t")
				if err := os.WriteFile(test.golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(test.golden)
			if err != nil {
				t.Fatal(err)
			}
			if !caddytest.CompareAdapt(t, test.file, string(cfg), "caddyfile", string(want)) {
				t.Errorf("%s adapts differently from %s (diff above; UPDATE_GOLDEN=1 rewrites it)", test.file, test.golden)
			}
		})
	}
}

// shippedCaddyfiles are the Caddyfiles the repository ships: make run's,
// the production example (systemd) and the Kubernetes one.
var shippedCaddyfiles = []string{"../../caddyfile/Caddyfile", "../../caddyfile/Caddyfile.production", "../../deploy/k8s/base/Caddyfile"}

// TestPreflightListsAreShared: the edge answers every CORS preflight itself,
// so each shipped Caddyfile's @preflight block must allow every request
// header some route reads and expose every header some answer carries: the
// lists of internal/httpheader, which the origin's and json_errors' answers
// use. A shorter list made browsers refuse MCP calls at the preflight.
func TestPreflightListsAreShared(t *testing.T) {
	fields := map[string]string{
		"Access-Control-Allow-Headers":  httpheader.AllowHeaders,
		"Access-Control-Expose-Headers": httpheader.ExposeHeaders,
		"Access-Control-Max-Age":        httpheader.MaxAge,
	}
	for _, file := range shippedCaddyfiles {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, block, ok := strings.Cut(string(b), "@preflight method OPTIONS")
		block, _, _ = strings.Cut(block, "respond 204")
		if !ok {
			t.Fatalf("%s: no @preflight block", file)
		}
		for name, want := range fields {
			m := regexp.MustCompile(regexp.QuoteMeta(name) + ` "?([^"\n]*)"?\n`).FindStringSubmatch(block)
			if m == nil || m[1] != want {
				t.Errorf("%s: preflight %s is %q, want httpheader's %q", file, name, m, want)
			}
		}
	}
}

// TestCompressedTypesShared: what the edge compresses on its way out (the
// encode directive) and what its cache compresses from a stored body
// (edgecache.CompressedTypes) must be the same types, in every shipped
// Caddyfile, or one coding of a URL would be compressed and another not.
func TestCompressedTypesShared(t *testing.T) {
	// The values the production example needs (TestCaddyfilesAdapt).
	t.Setenv("IW_REDIS_URL", "redis://redis.internal:6379/0")
	t.Setenv("IW_PUBLIC_URL", "https://invoicewire.example")
	t.Setenv("IW_ORIGIN_ADDRS", "10.0.1.1:8081 10.0.1.2:8081")
	for _, file := range shippedCaddyfiles {
		out := adaptShipped(t, file)
		var found int
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if v["handler"] == "encode" {
					found++
					var m struct {
						Headers map[string][]string `json:"headers"`
					}
					b, _ := json.Marshal(v["match"])
					json.Unmarshal(b, &m)
					if !slices.Equal(m.Headers["Content-Type"], edgecache.CompressedTypes) {
						t.Errorf("%s: encode matches Content-Type %q, want edgecache.CompressedTypes %q", file, m.Headers["Content-Type"], edgecache.CompressedTypes)
					}
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		var doc any
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		walk(doc)
		if found == 0 {
			t.Errorf("%s: no encode handler", file)
		}
	}
}

// TestCaddyfilesPersistNothing: no shipped Caddyfile lets Caddy write its
// adapted configuration to autosave.json, where the Redis URL and its
// password would sit in a file readable by the edge's user beside the two
// root-only files that are meant to hold them (docs/operations.md).
func TestCaddyfilesPersistNothing(t *testing.T) {
	// The values the production example needs (TestCaddyfilesAdapt).
	t.Setenv("IW_REDIS_URL", "redis://:secret@redis.internal:6379/0")
	t.Setenv("IW_PUBLIC_URL", "https://invoicewire.example")
	t.Setenv("IW_ORIGIN_ADDRS", "10.0.1.1:8081 10.0.1.2:8081")
	for _, file := range shippedCaddyfiles {
		t.Run(strings.TrimPrefix(file, "../../"), func(t *testing.T) {
			var c caddy.Config
			if err := json.Unmarshal(adaptShipped(t, file), &c); err != nil {
				t.Fatal(err)
			}
			if c.Admin == nil || c.Admin.Config == nil || c.Admin.Config.Persist == nil || *c.Admin.Config.Persist {
				t.Errorf("%s does not turn off Caddy's autosave.json (want persist_config off in its global options)", file)
			}
		})
	}
}

// adaptShipped adapts a shipped Caddyfile to its JSON configuration.
func adaptShipped(t *testing.T, file string) []byte {
	t.Helper()
	cfg, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(cfg, nil)
	if err != nil {
		t.Fatalf("adapting %s: %v", file, err)
	}
	return out
}
