package ratelimitheaders

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestAddressKey checks the keys requests are counted by: the address,
// IPv6 grouped by /64, and the hash the handler takes from the key made in
// its buffer equal to the hash of the key as a string, which every edge of
// a deployment must agree on whatever its version (the shared counts are
// keyed by it).
func TestAddressKey(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.7":                 "ip:192.0.2.7",
		"2001:db8:1:2:3:4:5:6":      "ip:2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":      "ip:2001:db8:1:2::/64",
		"::ffff:192.0.2.7":          "ip:::ffff:192.0.2.7",
		"2001:db8:aaaa:bbbb:cccc::": "ip:2001:db8:aaaa:bbbb::/64",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		vars := map[string]any{caddyhttp.ClientIPVarKey: ip}
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
		if got := addressKey(r); got != want {
			t.Errorf("addressKey(%s) = %q, want %q", ip, got, want)
		}
		var b [64]byte
		if got := hashOfBytes(appendAddressKey(b[:0], r)); got != hashOf(want) {
			t.Errorf("hash of %s's key made in a buffer %x, want %x", ip, got, hashOf(want))
		}
		if n := testing.AllocsPerRun(100, func() { hashOfBytes(appendAddressKey(b[:0], r)) }); n != 0 {
			t.Errorf("hashing %s's key: %v allocations, want none", ip, n)
		}
	}
}
