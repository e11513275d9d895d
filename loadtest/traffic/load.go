package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// mix is what one phase sends.
type mix struct {
	// urls are the GET targets, most popular first; picked with a Zipf
	// distribution of exponent zipfS (single-URL phase: one URL).
	urls  []string
	zipfS float64
	// hot is how many of the most popular URLs make the hot set whose
	// hit ratio is reported.
	hot int
	// conditional and ask are the shares of requests sent with
	// If-None-Match (an ETag seen before) and as POST /ask.
	conditional, ask float64
	// heavy are fixed client addresses, each sending heavyRate requests
	// a second on a connection of its own whatever the rest does: at
	// twice the quota, they go over it within each window.
	heavy     []string
	heavyRate float64
	// fixedClients, when > 0, replaces the fresh address per request by
	// this many addresses in turn (the single-URL reference).
	fixedClients int
	askBodies    []string
	// etags holds, per URL and Accept-Encoding, the last ETag a 200 gave
	// (index url*len(encodings)+encoding), for conditional requests.
	etags []atomic.Pointer[string]
}

// The kinds of request whose latencies are reported apart.
const (
	kindHit = iota
	kindForwarded
	kindAsk
	kinds
)

// result is what the load saw.
type result struct {
	requests, errors int64
	byStatus         map[int]int64
	latencies        []time.Duration

	// byKind splits latencies: GETs the edge answered from its cache
	// (hits, 304s included), GETs it forwarded, and POST /ask, which the
	// origin answers.
	byKind [kinds][]time.Duration
	// fromSend are the open loop's latencies counted from when the
	// request was written instead of when it was due: the edge's answer
	// alone, without the wait for a free connection or for the
	// generator's own core (which the origin and both Redis servers
	// share). Far below latencies, they say the delay was before the
	// edge read the request.
	fromSend []time.Duration
	// wakeLags are, for the open loop's requests whose connection was
	// free before they fell due, how late the generator woke up to send
	// them: its own scheduling delay, which latencies include.
	wakeLags []time.Duration
	// edgeWait and loadWait are how long the busiest thread of the edge
	// and of this program (the one that ran longest in the phase: the Go
	// scheduler's, with one core each) waited, runnable, for a CPU, and
	// edgeCoreTaken how much of the edge's core went to interrupts and
	// the hypervisor: delays no request's own work explains.
	edgeWait, loadWait, edgeCoreTaken time.Duration
	// edgeCPU is the CPU time the edge used meanwhile.
	edgeCPU time.Duration

	hotHits, hotTotal     int64
	hits, cacheable       int64
	distinctClients       int64
	heavyLimited          int64
	wall                  time.Duration
	conditional304, askOK int64
	// received is the bytes of the responses, status lines and fields
	// included.
	received int64
	// cpu is the CPU time this process (the generator) used meanwhile.
	cpu time.Duration
}

var encodings = []string{"zstd", "br", "gzip, deflate", "identity", "zstd, br, gzip", "gzip"}

// conn is one keep-alive HTTP/1.1 connection of the generator. Requests
// are written from a reused buffer and responses parsed in place (status
// line, the few fields the report uses, the body skipped by its framing):
// net/http's client, and even http.ReadResponse with its header map of the
// edge's fifteen fields, cost the generator more CPU per request than the
// syscalls (docs/edge-gateway.md, "Traffic").
type conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	req  []byte
	// etag holds the last response's ETag until the next request.
	etag []byte
	// received counts the bytes read from the edge, responses whole.
	received int64
}

// countingReader counts what is read through it into *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

