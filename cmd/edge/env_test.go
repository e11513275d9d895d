package main

import (
	"strings"
	"testing"
)

// TestCheckEnv: a duration the Caddyfiles give Caddy's own directives is
// refused, with its variable and value, when negative, 0 or not a
// duration, before Caddy would read it as no timeout.
func TestCheckEnv(t *testing.T) {
	testCases := []struct {
		desc    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{desc: "negative origin timeout", args: []string{"edge", "run"}, env: map[string]string{"IW_ORIGIN_TIMEOUT": "-5s"}, wantErr: `IW_ORIGIN_TIMEOUT must be a positive duration such as 10s, got "-5s"`},
		{desc: "negative header timeout on validate", args: []string{"edge", "validate"}, env: map[string]string{"IW_EDGE_READ_HEADER_TIMEOUT": "-1s"}, wantErr: `IW_EDGE_READ_HEADER_TIMEOUT must be a positive duration such as 10s, got "-1s"`},
		{desc: "zero body timeout", args: []string{"edge", "adapt"}, env: map[string]string{"IW_EDGE_READ_BODY_TIMEOUT": "0"}, wantErr: `IW_EDGE_READ_BODY_TIMEOUT must be a positive duration such as 10s, got "0"`},
		{desc: "not a duration", args: []string{"edge", "reload"}, env: map[string]string{"IW_ORIGIN_TIMEOUT": "soon"}, wantErr: `IW_ORIGIN_TIMEOUT must be a positive duration such as 10s, got "soon"`},
		{desc: "positive durations", args: []string{"edge", "run"}, env: map[string]string{"IW_ORIGIN_TIMEOUT": "3s", "IW_EDGE_READ_HEADER_TIMEOUT": "1d"}},
		{desc: "empty keeps the default", args: []string{"edge", "run"}, env: map[string]string{"IW_ORIGIN_TIMEOUT": ""}},
		{desc: "a subcommand that reads no configuration", args: []string{"edge", "version"}, env: map[string]string{"IW_ORIGIN_TIMEOUT": "-5s"}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			err := checkEnv(tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkEnv: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("checkEnv error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
