package deprecation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/dunglas/httpsfv"

	"github.com/invoicewire/invoicewire/caddymodules/internal/edgetest"
	_ "github.com/invoicewire/invoicewire/caddymodules/jsonerrors"
)

func TestAdapt(t *testing.T) { edgetest.AssertAdaptFiles(t) }

func TestRetiredPrefix(t *testing.T) {
	edge := edgetest.Start(t, `
	deprecation {
		prefix /api/v0
		deprecated 2026-01-01T00:00:00Z
		sunset 2026-07-01T00:00:00Z
		policy https://invoicewire.example/developers/versioning
		sunset_policy https://invoicewire.example/developers/sunset
	}
	error /api/v0/broken "no" 404
	respond "ok"
	handle_errors {
		json_errors
	}`)
	testCases := []struct {
		desc       string
		path       string
		status     int
		deprecated bool
	}{
		{desc: "the prefix itself", path: "/api/v0", status: 200, deprecated: true},
		{desc: "below the prefix", path: "/api/v0/articles", status: 200, deprecated: true},
		{desc: "errors under the prefix", path: "/api/v0/broken", status: 404, deprecated: true},
		{desc: "the current version", path: "/api/v1/articles", status: 200},
		{desc: "a longer segment is not the prefix", path: "/api/v01/articles", status: 200},
		{desc: "the site", path: "/", status: 200},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			resp, body := edge.Do(t, "GET", test.path, "")
			if resp.StatusCode != test.status {
				t.Fatalf("status %d; want %d (%s)", resp.StatusCode, test.status, body)
			}
			if !test.deprecated {
				if resp.Header.Get("Deprecation") != "" || resp.Header.Get("Sunset") != "" || resp.Header.Get("Link") != "" {
					t.Errorf("unexpected deprecation fields: %v", resp.Header)
				}
				return
			}
			// RFC 9745: an SF Date item.
			it, err := httpsfv.UnmarshalItem(resp.Header.Values("Deprecation"))
			if err != nil {
				t.Fatalf("Deprecation %q: %v", resp.Header.Get("Deprecation"), err)
			}
			if d, ok := it.Value.(time.Time); !ok || !d.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("Deprecation = %q (%v)", resp.Header.Get("Deprecation"), it.Value)
			}
			if got := resp.Header.Get("Sunset"); got != "Wed, 01 Jul 2026 00:00:00 GMT" {
				t.Errorf("Sunset = %q", got)
			}
			links := strings.Join(resp.Header.Values("Link"), ", ")
			for _, want := range []string{
				`<https://invoicewire.example/developers/versioning>; rel="deprecation"; type="text/html"`,
				`<https://invoicewire.example/developers/sunset>; rel="sunset"`,
			} {
				if !strings.Contains(links, want) {
					t.Errorf("Link %q lacks %s", links, want)
				}
			}
		})
	}
}

func TestValidation(t *testing.T) {
	testCases := []struct {
		desc    string
		h       Handler
		wantErr string
	}{
		{desc: "six months exactly", h: Handler{Prefix: "/api/v0", Deprecated: "2026-01-31T00:00:00Z", Sunset: "2026-07-31T00:00:00Z", Policy: "https://x.example/p"}},
		{desc: "sunset too early", h: Handler{Prefix: "/api/v0", Deprecated: "2026-01-01T00:00:00Z", Sunset: "2026-06-30T23:59:59Z", Policy: "https://x.example/p"}, wantErr: "six months"},
		{desc: "sunset before deprecation", h: Handler{Prefix: "/api/v0", Deprecated: "2026-01-01T00:00:00Z", Sunset: "2025-01-01T00:00:00Z", Policy: "https://x.example/p"}, wantErr: "six months"},
		{desc: "bad date", h: Handler{Prefix: "/api/v0", Deprecated: "1 Jan 2026", Sunset: "2027-01-01T00:00:00Z", Policy: "https://x.example/p"}, wantErr: "RFC 3339"},
		{desc: "no policy", h: Handler{Prefix: "/api/v0", Deprecated: "2026-01-01T00:00:00Z", Sunset: "2027-01-01T00:00:00Z"}, wantErr: "policy"},
		{desc: "relative prefix", h: Handler{Prefix: "api/v0", Deprecated: "2026-01-01T00:00:00Z", Sunset: "2027-01-01T00:00:00Z", Policy: "https://x.example/p"}, wantErr: "prefix"},
		{desc: "link injection", h: Handler{Prefix: "/api/v0", Deprecated: "2026-01-01T00:00:00Z", Sunset: "2027-01-01T00:00:00Z", Policy: "https://x.example/p>; rel=\"x"}, wantErr: "link"},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			h := test.h
			err := h.Provision(ctx)
			if err == nil {
				err = h.Validate()
			}
			switch {
			case test.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case test.wantErr != "" && (err == nil || !strings.Contains(err.Error(), test.wantErr)):
				t.Errorf("error %v; want one mentioning %q", err, test.wantErr)
			}
		})
	}
}
