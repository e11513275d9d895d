package main

import (
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
}

var encodings = []string{"zstd", "br", "gzip, deflate", "identity", "zstd, br, gzip", "gzip"}

// run sends the mix over conns keep-alive connections to base for d.
func run(ctx context.Context, base string, m *mix, conns int, d time.Duration, seed uint64) *result {
	tr := &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		mu    sync.Mutex
		total = &result{byStatus: map[int]int64{}}
		etags sync.Map // url → ETag seen
		wg    sync.WaitGroup
		turn  atomic.Int64
	)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t0 := time.Now()
	for w := range conns {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			var zipf *rand.Zipf
			if len(m.urls) > 1 {
				zipf = rand.NewZipf(r, m.zipfS, 1, uint64(len(m.urls)-1))
			}
			local := &result{byStatus: map[int]int64{}, latencies: make([]time.Duration, 0, 1<<16)}
			for ctx.Err() == nil {
				idx := 0
				if zipf != nil {
					idx = int(zipf.Uint64())
				}
				u := m.urls[idx]
				method, body := http.MethodGet, ""
				x := r.Float64()
				isAsk := x < m.ask && len(m.askBodies) > 0
				if isAsk {
					method, body, u = http.MethodPost, m.askBodies[r.IntN(len(m.askBodies))], "/ask"
				}
				var rd io.Reader
				if body != "" {
					rd = strings.NewReader(body)
				}
				req, _ := http.NewRequestWithContext(ctx, method, base+u, rd)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				enc := encodings[r.IntN(len(encodings))]
				req.Header.Set("Accept-Encoding", enc)
				switch {
				case m.fixedClients > 0:
					req.Header.Set("X-Forwarded-For", ipv4(uint32(0x0a000000+turn.Add(1)%int64(m.fixedClients))))
				default:
					req.Header.Set("X-Forwarded-For", freshClient(r))
					local.distinctClients++
				}
				cond := !isAsk && x >= m.ask && x < m.ask+m.conditional
				if cond {
					if et, ok := etags.Load(enc + u); ok {
						req.Header.Set("If-None-Match", et.(string))
					} else {
						cond = false
					}
				}
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						local.errors++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				local.latencies = append(local.latencies, time.Since(start))
				local.requests++
				local.byStatus[resp.StatusCode]++
				switch {
				case isAsk:
					if resp.StatusCode == 200 {
						local.askOK++
					}
				case cond && resp.StatusCode == http.StatusNotModified:
					local.conditional304++
				}
				if !isAsk && !cond {
					local.cacheable++
					if strings.Contains(resp.Header.Get("Cache-Status"), "; hit") {
						local.hits++
					}
				}
				if !isAsk && resp.StatusCode == 200 {
					if et := resp.Header.Get("ETag"); et != "" {
						etags.LoadOrStore(enc+u, et)
					}
					if idx < m.hot && !cond {
						local.hotTotal++
						if strings.Contains(resp.Header.Get("Cache-Status"), "; hit") {
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
	for _, addr := range m.heavy {
		wg.Go(func() {
			t := time.NewTicker(time.Duration(float64(time.Second) / m.heavyRate))
			defer t.Stop()
			hc := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
			var limited int64
			for {
				select {
				case <-ctx.Done():
					atomic.AddInt64(&total.heavyLimited, limited)
					return
				case <-t.C:
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+m.urls[0], nil)
				req.Header.Set("X-Forwarded-For", addr)
				if resp, err := hc.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests {
						limited++
					}
				}
			}
		})
	}
	wg.Wait()
	total.wall = time.Since(t0)
	slices.Sort(total.latencies)
	return total
}

// freshClient is a random client address: IPv4 half the time, else an
// address in a random IPv6 /64 (the limiter keys IPv6 clients by /64).
func freshClient(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return ipv4(r.Uint32())
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], 0x2001_0db8_0000_0000|r.Uint64()&0xffff_ffff)
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	return netip.AddrFrom16(b).String()
}

func ipv4(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
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
