// Package netguard decides which network addresses webhook deliveries may
// reach (docs/decisions.md (subscriptions), docs/decisions.md (delivery)): only globally reachable unicast addresses, plus
// the networks an operator allows explicitly (IW_WEBHOOK_ALLOW_CIDRS).
//
// The origin checks a subscription's URL when it is created; the worker
// checks again in its dialer, after DNS resolution and for the address it
// actually connects to, so a name that later resolves elsewhere (DNS
// rebinding) is refused too. The blocked ranges follow the IANA special
// purpose registries, as Svix and Hook0 do.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// blocked are special-purpose ranges that are not globally reachable
// (RFC 6890 and the IANA IPv4/IPv6 special-purpose address registries).
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private (RFC 1918)
		"100.64.0.0/10",   // shared address space, CGNAT (RFC 6598)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata endpoints
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and broadcast
		"::/96",           // unspecified, loopback and IPv4-compatible (deprecated, RFC 4291 §2.5.5.1)
		"::/128",          // unspecified
		"::1/128",         // loopback
		"::ffff:0:0/96",   // IPv4-mapped (checked again as IPv4 below)
		"64:ff9b::/96",    // NAT64 (checked as its embedded IPv4)
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard-only
		"2001::/23",       // IETF protocol assignments (Teredo, ORCHID, ...)
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4 (checked as its embedded IPv4)
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing SIDs
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated, RFC 3879)
		"ff00::/8",        // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// globalUnicast6 is the only IPv6 space IANA allocates for global unicast;
// everything outside it (the ::/8 block with its IPv4-compatible and
// IPv4-translated forms, 100::/64, fc00::/7, fe80::/10, ff00::/8 and the
// rest) is reserved or special-purpose.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Policy is the set of addresses deliveries may reach.
type Policy struct {
	// Allow lists non-public networks that are nevertheless allowed, e.g.
	// 127.0.0.1/32 for local development. Inside them plain http:// is
	// accepted too.
	Allow []netip.Prefix
	// OwnPorts are the ports of the service's own listeners (the edge and
	// its admin API, the origin, the metrics listeners, Redis and its
	// cluster bus). They are refused on every address that is not public,
	// the allowed networks included, so an allowed network never opens
	// the service's own listeners to a subscription.
	OwnPorts []uint16
}

// Allowed reports whether a may be dialled: it is explicitly allowed, or it
// is a globally reachable unicast address.
func (p Policy) Allowed(a netip.Addr) bool {
	a = a.Unmap()
	if p.allowlisted(a) {
		return true
	}
	return Public(a)
}

func (p Policy) allowlisted(a netip.Addr) bool {
	a = a.Unmap()
	for _, pre := range p.Allow {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// AllowedPort reports whether a delivery may connect to port on a: on a
// public address any port, elsewhere none of the service's own.
func (p Policy) AllowedPort(a netip.Addr, port uint16) bool {
	if Public(a.Unmap()) {
		return true
	}
	for _, own := range p.OwnPorts {
		if own == port {
			return false
		}
	}
	return true
}

// Public reports whether a is a globally reachable unicast address.
// IPv4-mapped IPv6 addresses are judged as IPv4; NAT64 and 6to4 forms are
// refused whatever they embed, so they cannot reach an internal IPv4 address
// through a translator.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() {
		return false
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return false
	}
	for _, pre := range blocked {
		if pre.Contains(a) {
			return false
		}
	}
	return true
}

// ErrRefused marks an address the policy does not allow.
var ErrRefused = errors.New("netguard: address not allowed")

// RefusedError is an address the policy refused: Addr, which Host (the
// URL's host, "" when refused at dial time) led to.
type RefusedError struct {
	Host string
	Addr netip.Addr
}

// Error names the host as the URL gave it, never the address it resolved
// to: the message reaches the subscriber (the 400 of a subscription, the
// delivery log), and an address would tell any token holder what the
// service's DNS answers for internal names, or where a name rebinds to.
// A host that is an address literal is named, as the client wrote it.
func (e *RefusedError) Error() string {
	switch {
	case e.Host == "":
		return "the address dialled is not a public address"
	case isAddrLiteral(e.Host):
		return fmt.Sprintf("%s is not a public address", e.Host)
	default:
		return fmt.Sprintf("%s resolves to an address that is not public", e.Host)
	}
}