func (k *conn) close() {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// do sends the request in k.req and reads the answer: its status, whether
// the cache says it was a hit, and its ETag (in k.etag, empty without
// one).
func (k *conn) do() (status int, hit bool, err error) {
	if k.c == nil {
		c, err := net.DialTimeout("tcp", k.addr, 5*time.Second)
		if err != nil {
			return 0, false, err
		}
		k.c, k.br = c, bufio.NewReaderSize(countingReader{c, &k.received}, 32<<10)
	}
	k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := k.c.Write(k.req); err != nil {
		k.close()
		return 0, false, err
	}
	status, hit, closeConn, err := k.readResponse(bytes.HasPrefix(k.req, []byte("HEAD ")))
	if err != nil || closeConn {
		k.close()
	}
	return status, hit, err
}

var errMalformed = errors.New("malformed response")

// readResponse reads one HTTP/1.1 response (RFC 9112): the status line,
// the fields Content-Length, Transfer-Encoding, Connection, Cache-Status
// and ETag, and the body, discarded.
func (k *conn) readResponse(head bool) (status int, hit, closeConn bool, err error) {
	line, err := k.br.ReadSlice('\n')
	if err != nil {
		return 0, false, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, false, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, false, errMalformed
	}
	length, chunked := int64(-1), false
	k.etag = k.etag[:0]
	for {
		line, err = k.br.ReadSlice('\n')
		if err != nil {
			return 0, false, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, false, false, errMalformed
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return 0, false, false, errMalformed
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case asciiEqualFold(name, "Connection"):
			closeConn = bytes.EqualFold(value, []byte("close"))
		case asciiEqualFold(name, "Cache-Status"):
			hit = hit || bytes.Contains(value, []byte("; hit"))
		case asciiEqualFold(name, "Etag"):
			k.etag = append(k.etag[:0], value...)
		}
	}
	switch {
	case head || status == http.StatusNotModified || status == http.StatusNoContent || status < 200:
	case chunked:
		err = k.skipChunked()
	case length >= 0:
		_, err = k.br.Discard(int(length))
	default:
		// Delimited by the end of the connection.
		_, err = io.Copy(io.Discard, k.br)
		closeConn = true
	}
	return status, hit, closeConn, err
}

// skipChunked discards a chunked body and its trailer section (RFC 9112
// §7.1).
func (k *conn) skipChunked() error {
	for {
		line, err := k.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 {
			return errMalformed
		}
		if size == 0 {
			for {
				line, err := k.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := k.br.Discard(int(size) + 2); err != nil {
			return err
		}
	}
}

// asciiEqualFold compares a field name with a canonical one, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if c|0x20 != d|0x20 {
			return false
		}
	}
	return true
}

