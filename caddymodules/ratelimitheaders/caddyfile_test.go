package ratelimitheaders

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestUnmarshalCaddyfileRefuses: 0, which the JSON configuration reads as
// the default, and negative values are refused with the subdirective and
// the value, as `quota {$IW_RATELIMIT_QUOTA:1000}` receives them; an empty
// value still keeps the default.
func TestUnmarshalCaddyfileRefuses(t *testing.T) {
	testCases := []struct {
		desc    string
		input   string
		wantErr string
	}{
		{desc: "quota 0", input: "quota 0", wantErr: `quota must be a positive integer, got "0"`},
		{desc: "agent_quota negative", input: "agent_quota -1", wantErr: `agent_quota must be a positive integer, got "-1"`},
		{desc: "register_quota 0", input: "register_quota 0", wantErr: `register_quota must be a positive integer, got "0"`},
		{desc: "window 0", input: "window 0", wantErr: `window must be a positive number of seconds or a duration such as 1m, got "0"`},
		{desc: "window negative", input: "window -5s", wantErr: `window must be a positive number of seconds or a duration such as 1m, got "-5s"`},
		{desc: "register_window not a duration", input: "register_window soon", wantErr: `register_window must be a positive number of seconds or a duration such as 1m, got "soon"`},
		{desc: "sync_interval 0", input: "sync_interval 0s", wantErr: `sync_interval must be a positive number of seconds or a duration such as 1m, got "0s"`},
		{desc: "max_clients 0", input: "max_clients 0", wantErr: `max_clients must be a positive integer, got "0"`},
		{desc: "positive values", input: "quota 10\nwindow 1m\nmax_clients 4096"},
		{desc: "empty values keep the defaults", input: `quota ""` + "\n" + `window ""`},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit_headers {\n" + tc.input + "\n}"))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("UnmarshalCaddyfile: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("UnmarshalCaddyfile error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
