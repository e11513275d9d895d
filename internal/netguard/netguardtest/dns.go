// Package netguardtest runs a DNS server a test controls, so that the
// outcomes of resolving a subscription's host (an address, NXDOMAIN, a
// SERVFAIL, no answer at all) can be produced at will.
package netguardtest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver starts a DNS server on a loopback UDP port for the test's
// duration and returns a resolver that asks only it. The first label of a
// name decides the answer:
//
//	nx.…        NXDOMAIN (the name does not exist)
//	servfail.…  SERVFAIL (the resolver failed)
//	silent.…    no answer at all (the resolver times out)
//	anything else: the A record of addrs[first label], or no records
func Resolver(t testing.TB, addrs map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go serve(pc, addrs)
	server := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
}

// Unreachable returns a resolver whose every server refuses to be dialled,
// as when no resolver is reachable.
func Unreachable() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, address string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "udp", Err: errRefused{}}
	}}
}

type errRefused struct{}

func (errRefused) Error() string   { return "connection refused" }
func (errRefused) Timeout() bool   { return false }
func (errRefused) Temporary() bool { return false }

func serve(pc net.PacketConn, addrs map[string]netip.Addr) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(q.Name.String(), ".")
		if first == "silent" {
			continue
		}
		rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
		switch first {
		case "nx":
			rh.RCode = dnsmessage.RCodeNameError
		case "servfail":
			rh.RCode = dnsmessage.RCodeServerFailure
		}
		b := dnsmessage.NewBuilder(nil, rh)
		b.EnableCompression()
		b.StartQuestions()
		b.Question(q)
		b.StartAnswers()
		if a, ok := addrs[first]; ok && rh.RCode == dnsmessage.RCodeSuccess && q.Type == dnsmessage.TypeA && a.Is4() {
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: a.As4()})
		}
		msg, err := b.Finish()
		if err != nil {
			continue
		}
		pc.WriteTo(msg, from)
	}
}
