package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/store"
)

// quotaResult is what one client spread over the edges got, window by
// window.
type quotaResult struct {
	quota    int64
	admitted []int64 // per window
	sent     []int64
}

// worst is the largest share of the quota admitted in one window.
func (q quotaResult) worst() float64 {
	w := 0.0
	for _, a := range q.admitted {
		w = max(w, float64(a)/float64(q.quota))
	}
	return w
}

// quotaOverEdges sends one client's requests round-robin over the edges,
// open-loop at twice its quota's rate, for windows whole windows, and
// counts what was admitted in each.
func (r *run) quotaOverEdges(ctx context.Context, quota int64, window time.Duration, windows int) quotaResult {
	// Start just after a window opens (windows are aligned on the epoch).
	now := time.Now()
	start := now.Truncate(window).Add(window)
	time.Sleep(time.Until(start))
	rate := 2 * float64(quota) / window.Seconds()
	res := quotaResult{quota: quota, admitted: make([]int64, windows), sent: make([]int64, windows)}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	interval := time.Duration(float64(time.Second) / rate)
	end := start.Add(time.Duration(windows) * window)
	slots := make(chan struct{}, 32)
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if !at.Before(end) {
			break
		}
		time.Sleep(time.Until(at))
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			status, _, err := get(ctx, r.st.edges[i%len(r.st.edges)], r.quotaPath, "203.0.113.77")
			w := int(at.Sub(start) / window)
			mu.Lock()
			res.sent[w]++
			if err == nil && status == 200 {
				res.admitted[w]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return res
}

// propagation publishes n changes to one article (retracted, restored,
// in turn) and measures, for every edge, how long after the publish
// returned the edge first answers with the new state.
func (r *run) propagation(ctx context.Context, slug string, n int) ([]time.Duration, error) {
	var delays []time.Duration
	path := "/api/v1/articles/" + slug
	var mu sync.Mutex
	for i := range n {
		retract := i%2 == 0
		// A publish that fails (Redis failing over) is tried again, for a
		// while.
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if retract {
				_, err = r.pub.Retract(ctx, slug, "cluster bench")
			} else {
				_, err = r.pub.Restore(ctx, slug)
			}
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			return delays, fmt.Errorf("cluster: publishing change %d: %w", i, err)
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		for e := range r.st.edges {
			wg.Go(func() {
				// A fresh client per request: the poll must never meet a
				// quota.
				rng := rand.New(rand.NewPCG(uint64(i), uint64(e)))
				want := http.StatusOK
				if retract {
					want = http.StatusGone
				}
				for time.Since(t0) < 10*time.Second {
					status, _, err := get(ctx, r.st.edges[e], path, randomClient(rng))
					if err == nil && status == want {
						mu.Lock()
						delays = append(delays, time.Since(t0))
						mu.Unlock()
						return
					}
				}
				fmt.Printf("cluster: edge-%d still answered the old state of %s 10 s after publish %d (retracted: %t); %s\n", e, slug, i, retract, r.diagnose(ctx, e, path))
				mu.Lock()
				delays = append(delays, 10*time.Second)
				mu.Unlock()
			})
		}
		wg.Wait()
		time.Sleep(50 * time.Millisecond)
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	return delays, nil
}

// failoverResult is what clients and writers saw while a Redis master was
// killed and its replica promoted.
type failoverResult struct {
	killed         string
	reads, errors  int
	unanswered     int // transport failures: no HTTP answer at all
	statuses       map[int]int
	firstErr       time.Duration // after the kill
	lastErr        time.Duration
	writes         int // acknowledged state changes
	writeRetries   int // failed attempts, retried
	writeStall     time.Duration
	lostContent    []string // articles whose state is not the last acknowledged
	events         int      // events acknowledged (their publishes returned one)
	deliveries     int      // unique (event, subscription) deliveries seen
	wantDeliveries int
	// retractions are the reasons of the acknowledged retractions, each
	// its own, so that each (retraction, subscription) pair is checked
	// rather than a count that late deliveries of earlier runs could fill.
	retractions         []string
	retractionPairs     int // of those pairs, the ones the receiver saw
	wantRetractionPairs int
	recovered           time.Duration // kill until a publish reached every edge again
}

// failover kills one Redis master with SIGKILL under read load over every
// edge and write load (retract/restore of slugs), lets its replica take
// over, and checks that nothing acknowledged was lost.
func (r *run) failover(ctx context.Context, slugs []string, probe string, before, after time.Duration) (failoverResult, error) {
	var res failoverResult
	base := r.receiverStats()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	reads := &tally{}
	all := []int{0, 1, 2}
	rwg := readLoad(lctx, r.st.edges, all, r.urls, 2, reads)

	// Writes: each slug in turn, retracted then restored; a failed attempt
	// is retried until it is acknowledged.
	state := map[string]bool{} // slug -> retracted, as last acknowledged
	var (
		wmu   sync.Mutex
		wwg   sync.WaitGroup
		stall time.Time
	)
	wctx, wstop := context.WithCancel(ctx)
	defer wstop()
	wwg.Go(func() {
		for i := 0; wctx.Err() == nil; i++ {
			slug := slugs[i%len(slugs)]
			retract := (i/len(slugs))%2 == 0
			for wctx.Err() == nil {
				var out store.Outcome
				var err error
				reason := "cluster failover " + strconv.Itoa(i)
				if retract {
					out, err = r.pub.Retract(wctx, slug, reason)
				} else {
					out, err = r.pub.Restore(wctx, slug)
				}
				wmu.Lock()
				if err == nil {
					res.writes++
					if out.Event != "" {
						res.events++
						if retract {
							res.retractions = append(res.retractions, reason)
						}
					}
					state[slug] = retract
					if !stall.IsZero() {
						res.writeStall = max(res.writeStall, time.Since(stall))
						stall = time.Time{}
					}
					wmu.Unlock()
					break
				}
				res.writeRetries++
				if stall.IsZero() {
					stall = time.Now()
				}
				wmu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	time.Sleep(before)
	m := r.st.master()
	if m < 0 {
		return res, fmt.Errorf("cluster: no master found")
	}
	res.killed = r.st.redis[m]
	kill := time.Now()
	r.st.kill("redis-" + strconv.Itoa(m))
	fmt.Printf("cluster: killed Redis master %s (SIGKILL)\n", res.killed)
	if err := r.st.waitClusterOK(60 * time.Second); err != nil {
		return res, fmt.Errorf("cluster: the replica did not take over: %w", err)
	}
	fmt.Printf("cluster: cluster_state ok again %s after the kill\n", time.Since(kill).Round(time.Millisecond))
	time.Sleep(after)
	wstop()
	wwg.Wait()

	// Recovery: a publish reaches every edge again, no restart.
	d, err := r.propagation(ctx, probe, 2)
	if err != nil {
		return res, err
	}
	res.recovered = d[len(d)-1]
	stop()
	rwg.Wait()

	bad, n := reads.failures(nil)
	res.reads, res.errors = n, len(bad)
	res.statuses = map[int]int{}
	for _, o := range bad {
		if o.err != nil {
			res.unanswered++
		} else {
			res.statuses[o.status]++
		}
	}
	if len(bad) > 0 {
		res.firstErr, res.lastErr = bad[0].at.Sub(kill), bad[len(bad)-1].at.Sub(kill)
	}
	// Content: every article in the state last acknowledged.
	st := store.New(r.rdb)
	for slug, retracted := range state {
		a, err := st.Article(ctx, slug)
		if err != nil || a.Retracted() != retracted {
			res.lostContent = append(res.lostContent, slug)
		}
	}
	// Events: every acknowledged event delivered to every subscription
	// (at least once; a retried write may have emitted one more).
	res.wantDeliveries = res.events * r.subscriptions
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := r.receiverStats()
		res.deliveries = got.Unique - base.Unique
		seen := r.receiverEvents()
		res.retractionPairs = 0
		for _, reason := range res.retractions {
			for i := range r.subscriptions {
				if seen[fmt.Sprintf("/hook/%d %s %s", i, events.ArticleRetracted, reason)] {
					res.retractionPairs++
				}
			}
		}
		res.wantRetractionPairs = len(res.retractions) * r.subscriptions
		complete := res.retractionPairs == res.wantRetractionPairs
		if (res.deliveries >= res.wantDeliveries && complete) || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return res, nil
}

// killResult is what clients of the surviving edges saw when an edge and
// an origin were killed.
type killResult struct {
	others, othersErrors int // requests to the surviving edges, and failures
	killedErrors         int // failures of the killed edge's clients
}

// processKills kills edge 0 and origin 0 with SIGKILL under read load on
// every edge.
func (r *run) processKills(ctx context.Context, before, after time.Duration) killResult {
	lctx, stop := context.WithCancel(ctx)
	reads := &tally{}
	wg := readLoad(lctx, r.st.edges, []int{0, 1, 2}, r.urls, 2, reads)
	time.Sleep(before)
	r.st.kill("edge-0")
	r.st.kill("origin-0")
	fmt.Println("cluster: killed edge-0 and origin-0 (SIGKILL)")
	time.Sleep(after)
	stop()
	wg.Wait()
	var res killResult
	bad, n := reads.failures([]int{1, 2})
	res.others, res.othersErrors = n, len(bad)
	badKilled, _ := reads.failures([]int{0})
	res.killedErrors = len(badKilled)
	for i, o := range bad {
		if i == 5 {
			break
		}
		fmt.Printf("cluster: edge-%d failed: status %d %v\n", o.edge, o.status, o.err)
	}
	return res
}

// diagnose says what the edge and each origin answer for path, for the
// message of a publish that did not reach an edge.
func (r *run) diagnose(ctx context.Context, e int, path string) string {
	var b strings.Builder
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.st.edges[e]+path, nil)
	req.Header.Set("X-Forwarded-For", "198.18.255.1")
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		fmt.Fprintf(&b, "edge: %d Cache-Status %q Age %q", resp.StatusCode, resp.Header.Get("Cache-Status"), resp.Header.Get("Age"))
	}
	for i, o := range r.st.origins {
		if resp, err := client.Get("http://" + o + path); err == nil {
			resp.Body.Close()
			fmt.Fprintf(&b, "; origin-%d: %d", i, resp.StatusCode)
		}
	}
	return b.String()
}
