// Package connguard provides the conn_guard listener wrapper: it bounds how
// many connections one client address may hold open at once, so a client
// cannot tie up the edge with idle or slow connections (a slowloris sends
// its headers one byte at a time and is counted by no request limit), and
// it marks a connection whose request head carries both Content-Length and
// Transfer-Encoding, which net/http accepts (the Transfer-Encoding wins and
// Content-Length is deleted before any handler runs) but RFC 9112 §6.1
// requires the server to close after answering. bounded_body reads the
// mark and answers 400 with Connection: close. It also turns net/http's own
// plain-text answers to requests it cannot parse, which no handler sees,
// into the service's JSON error (rawerrors.go).
//
// The mark and the JSON answers need the bytes in the clear: they work where
// the wrapper sees plain HTTP (TLS terminated before the edge, or no TLS).
// Where the edge terminates TLS, put the wrapper before tls (net/http
// recognises a TLS connection, and so HTTP/2, by its concrete type); it
// then counts connections only, bounded_body still closes every connection
// that sent a chunked body, and HTTP/1.1 requests net/http cannot parse get
// its plain text (HTTP/2 ones get a stream reset).
package connguard

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/invoicewire/invoicewire/internal/metrics"
)

func init() {
	caddy.RegisterModule(Wrapper{})
}

var refused = prometheus.NewCounter(prometheus.CounterOpts{
	Namespace: "caddy",
	Subsystem: "conn_guard",
	Name:      "refused_total",
	Help:      "Connections closed at accept because their address already held per_address connections.",
})

// Wrapper limits open connections per client address.
type Wrapper struct {
	// PerAddress is the most connections one address (IPv6: one /64) may
	// hold open at once; the next is closed as soon as it is accepted.
	// Default 64 when per_address is omitted; the shipped Caddyfiles set
	// it from IW_EDGE_CONNS_PER_ADDRESS, which defaults to 256 there.
	PerAddress int `json:"per_address,omitempty"`
	// Exempt lists networks (CIDRs) whose connections are not counted: the
	// load balancers and proxies in front of the edge, which carry many
	// clients' requests. "private_ranges" stands for the private networks.
	Exempt []string `json:"exempt,omitempty"`

	exempt []netip.Prefix
	logger *zap.Logger
	open   *openCounts
}

// openCounts are the open connections per address. The map holds only
// addresses with open connections: bounded by the connections themselves.
type openCounts struct {
	mu     sync.Mutex
	byAddr map[netip.Prefix]int
}

// CaddyModule returns the Caddy module information.
func (Wrapper) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.listeners.conn_guard",
		New: func() caddy.Module { return new(Wrapper) },
	}
}

// Provision applies defaults and parses the exempt networks.
func (w *Wrapper) Provision(ctx caddy.Context) error {
	w.logger = ctx.Logger()
	if w.PerAddress == 0 {
		w.PerAddress = 64
	}
	for _, s := range w.Exempt {
		cidrs := []string{s}
		if s == "private_ranges" {
			cidrs = caddyhttp.PrivateRangesCIDR()
		}
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				a, aerr := netip.ParseAddr(c)
				if aerr != nil {
					return fmt.Errorf("conn_guard: exempt %q is not a CIDR: %w", c, err)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			w.exempt = append(w.exempt, p.Masked())
		}
	}
	w.open = &openCounts{byAddr: make(map[netip.Prefix]int)}
	return metrics.Register(ctx.GetMetricsRegistry(), refused)
}

// Validate checks w's configuration.
func (w *Wrapper) Validate() error {
	if w.PerAddress < 1 {
		return fmt.Errorf("conn_guard: per_address must be at least 1, got %d", w.PerAddress)
	}
	return nil
}

// WrapListener counts ln's connections per address.
func (w *Wrapper) WrapListener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, w: w}
}

type listener struct {
	net.Listener
	w *Wrapper
}

// Accept returns the next connection whose address is within its bound,
// closing the ones beyond it. It never blocks on a client: a refused
// connection is closed without a word, since writing an answer could wait
// on a client that does not read.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, counted := l.w.key(c.RemoteAddr())
		if !counted {
			return &Conn{Conn: c}, nil
		}
		if !l.w.acquire(key) {
			refused.Inc()
			c.Close()
			continue
		}
		return &Conn{Conn: c, release: func() { l.w.release(key) }}, nil
	}
}

