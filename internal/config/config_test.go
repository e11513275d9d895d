package config

import (
	"slices"
	"strings"
	"testing"
)

func TestFromLookup(t *testing.T) {
	cases := []struct {
		desc    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{desc: "defaults", env: nil, check: func(t *testing.T, c Config) {
			if c.PublicURL != Defaults.PublicURL || c.RedisURL != Defaults.RedisURL || c.OriginAddr != Defaults.OriginAddr || c.BaseURL() != "http://localhost:8080/api/v1" {
				t.Fatalf("got %+v", c)
			}
		}},
		{desc: "trailing slash trimmed", env: map[string]string{"IW_PUBLIC_URL": "https://news.example/"}, check: func(t *testing.T, c Config) {
			if c.PublicURL != "https://news.example" {
				t.Fatalf("PublicURL = %q", c.PublicURL)
			}
		}},
		{desc: "blank values keep defaults", env: map[string]string{"IW_REDIS_URL": "  "}, check: func(t *testing.T, c Config) {
			if c.RedisURL != Defaults.RedisURL {
				t.Fatalf("RedisURL = %q", c.RedisURL)
			}
		}},
		{desc: "public URL with a path", env: map[string]string{"IW_PUBLIC_URL": "https://x.example/news"}, wantErr: "IW_PUBLIC_URL"},
		{desc: "public URL without scheme", env: map[string]string{"IW_PUBLIC_URL": "x.example"}, wantErr: "IW_PUBLIC_URL"},
		{desc: "cache too small", env: map[string]string{"IW_ORIGIN_CACHE_BYTES": "10"}, wantErr: "IW_ORIGIN_CACHE_BYTES"},
		{desc: "cache not a number", env: map[string]string{"IW_ORIGIN_CACHE_BYTES": "lots"}, wantErr: "IW_ORIGIN_CACHE_BYTES"},
		{desc: "bad log level", env: map[string]string{"IW_LOG_LEVEL": "loud"}, wantErr: "IW_LOG_LEVEL"},
		{desc: "bad grace", env: map[string]string{"IW_SHUTDOWN_GRACE": "soon"}, wantErr: "IW_SHUTDOWN_GRACE"},
		{desc: "signing key", env: map[string]string{"IW_SIGNING_KEY": "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU"}, check: func(t *testing.T, c Config) {
			if c.SigningKey != "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU" {
				t.Fatalf("SigningKey = %q", c.SigningKey)
			}
		}},
		{desc: "per-receiver bound", env: map[string]string{"IW_WORKER_PER_RECEIVER": "3"}, check: func(t *testing.T, c Config) {
			if c.WorkerPerReceiver != 3 || Defaults.WorkerPerReceiver != 8 {
				t.Fatalf("WorkerPerReceiver = %d (default %d)", c.WorkerPerReceiver, Defaults.WorkerPerReceiver)
			}
		}},
		{desc: "per-receiver bound zero", env: map[string]string{"IW_WORKER_PER_RECEIVER": "0"}, wantErr: "IW_WORKER_PER_RECEIVER"},
		{desc: "edge port not a number", env: map[string]string{"IW_EDGE_PORT": "abc"}, wantErr: `IW_EDGE_PORT must be a port number such as 8080, got "abc"`},
		{desc: "edge port out of range", env: map[string]string{"IW_EDGE_PORT": "70000"}, wantErr: `IW_EDGE_PORT must be a port number such as 8080, got "70000"`},
		{desc: "edge port 0", env: map[string]string{"IW_EDGE_PORT": "0"}, wantErr: `IW_EDGE_PORT must be a port number such as 8080, got "0"`},
		{desc: "edge metrics port not a number", env: map[string]string{"IW_EDGE_METRICS_PORT": "metrics"}, wantErr: `IW_EDGE_METRICS_PORT must be a port number such as 9180, got "metrics"`},
		{desc: "edge admin address without a port", env: map[string]string{"IW_EDGE_ADMIN_ADDR": "nohostport"}, wantErr: `IW_EDGE_ADMIN_ADDR must be host:port such as 127.0.0.1:2019, or a unix socket such as unix//run/invoicewire-edge/admin.sock|0600, got "nohostport"`},
		{desc: "edge admin address with a port name", env: map[string]string{"IW_EDGE_ADMIN_ADDR": "localhost:admin"}, wantErr: `IW_EDGE_ADMIN_ADDR must be host:port`},
		{desc: "edge admin address on a unix socket", env: map[string]string{"IW_EDGE_ADMIN_ADDR": "unix//run/invoicewire-edge/admin.sock|0600"}, check: func(t *testing.T, c Config) {
			if c.EdgeAdminAddr != "unix//run/invoicewire-edge/admin.sock|0600" {
				t.Fatalf("EdgeAdminAddr = %q", c.EdgeAdminAddr)
			}
		}},
		{desc: "origin address without a port", env: map[string]string{"IW_ORIGIN_ADDR": "bad"}, wantErr: `IW_ORIGIN_ADDR must be host:port such as 127.0.0.1:8081, got "bad"`},
		{desc: "origin metrics address without a port", env: map[string]string{"IW_ORIGIN_METRICS_ADDR": "127.0.0.1"}, wantErr: `IW_ORIGIN_METRICS_ADDR must be host:port such as 127.0.0.1:8081, got "127.0.0.1"`},
		{desc: "worker metrics address with a bad port", env: map[string]string{"IW_WORKER_METRICS_ADDR": "127.0.0.1:99999"}, wantErr: `IW_WORKER_METRICS_ADDR must be host:port such as 127.0.0.1:8081, got "127.0.0.1:99999"`},
		{desc: "listeners on any free port and every address", env: map[string]string{"IW_ORIGIN_ADDR": "127.0.0.1:0", "IW_WORKER_METRICS_ADDR": ":9102"}, check: func(t *testing.T, c Config) {
			if c.OriginAddr != "127.0.0.1:0" || c.WorkerMetricsAddr != ":9102" {
				t.Fatalf("OriginAddr = %q, WorkerMetricsAddr = %q", c.OriginAddr, c.WorkerMetricsAddr)
			}
		}},
		{desc: "signing key too short", env: map[string]string{"IW_SIGNING_KEY": "c2hvcnQ"}, wantErr: "IW_SIGNING_KEY"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := FromLookup(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestSigningKeyErrorHidesTheValue: a malformed IW_SIGNING_KEY is still a
// private key, so the error names the variable but never its value.
func TestSigningKeyErrorHidesTheValue(t *testing.T) {
	_, err := FromLookup(func(k string) (string, bool) {
		if k == "IW_SIGNING_KEY" {
			return "secret-value-xyz", true
		}
		return "", false
	})
	if err == nil || strings.Contains(err.Error(), "secret-value-xyz") {
		t.Fatalf("err = %v", err)
	}
}

// TestOwnPorts: the webhook policy refuses every port the configuration
// gives the service's own listeners, Redis's cluster bus included.
func TestOwnPorts(t *testing.T) {
	env := map[string]string{
		"IW_REDIS_URL":           "redis+cluster://127.0.0.1:7001,127.0.0.1:7002",
		"IW_EDGE_ADMIN_ADDR":     "localhost:2020",
		"IW_RATELIMIT_REDIS_URL": "redis://127.0.0.1:6398/0",
	}
	c, err := FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	got := c.WebhookPolicy().OwnPorts
	want := []uint16{8080, 9180, 2020, 8081, 8091, 8082, 7001, 17001, 7002, 17002, 6398, 16398}
	if !slices.Equal(got, want) {
		t.Errorf("OwnPorts = %v, want %v", got, want)
	}
}

// TestOwnPortsFromLookup: OwnPortsFromLookup gives the ports FromLookup's
// OwnPorts gives, reading and checking only the variables they come
// from: a malformed variable another process reads is not its concern, a
// malformed port is refused with its variable's name.
func TestOwnPortsFromLookup(t *testing.T) {
	ports := map[string]string{
		"IW_REDIS_URL":           "redis+cluster://127.0.0.1:7001,127.0.0.1:7002",
		"IW_EDGE_ADMIN_ADDR":     "localhost:2020",
		"IW_RATELIMIT_REDIS_URL": "redis://127.0.0.1:6398/0",
	}
	cases := []struct {
		desc    string
		env     map[string]string
		want    []uint16
		wantErr string
	}{
		{desc: "defaults", want: []uint16{8080, 9180, 2019, 8081, 8091, 8082, 6399, 16399}},
		{desc: "ports from the variables", env: ports, want: []uint16{8080, 9180, 2020, 8081, 8091, 8082, 7001, 17001, 7002, 17002, 6398, 16398}},
		{desc: "malformed variables of other processes", env: map[string]string{
			"IW_PUBLIC_URL": "x.example", "IW_ORIGIN_CACHE_BYTES": "lots", "IW_LOG_LEVEL": "loud", "IW_SHUTDOWN_GRACE": "soon",
			"IW_SIGNING_KEY": "c2hvcnQ", "IW_WEBHOOK_ALLOW_CIDRS": "nets", "IW_WORKER_LEASE": "-1s", "IW_WORKER_CONCURRENCY": "0",
		}, want: []uint16{8080, 9180, 2019, 8081, 8091, 8082, 6399, 16399}},
		{desc: "edge port not a number", env: map[string]string{"IW_EDGE_PORT": "abc"}, wantErr: `IW_EDGE_PORT must be a port number such as 8080, got "abc"`},
		{desc: "edge metrics port 0", env: map[string]string{"IW_EDGE_METRICS_PORT": "0"}, wantErr: `IW_EDGE_METRICS_PORT must be a port number such as 9180, got "0"`},
		{desc: "edge admin address without a port", env: map[string]string{"IW_EDGE_ADMIN_ADDR": "nohostport"}, wantErr: `IW_EDGE_ADMIN_ADDR must be host:port`},
		{desc: "origin address without a port", env: map[string]string{"IW_ORIGIN_ADDR": "bad"}, wantErr: `IW_ORIGIN_ADDR must be host:port such as 127.0.0.1:8081, got "bad"`},
		{desc: "origin metrics address without a port", env: map[string]string{"IW_ORIGIN_METRICS_ADDR": "127.0.0.1"}, wantErr: `IW_ORIGIN_METRICS_ADDR must be host:port`},
		{desc: "worker metrics address with a bad port", env: map[string]string{"IW_WORKER_METRICS_ADDR": "127.0.0.1:99999"}, wantErr: `IW_WORKER_METRICS_ADDR must be host:port`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, err := OwnPortsFromLookup(lookup)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if _, err := FromLookup(lookup); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FromLookup: err = %v, want the same refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ports = %v, want %v", got, tc.want)
			}
		})
	}
}