// isAddrLiteral reports whether host, a URL's host without its port, is an
// IP address rather than a name.
func isAddrLiteral(host string) bool {
	_, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// URLError is a subscription URL the rules refuse (docs/decisions.md, subscriptions), with a
// message for the client.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// LookupError is a subscription URL whose host could not be resolved for a
// reason other than the name not existing (NXDOMAIN, or no addresses): a
// resolver that timed out, failed (SERVFAIL) or could not be reached. It
// is the service's failure, not the client's mistake, and passes with time.
type LookupError struct {
	Host string
	Err  error
}

func (e *LookupError) Error() string {
	return fmt.Sprintf("netguard: resolving %s: %v", e.Host, e.Err)
}

func (e *LookupError) Unwrap() error { return e.Err }

// MaxURLLength is the longest subscription URL accepted (docs/decisions.md, subscriptions).
const MaxURLLength = 2048

// CheckURL applies the subscriptions rule's (docs/decisions.md) rules to a subscription URL: absolute https (http
// only when every address of the host is in the allow list), a host, no
// userinfo, at most 2048 characters (Unicode characters, as JSON Schema's
// maxLength counts them), and every address the host resolves to
// allowed. It returns the normalised URL: the path and the query
// percent-encoded where RFC 3986 requires it (EscapeQuery), so every
// delivery's request line is well-formed. A *URLError is the URL's fault; a
// *LookupError says the host could not be resolved just now (a host that
// does not exist is a *URLError).
func (p Policy) CheckURL(ctx context.Context, res Resolver, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, &URLError{"url is required."}
	}
	if utf8.RuneCountInString(raw) > MaxURLLength {
		return nil, &URLError{fmt.Sprintf("url is longer than %d characters.", MaxURLLength)}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, &URLError{"url must be an absolute https URL."}
	}
	if u.User != nil {
		return nil, &URLError{"url must not carry userinfo (user:password@)."}
	}
	if u.Fragment != "" {
		return nil, &URLError{"url must not have a fragment."}
	}
	if u.RawQuery, err = EscapeQuery(u.RawQuery); err != nil {
		return nil, &URLError{"url's query " + err.Error()}
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return nil, &URLError{"url must use https."}
	}
	host := u.Hostname()
	if host == "" {
		return nil, &URLError{"url has no host."}
	}
	port := uint16(443)
	if scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil || n == 0 {
			return nil, &URLError{"url has an invalid port."}
		}
		port = uint16(n)
	}
	addrs, err := resolve(ctx, res, host)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return nil, &URLError{fmt.Sprintf("url's host %q does not resolve.", host)}
		}
		// A timeout, a SERVFAIL, no resolver reachable: the name may be
		// fine, and whether it is cannot be told now.
		return nil, &LookupError{Host: host, Err: err}
	}
	for _, a := range addrs {
		if !p.Allowed(a) {
			return nil, &URLError{(&RefusedError{Host: host, Addr: a}).Error() + "; deliveries go only to public addresses."}
		}
		if !p.AllowedPort(a, port) {
			// The host as given, not a (RefusedError.Error says why).
			return nil, &URLError{fmt.Sprintf("url points at port %d of %s, which is not public, and that port is one of this service's own listeners; deliveries never go there.", port, host)}
		}
		if scheme == "http" && !p.allowlisted(a) {
			return nil, &URLError{"url must use https."}
		}
	}
	u.Scheme = scheme
	return u, nil
}

// EscapeQuery percent-encodes, byte by byte, what RFC 3986 §3.4 does not
// allow in a query: a space, '"', '<', '>', '\', '^', '`', '{', '|', '}',
// '[', ']' and every byte of a non-ASCII character (as UTF-8, §2.5). url.Parse
// keeps a query verbatim (it encodes only the path), and a request line
// carrying such a query is malformed (RFC 9112 §3.2): every delivery to it
// would fail. Encoding keeps the meaning a receiver decodes, as a browser
// does, and matches what url.Parse does to the path. Escapes already there
// are kept; a '%' not followed by two hex digits is an error (§2.1), as it is
// in a path, since whether it was meant as "%25" cannot be told.
func EscapeQuery(q string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '%':
			if i+2 >= len(q) || !httpheader.IsHex(q[i+1]) || !httpheader.IsHex(q[i+2]) {
				return "", fmt.Errorf("has %q, which is not a percent-encoded byte (%% and two hex digits; write %%25 for a %% itself).", q[i:min(i+3, len(q))])
			}
			b.WriteString(q[i : i+3])
			i += 2
		case httpheader.QueryByte(c):
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String(), nil
}

func resolve(ctx context.Context, res Resolver, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// Control is a net.Dialer Control function that refuses, at connect time,
// every address the policy does not allow. It runs for the address actually
// dialled, after resolution, so it also covers DNS rebinding and every
// connection a transport opens. When httpOnlyAllowlisted is true (a plain
// http:// delivery) only allow-listed addresses pass.
func (p Policy) Control(httpOnlyAllowlisted bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("netguard: unexpected dial address %q: %w", address, err)
		}
		a := ap.Addr().Unmap()
		if !p.Allowed(a) || !p.AllowedPort(a, ap.Port()) || (httpOnlyAllowlisted && !p.allowlisted(a)) {
			return &RefusedError{Addr: a}
		}
		return nil
	}
}

// Dialer returns a dialer whose every connection is checked by Control.
func (p Policy) Dialer(httpOnlyAllowlisted bool, timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control(httpOnlyAllowlisted)}
}