// key is the address a connection counts against: IPv6 grouped by /64, as
// the rate limiter groups it, since one host commonly holds a whole /64.
func (w *Wrapper) key(addr net.Addr) (netip.Prefix, bool) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Prefix{}, false // a unix socket: nothing to count
	}
	a := ap.Addr().Unmap()
	for _, p := range w.exempt {
		if p.Contains(a) {
			return netip.Prefix{}, false
		}
	}
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p, true
}

func (w *Wrapper) acquire(key netip.Prefix) bool {
	o := w.open
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byAddr[key] >= w.PerAddress {
		return false
	}
	o.byAddr[key]++
	return true
}

func (w *Wrapper) release(key netip.Prefix) {
	o := w.open
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byAddr[key] <= 1 {
		delete(o.byAddr, key)
		return
	}
	o.byAddr[key]--
}

// Conn is an accepted connection. It releases its address's slot when
// closed and watches its request heads for Content-Length together with
// Transfer-Encoding.
type Conn struct {
	net.Conn
	release   func()
	closeOnce sync.Once
	conflict  atomic.Bool

	// The scanner's state: the start of the current line (lower-cased),
	// its length, whether a line of the current head came before it (else
	// it is a request line, RFC 9112 §2.1), and what the current header
	// block has named so far.
	line         [20]byte
	lineLen      int
	inHead       bool
	sawCL, sawTE bool
}

// Read reads from the connection and scans what it read.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.conflict.Load() {
		c.scan(p[:n])
	}
	return n, err
}

// Write writes p, or the JSON answer in place of net/http's own plain-text
// answer to a request it could not parse (rawerrors.go).
func (c *Conn) Write(p []byte) (int, error) {
	if out, ok := rewriteRawError(p, time.Now(), c.readingRequestLine); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite shuts down the writing side where the connection can
// (TCP): net/http sends its FIN after answering a request whose body it
// gave up reading, then waits before it closes, so the client reads the
// answer before the close resets the connection (golang.org/issue/3595).
// A wrapper without this method would leave it out.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection once and frees its slot.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
	return err
}

// readingRequestLine reports whether the line being read is a request line
// that has not ended: net/http's 431 then means that the request target
// alone was over its limit. It is asked only about net/http's own answers,
// which it writes after reading failed, never while a read is under way.
func (c *Conn) readingRequestLine() bool { return !c.inHead && c.lineLen > 0 }

// FramingConflict reports whether a request head read on this connection
// carried both Content-Length and Transfer-Encoding (RFC 9112 §6.1).
func (c *Conn) FramingConflict() bool { return c.conflict.Load() }

// scan follows header lines through the byte stream. A blank line ends a
// header block; a block that named both fields marks the connection. Body
// bytes go through the same scanner: a body that holds both names on
// consecutive lines would mark its connection too, a false alarm that
// costs that client one 400 and a new connection.
func (c *Conn) scan(b []byte) {
	for _, ch := range b {
		if ch == '\n' {
			l := c.lineLen
			if l > 0 && l <= len(c.line) && c.line[l-1] == '\r' {
				l--
			}
			switch {
			case l == 0:
				if c.sawCL && c.sawTE {
					c.conflict.Store(true)
					return
				}
				c.sawCL, c.sawTE = false, false
			case hasPrefix(c.line[:min(l, len(c.line))], "content-length:"):
				c.sawCL = true
			case hasPrefix(c.line[:min(l, len(c.line))], "transfer-encoding:"):
				c.sawTE = true
			}
			c.inHead = l > 0
			c.lineLen = 0
			continue
		}
		if c.lineLen < len(c.line) {
			if 'A' <= ch && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			c.line[c.lineLen] = ch
		}
		c.lineLen++
	}
}

func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// Interface guards
var (
	_ caddy.Provisioner     = (*Wrapper)(nil)
	_ caddy.Validator       = (*Wrapper)(nil)
	_ caddy.ListenerWrapper = (*Wrapper)(nil)
)
