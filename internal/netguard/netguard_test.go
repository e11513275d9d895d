package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/netguard/netguardtest"
)

func TestPublic(t *testing.T) {
	testCases := []struct {
		desc string
		addr string
		want bool
	}{
		{desc: "public IPv4", addr: "93.184.216.34", want: true},
		{desc: "public IPv6", addr: "2606:2800:220:1:248:1893:25c8:1946", want: true},
		{desc: "loopback", addr: "127.0.0.1"},
		{desc: "loopback elsewhere in 127/8", addr: "127.9.8.7"},
		{desc: "private 10/8", addr: "10.0.0.1"},
		{desc: "private 172.16/12", addr: "172.20.1.1"},
		{desc: "private 192.168/16", addr: "192.168.0.10"},
		{desc: "cloud metadata", addr: "169.254.169.254"},
		{desc: "CGNAT", addr: "100.64.1.1"},
		{desc: "this network", addr: "0.0.0.0"},
		{desc: "benchmarking", addr: "198.18.0.1"},
		{desc: "documentation", addr: "203.0.113.9"},
		{desc: "multicast", addr: "224.0.0.1"},
		{desc: "broadcast", addr: "255.255.255.255"},
		{desc: "IPv6 loopback", addr: "::1"},
		{desc: "IPv6 unspecified", addr: "::"},
		{desc: "IPv6 unique local", addr: "fd00::1"},
		{desc: "IPv6 link-local", addr: "fe80::1"},
		{desc: "IPv4-mapped loopback", addr: "::ffff:127.0.0.1"},
		{desc: "IPv4-mapped public", addr: "::ffff:93.184.216.34", want: true},
		{desc: "NAT64 of a private address", addr: "64:ff9b::a00:1"},
		{desc: "6to4", addr: "2002:a00:1::1"},
		{desc: "Teredo", addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2"},
		{desc: "IPv6 documentation", addr: "2001:db8::1"},
		{desc: "IPv4-compatible metadata", addr: "::169.254.169.254"},
		{desc: "IPv4-compatible public", addr: "::93.184.216.34"},
		{desc: "IPv4-translated (SIIT)", addr: "::ffff:0:a9fe:a9fe"},
		{desc: "IPv6 site-local", addr: "fec0::1"},
		{desc: "IPv6 dummy prefix", addr: "100:0:0:1::1"},
		{desc: "IPv6 reserved outside 2000::/3", addr: "4000::1"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := Public(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("Public(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	local := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	own := Policy{Allow: local.Allow, OwnPorts: []uint16{2019, 6379}}
	testCases := []struct {
		desc   string
		policy Policy
		url    string
		reason string // "" means accepted
		want   string // the normalised URL, when accepted and not url itself
	}{
		{desc: "https to an allowed address", policy: local, url: "https://127.0.0.1:8443/hook"},
		{desc: "http inside the allow list", policy: local, url: "http://127.0.0.1:8080/hook"},
		{desc: "localhost inside the allow list", policy: local, url: "http://localhost:8080/hook"},
		{desc: "public IP literal", url: "https://93.184.216.34/hook"},
		{desc: "http to a public address", url: "http://93.184.216.34/hook", reason: "https"},
		{desc: "loopback without allow list", url: "https://127.0.0.1/hook", reason: "public"},
		{desc: "localhost without allow list", url: "https://localhost/hook", reason: "public"},
		{desc: "private outside the allow list", policy: local, url: "https://10.0.0.1/hook", reason: "public"},
		{desc: "metadata", policy: local, url: "https://169.254.169.254/", reason: "public"},
		{desc: "userinfo", url: "https://u:p@93.184.216.34/", reason: "userinfo"},
		{desc: "relative", url: "/hook", reason: "absolute"},
		{desc: "other scheme", url: "ftp://93.184.216.34/", reason: "https"},
		{desc: "empty", url: "", reason: "required"},
		{desc: "too long", url: "https://93.184.216.34/" + strings.Repeat("a", 2048), reason: "2048"},
		{desc: "fragment", url: "https://93.184.216.34/#x", reason: "fragment"},
		{desc: "unresolvable", url: "https://no-such-host.invalid/", reason: "resolve"},
		{desc: "IPv4-compatible IPv6", policy: local, url: "https://[::169.254.169.254]/", reason: "public"},
		{desc: "own port on an allowed address", policy: own, url: "http://127.0.0.1:2019/load", reason: "own listeners"},
		{desc: "own port by default port", policy: Policy{Allow: local.Allow, OwnPorts: []uint16{80}}, url: "http://127.0.0.1/", reason: "own listeners"},
		{desc: "another port on an allowed address", policy: own, url: "http://127.0.0.1:9000/hook"},
		{desc: "own port on a public address", policy: own, url: "https://93.184.216.34:2019/hook"},
		{desc: "a space, quotes and non-ASCII in the query are percent-encoded", policy: local, url: `http://127.0.0.1:8080/raw?q=a b&x="y"&c=€`,
			want: "http://127.0.0.1:8080/raw?q=a%20b&x=%22y%22&c=%E2%82%AC"},
		{desc: "a space in the path is percent-encoded", policy: local, url: "http://127.0.0.1:8080/a b", want: "http://127.0.0.1:8080/a%20b"},
		{desc: "brackets, braces, a pipe and a backslash in the query are percent-encoded", policy: local, url: `http://127.0.0.1:8080/in?a[]={1|2}\`,
			want: "http://127.0.0.1:8080/in?a%5B%5D=%7B1%7C2%7D%5C"},
		{desc: "escapes and sub-delims in the query are kept", policy: local, url: "http://127.0.0.1:8080/in?a=%20%c3%a9&b=x,y;z=1:2@/?!$'()*+~",
			want: "http://127.0.0.1:8080/in?a=%20%c3%a9&b=x,y;z=1:2@/?!$'()*+~"},
		{desc: "a % that is no escape in the query", url: "https://93.184.216.34/in?discount=5%", reason: `"%"`},
		{desc: "a % before non-hex in the query", url: "https://93.184.216.34/in?q=%zz", reason: `"%zz"`},
		{desc: "2048 characters, most of them 3 bytes", url: "https://93.184.216.34/" + strings.Repeat("€", 2048-len("https://93.184.216.34/"))},
		{desc: "2049 characters", url: "https://93.184.216.34/" + strings.Repeat("€", 2049-len("https://93.184.216.34/")), reason: "2048 characters"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			u, err := tc.policy.CheckURL(context.Background(), net.DefaultResolver, tc.url)
			switch {
			case tc.reason == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Errorf("error %v, want one about %q", err, tc.reason)
			case tc.want != "" && u.String() != tc.want:
				t.Errorf("normalised to %s, want %s", u, tc.want)
			}
		})
	}
}

// TestDialerRefuses: the dial-time guard refuses a loopback server unless
// it is allowed, whatever name led there.
func TestDialerRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	get := func(p Policy, httpOnly bool, url string) error {
		c := &http.Client{Transport: &http.Transport{DialContext: p.Dialer(httpOnly, time.Second).DialContext}}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if err := get(Policy{}, false, srv.URL); !errors.Is(err, ErrRefused) {
		t.Errorf("loopback by address: %v, want a refusal", err)
	}
	if err := get(Policy{}, false, byName); !errors.Is(err, ErrRefused) {
		t.Errorf("loopback by name: %v, want a refusal", err)
	}
	allowed := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	if err := get(allowed, true, byName); err != nil {
		t.Errorf("allowed loopback: %v", err)
	}
	port := uint16(srv.Listener.Addr().(*net.TCPAddr).Port)
	allowed.OwnPorts = []uint16{port}
	if err := get(allowed, true, byName); !errors.Is(err, ErrRefused) {
		t.Errorf("one of the service's own ports: %v, want a refusal", err)
	}
}

// TestCheckURLResolverFailures resolves through a DNS server the test
// controls: a name that does not exist is the URL's fault (*URLError), a
// resolver that fails, times out or cannot be reached is not
// (*LookupError), and a name that resolves is checked as before.
func TestCheckURLResolverFailures(t *testing.T) {
	res := netguardtest.Resolver(t, map[string]netip.Addr{
		"ok":      netip.MustParseAddr("93.184.216.34"),
		"private": netip.MustParseAddr("10.0.0.1"),
	})
	testCases := []struct {
		desc   string
		res    Resolver
		url    string
		lookup bool // a *LookupError, else a *URLError (or none)
		ok     bool
	}{
		{desc: "resolves to a public address", res: res, url: "https://ok.hooks.test/in", ok: true},
		{desc: "resolves to a private address", res: res, url: "https://private.hooks.test/in"},
		{desc: "NXDOMAIN", res: res, url: "https://nx.hooks.test/in"},
		{desc: "no addresses", res: res, url: "https://empty.hooks.test/in"},
		{desc: "SERVFAIL", res: res, url: "https://servfail.hooks.test/in", lookup: true},
		{desc: "no answer", res: res, url: "https://silent.hooks.test/in", lookup: true},
		{desc: "no resolver reachable", res: netguardtest.Unreachable(), url: "https://ok.hooks.test/in", lookup: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := Policy{}.CheckURL(ctx, tc.res, tc.url)
			var ue *URLError
			var le *LookupError
			switch {
			case tc.ok:
				if err != nil {
					t.Fatalf("CheckURL: %v", err)
				}
			case tc.lookup:
				if !errors.As(err, &le) || errors.As(err, &ue) {
					t.Fatalf("CheckURL: %T %v, want a *LookupError", err, err)
				}
			default:
				if !errors.As(err, &ue) {
					t.Fatalf("CheckURL: %T %v, want a *URLError", err, err)
				}
			}
		})
	}
}

// TestRefusalsHideTheAddress: a refusal says why, and names the host as
// the URL gave it, never the address a name resolved to: the message
// reaches the subscriber, and the address would tell any token holder
// what the service's DNS answers for internal names. A literal address is
// the client's own, and named.
func TestRefusalsHideTheAddress(t *testing.T) {
	res := netguardtest.Resolver(t, map[string]netip.Addr{
		"private": netip.MustParseAddr("10.1.2.3"),
		"loop":    netip.MustParseAddr("127.0.0.7"),
	})
	own := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, OwnPorts: []uint16{2019}}
	testCases := []struct {
		desc   string
		policy Policy
		url    string
		want   string // the message holds this
		hidden string // and not this
	}{
		{desc: "a name resolving to a private address", url: "https://private.hooks.test/in",
			want: "private.hooks.test resolves to an address that is not public", hidden: "10.1.2.3"},
		{desc: "a name resolving to loopback", url: "https://loop.hooks.test/in",
			want: "loop.hooks.test resolves to an address that is not public", hidden: "127.0.0.7"},
		{desc: "a name resolving to an own port on an allowed network", policy: own, url: "http://loop.hooks.test:2019/load",
			want: "port 2019 of loop.hooks.test, which is not public, and that port is one of this service's own listeners", hidden: "127.0.0.7"},
		{desc: "a literal private address is named as written", url: "https://10.1.2.3/in",
			want: "10.1.2.3 is not a public address"},
		{desc: "a literal IPv4-mapped address is named as written", url: "https://[::ffff:10.1.2.3]/in",
			want: "::ffff:10.1.2.3 is not a public address", hidden: "resolves"},
		{desc: "a literal own port is named as written", policy: own, url: "http://127.0.0.7:2019/load",
			want: "port 2019 of 127.0.0.7, which is not public"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := tc.policy.CheckURL(ctx, res, tc.url)
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("CheckURL: %T %v, want a *URLError", err, err)
			}
			if !strings.Contains(ue.Reason, tc.want) || (tc.hidden != "" && strings.Contains(ue.Reason, tc.hidden)) {
				t.Errorf("%q; want it to say %q and not %q", ue.Reason, tc.want, tc.hidden)
			}
		})
	}
	// At dial time the address is whatever the name resolved to then (DNS
	// rebinding); the delivery log shows the message.
	err := Policy{}.Control(false)("tcp4", "10.1.2.3:443", nil)
	if !errors.Is(err, ErrRefused) || strings.Contains(err.Error(), "10.1.2.3") || !strings.Contains(err.Error(), "not a public address") {
		t.Errorf("dial-time refusal %v; want one without the address", err)
	}
}
