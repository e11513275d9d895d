package edgecache

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestUnmarshalCaddyfileRefuses: a value that would silently become the
// default, or that has no meaning, is refused with the subdirective and
// the value, as `max_bytes {$IW_EDGE_CACHE_BYTES:1GiB}` receives it.
func TestUnmarshalCaddyfileRefuses(t *testing.T) {
	testCases := []struct {
		desc    string
		input   string
		wantErr string
	}{
		{desc: "max_bytes not a size", input: "max_bytes lots", wantErr: `max_bytes must be a positive size such as 256MiB, got "lots"`},
		{desc: "max_bytes 0", input: "max_bytes 0", wantErr: `max_bytes must be a positive size such as 256MiB, got "0"`},
		{desc: "max_bytes negative", input: "max_bytes -5", wantErr: `max_bytes must be a positive size such as 256MiB, got "-5"`},
		{desc: "max_entry_bytes 0", input: "max_entry_bytes 0", wantErr: `max_entry_bytes must be a positive size such as 256MiB, got "0"`},
		{desc: "refresh_timeout 0", input: "refresh_timeout 0", wantErr: `refresh_timeout must be a positive duration such as 30s, got "0"`},
		{desc: "stale_if_error negative", input: "stale_if_error -1s", wantErr: `stale_if_error must be a positive duration such as 30s, got "-1s"`},
		{desc: "max_bytes a size", input: "max_bytes 1GiB"},
		{desc: "stale_if_error 0", input: "stale_if_error 0"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("edge_cache {\n" + tc.input + "\n}"))
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
