package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
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

// result is what the load saw.
type result struct {
	requests, errors      int64
	byStatus              map[int]int64
	latencies             []time.Duration
	hotHits, hotTotal     int64
	hits, cacheable       int64
	distinctClients       int64
	heavyLimited          int64
	wall                  time.Duration
	conditional304, askOK int64
	// cpu is the CPU time this process (the generator) used meanwhile.
	cpu time.Duration
}

var encodings = []string{"zstd", "br", "gzip, deflate", "identity", "zstd, br, gzip", "gzip"}

// conn is one keep-alive HTTP/1.1 connection of the generator. Requests
// are written from a reused buffer and responses read with
// http.ReadResponse: net/http's client costs several times more CPU and
// allocations per request, which made the generator, not the edge, the
// limit (docs/edge-gateway.md, "Traffic").
type conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	req  []byte
}

func (k *conn) close() {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// do sends the request in k.req and reads the answer's status, the fields
// the report uses, and the whole body.
func (k *conn) do() (status int, cacheStatus, etag string, err error) {
	if k.c == nil {
		c, err := net.DialTimeout("tcp", k.addr, 5*time.Second)
		if err != nil {
			return 0, "", "", err
		}
		k.c, k.br = c, bufio.NewReaderSize(c, 32<<10)
	}
	k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := k.c.Write(k.req); err != nil {
		k.close()
		return 0, "", "", err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		k.close()
		return 0, "", "", err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.Close {
		k.close()
	}
	return resp.StatusCode, first(resp.Header["Cache-Status"]), first(resp.Header["Etag"]), err
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// run sends the mix over conns keep-alive connections to addr for d.
func run(ctx context.Context, addr string, m *mix, conns int, d time.Duration, seed uint64) *result {
	var (
		mu    sync.Mutex
		total = &result{byStatus: map[int]int64{}}
		wg    sync.WaitGroup
		turn  atomic.Int64
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
			local := &result{byStatus: map[int]int64{}, latencies: make([]time.Duration, 0, 1<<16)}
			for ctx.Err() == nil {
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
				start := time.Now()
				status, cs, et, err := k.do()
				if err != nil {
					if ctx.Err() == nil {
						local.errors++
					}
					continue
				}
				local.latencies = append(local.latencies, time.Since(start))
				local.requests++
				local.byStatus[status]++
				hit := strings.Contains(cs, "; hit")
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
					if et != "" {
						slot := &m.etags[idx*len(encodings)+ei]
						if old := slot.Load(); old == nil || *old != et {
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
				if status, _, _, err := k.do(); err == nil && status == http.StatusTooManyRequests {
					limited++
				}
			}
		})
	}
	wg.Wait()
	total.wall = time.Since(t0)
	total.cpu = processCPU() - cpu0
	slices.Sort(total.latencies)
	return total
}

// appendFreshClient appends a random client address: IPv4 half the time,
// else an address in a random IPv6 /64 (the limiter keys IPv6 clients by
// /64).
func appendFreshClient(b []byte, r *rand.Rand) []byte {
	if r.IntN(2) == 0 {
		return appendIPv4(b, r.Uint32())
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
