package main

import (
	"fmt"
	"strings"
	"time"
)

// report is the run's figures and goals.
type report struct {
	quick                 bool
	loadBefore, loadAfter string
	quota                 quotaResult
	delays                []time.Duration
	failover              failoverResult
	kills                 killResult
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// table renders the figures as Markdown and says whether every goal is met.
func (r *report) table() (string, bool) {
	var b strings.Builder
	ok := true
	row := func(check, figure, goal string, met bool) {
		verdict := "met"
		if !met {
			verdict, ok = "MISSED", false
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", check, figure, goal, verdict)
	}
	mode := "full"
	if r.quick {
		mode = "quick (CLUSTER_QUICK=1)"
	}
	fmt.Fprintf(&b, "\nbench-cluster, %s run, %s; load average %s before, %s after\n\n", mode, time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.loadBefore, r.loadAfter)
	b.WriteString("| check | figure | goal | result |\n|---|---|---|---|\n")

	var adm []string
	for i, a := range r.quota.admitted {
		adm = append(adm, fmt.Sprintf("%d of %d", a, r.quota.sent[i]))
	}
	row("one client round-robin over 3 edges: admitted per window", strings.Join(adm, ", ")+fmt.Sprintf(" (worst %.1f%% of the quota %d)", 100*r.quota.worst(), r.quota.quota),
		"≤ +5% of the quota", r.quota.worst() <= 1.05)

	p50, p99, top := percentile(r.delays, 0.5), percentile(r.delays, 0.99), percentile(r.delays, 1)
	row(fmt.Sprintf("publish → new state on every edge (%d edge×publish)", len(r.delays)),
		fmt.Sprintf("p50 %s, p99 %s, max %s", ms(p50), ms(p99), ms(top)), "p99 ≤ 100 ms", len(r.delays) > 0 && p99 <= 100*time.Millisecond)

	f := r.failover
	window := "none"
	if f.errors > 0 {
		window = fmt.Sprintf("%s to %s after the kill", ms(f.firstErr), ms(f.lastErr))
	}
	row("Redis master "+f.killed+" killed: reads answered 5xx", fmt.Sprintf("%d of %d (by status %v; %d unanswered); window %s", f.errors, f.reads, f.statuses, f.unanswered, window),
		"every request answered; 5xx only while the slots move (< 10 s)", f.reads > 0 && f.unanswered == 0 && f.lastErr < 10*time.Second)
	row("… writes", fmt.Sprintf("%d acknowledged, %d attempts retried, longest stall %s", f.writes, f.writeRetries, ms(f.writeStall)),
		"writes resume", f.writes > 0)
	row("… acknowledged changes lost", fmt.Sprintf("%d of %d articles", len(f.lostContent), 10), "none", len(f.lostContent) == 0)
	row("… webhook deliveries", fmt.Sprintf("%d unique of %d (%d events × subscriptions)", f.deliveries, f.wantDeliveries, f.events),
		"every event to every subscription", f.deliveries >= f.wantDeliveries && f.wantDeliveries > 0)
	row("… each retraction to each subscription", fmt.Sprintf("%d of %d (retraction, subscription) pairs", f.retractionPairs, f.wantRetractionPairs),
		"every pair", f.retractionPairs == f.wantRetractionPairs && f.wantRetractionPairs > 0)
	row("… a publish after the failover reaches every edge", ms(f.recovered), "without restarts (< 10 s)", f.recovered < 10*time.Second)

	k := r.kills
	row("edge-0 and origin-0 killed: failures at edges 1 and 2", fmt.Sprintf("%d of %d (edge-0's own clients: %d failures)", k.othersErrors, k.others, k.killedErrors),
		"none", k.others > 0 && k.othersErrors == 0)
	return b.String(), ok
}
