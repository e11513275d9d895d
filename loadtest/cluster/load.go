package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"
)

var client = &http.Client{
	Timeout: 10 * time.Second,
	Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, DisableCompression: true,
		// Every edge is its own host; a killed edge's connections must not
		// be reused.
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// randomClient is a fresh address, so background load never meets a quota.
func randomClient(r *rand.Rand) string {
	return netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), byte(r.IntN(256)), byte(1 + r.IntN(254))}).String()
}

// get requests path from edge as client (X-Forwarded-For; the edges trust
// loopback) and returns the status, or an error for a transport failure.
func get(ctx context.Context, edge, path, clientIP string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+edge+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Forwarded-For", clientIP)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func post(edge, path, token string, body any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+edge+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out, nil
}

// outcome is one request of a load.
type outcome struct {
	at     time.Time
	edge   int
	status int
	err    error
}

func (o outcome) failed() bool { return o.err != nil || o.status >= 500 }

// tally collects a load's outcomes.
type tally struct {
	mu  sync.Mutex
	out []outcome
}

func (t *tally) add(o outcome) {
	t.mu.Lock()
	t.out = append(t.out, o)
	t.mu.Unlock()
}

// failures returns the outcomes that failed among those of edges (all
// when edges is nil), sorted by time, and how many requests there were.
func (t *tally) failures(edges []int) ([]outcome, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var bad []outcome
	n := 0
	for _, o := range t.out {
		if edges != nil && !slices.Contains(edges, o.edge) {
			continue
		}
		n++
		if o.failed() {
			bad = append(bad, o)
		}
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].at.Before(bad[j].at) })
	return bad, n
}

// readLoad sends GETs of urls over the given edges from fresh clients,
// closed-loop on workers goroutines per edge, until ctx ends.
func readLoad(ctx context.Context, edges []string, which []int, urls []string, workers int, t *tally) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, e := range which {
		for w := range workers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(e), uint64(w)))
				for ctx.Err() == nil {
					status, _, err := get(ctx, edges[e], urls[r.IntN(len(urls))], randomClient(r))
					if ctx.Err() != nil {
						return
					}
					t.add(outcome{at: time.Now(), edge: e, status: status, err: err})
				}
			})
		}
	}
	return &wg
}

// percentile of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d)-1) * p)
	return d[i]
}