// run sends the mix over conns keep-alive connections to addr for d.
// run sends m over conns connections for d. With perSecond 0 it is a
// closed loop: each connection sends its next request as soon as the last
// is answered, so the edge is saturated and latency is mostly the wait
// behind the other connections' requests. With perSecond > 0 it is an
// open loop at that rate: requests are due at fixed times, each sent by
// whichever connection is free first, as independent readers arrive
// whatever the others wait for; a request's latency counts from the time
// it was due, so a stall that leaves no connection free is charged to
// every request it delayed (the coordinated omission wrk2 corrects).
func run(ctx context.Context, addr string, m *mix, conns int, d time.Duration, seed uint64, perSecond float64) *result {
	var (
		mu    sync.Mutex
		total = &result{byStatus: map[int]int64{}}
		wg    sync.WaitGroup
		turn  atomic.Int64
		// slot numbers the open loop's requests: request i is due at
		// i/perSecond after the start.
		slot atomic.Int64
	)
	if m.etags == nil {
		m.etags = make([]atomic.Pointer[string], len(m.urls)*len(encodings))
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cpu0 := processCPU()
	t0 := time.Now()
	for w := range conns {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			var zipf *rand.Zipf
			if len(m.urls) > 1 {
				zipf = rand.NewZipf(r, m.zipfS, 1, uint64(len(m.urls)-1))
			}
			k := &conn{addr: addr, req: make([]byte, 0, 1024)}
			defer k.close()
			defer func() { atomic.AddInt64(&total.received, k.received) }()
			local := &result{byStatus: map[int]int64{}, latencies: make([]time.Duration, 0, 1<<16)}
			var due time.Time
			for ctx.Err() == nil {
				if perSecond > 0 {
					due = t0.Add(time.Duration(float64(slot.Add(1)-1) / perSecond * float64(time.Second)))
					if wait := time.Until(due); wait > 0 {
						time.Sleep(wait)
						local.wakeLags = append(local.wakeLags, time.Since(due))
					}
				}
				idx := 0
				if zipf != nil {
					idx = int(zipf.Uint64())
				}
				x := r.Float64()
				isAsk := x < m.ask && len(m.askBodies) > 0
				ei := r.IntN(len(encodings))
				b := k.req[:0]
				if isAsk {
					b = append(b, "POST /ask HTTP/1.1\r\nContent-Type: application/json\r\n"...)
				} else {
					b = append(b, "GET "...)
					b = append(b, m.urls[idx]...)
					b = append(b, " HTTP/1.1\r\n"...)
				}
				b = append(b, "Host: "...)
				b = append(b, addr...)
				b = append(b, "\r\nAccept-Encoding: "...)
				b = append(b, encodings[ei]...)
				b = append(b, "\r\nX-Forwarded-For: "...)
				if m.fixedClients > 0 {
					b = appendIPv4(b, uint32(0x0a000000+turn.Add(1)%int64(m.fixedClients)))
				} else {
					b = appendFreshClient(b, r)
					local.distinctClients++
				}
				cond := !isAsk && x >= m.ask && x < m.ask+m.conditional
				if cond {
					if et := m.etags[idx*len(encodings)+ei].Load(); et != nil {
						b = append(b, "\r\nIf-None-Match: "...)
						b = append(b, *et...)
					} else {
						cond = false
					}
				}
				if isAsk {
					body := m.askBodies[r.IntN(len(m.askBodies))]
					b = append(b, "\r\nContent-Length: "...)
					b = strconv.AppendInt(b, int64(len(body)), 10)
					b = append(b, "\r\n\r\n"...)
					b = append(b, body...)
				} else {
					b = append(b, "\r\n\r\n"...)
				}
				k.req = b
				sent := time.Now()
				start := sent
				if perSecond > 0 {
					start = due
				}
				status, hit, err := k.do()
				if err != nil {
					if ctx.Err() == nil {
						local.errors++
					}
					continue
				}
				took := time.Since(start)
				local.latencies = append(local.latencies, took)
				if perSecond > 0 {
					local.fromSend = append(local.fromSend, time.Since(sent))
				}
				kind := kindForwarded
				switch {
				case isAsk:
					kind = kindAsk
				case hit:
					kind = kindHit
				}
				local.byKind[kind] = append(local.byKind[kind], took)
				local.requests++
				local.byStatus[status]++
				switch {
				case isAsk:
					if status == 200 {
						local.askOK++
					}
				case cond && status == http.StatusNotModified:
					local.conditional304++
				}
				if !isAsk && !cond {
					local.cacheable++
					if hit {
						local.hits++
					}
				}
				if !isAsk && status == 200 {
					if len(k.etag) > 0 {
						slot := &m.etags[idx*len(encodings)+ei]
						if old := slot.Load(); old == nil || *old != string(k.etag) {
							et := string(k.etag)
							slot.Store(&et)
						}
					}
					if idx < m.hot && !cond {
						local.hotTotal++
						if hit {
							local.hotHits++
						}
					}
				}
			}
			mu.Lock()
			total.requests += local.requests
			total.errors += local.errors
			total.hotHits += local.hotHits
			total.hotTotal += local.hotTotal
			total.hits += local.hits
			total.cacheable += local.cacheable
			total.distinctClients += local.distinctClients
			total.heavyLimited += local.heavyLimited
			total.conditional304 += local.conditional304
			total.askOK += local.askOK
			for k, v := range local.byStatus {
				total.byStatus[k] += v
			}
			total.latencies = append(total.latencies, local.latencies...)
			total.fromSend = append(total.fromSend, local.fromSend...)
			total.wakeLags = append(total.wakeLags, local.wakeLags...)
			for k := range total.byKind {
				total.byKind[k] = append(total.byKind[k], local.byKind[k]...)
			}
			mu.Unlock()
		})
	}
	for _, client := range m.heavy {
		wg.Go(func() {
			t := time.NewTicker(time.Duration(float64(time.Second) / m.heavyRate))
			defer t.Stop()
			k := &conn{addr: addr}
			defer k.close()
			k.req = []byte("GET " + m.urls[0] + " HTTP/1.1\r\nHost: " + addr + "\r\nX-Forwarded-For: " + client + "\r\n\r\n")
			var limited int64
			for {
				select {
				case <-ctx.Done():
					atomic.AddInt64(&total.heavyLimited, limited)
					return
				case <-t.C:
				}
				if status, _, err := k.do(); err == nil && status == http.StatusTooManyRequests {
					limited++
				}
			}
		})
	}
	wg.Wait()
	total.wall = time.Since(t0)
	total.cpu = processCPU() - cpu0
	slices.Sort(total.latencies)
	slices.Sort(total.fromSend)
	slices.Sort(total.wakeLags)
	for k := range total.byKind {
		slices.Sort(total.byKind[k])
	}
	return total
}

// appendFreshClient appends a random client address: IPv4 half the time,
// else an address in a random IPv6 /64 (the limiter keys IPv6 clients by
// /64). The IPv4 address is never in 127.0.0.0/8, the proxies the edge
// trusts here: the edge reads X-Forwarded-For right to left and skips
// them, so all of those would count as the generator's own 127.0.0.1, one
// client that soon spends its budget.
func appendFreshClient(b []byte, r *rand.Rand) []byte {
	if r.IntN(2) == 0 {
		v := r.Uint32()
		for v>>24 == 127 {
			v = r.Uint32()
		}
		return appendIPv4(b, v)
	}
	var a [16]byte
	binary.BigEndian.PutUint64(a[:8], 0x2001_0db8_0000_0000|r.Uint64()&0xffff_ffff)
	binary.BigEndian.PutUint64(a[8:], r.Uint64())
	return netip.AddrFrom16(a).AppendTo(b)
}

func appendIPv4(b []byte, v uint32) []byte {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a).AppendTo(b)
}

// quantile is the q-quantile of sorted latencies.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func msStr(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
