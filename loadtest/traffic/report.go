package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// report is one run's figures.
type report struct {
	n, urls, conns        int
	loadBefore, loadAfter string
	ref, res              *result
	refRSS, rss           int64
	gcPause, gcMax        time.Duration
	gcCount               int64
	originCPU             time.Duration
	// hot is the traffic's hot set alone.
	hot            *result
	heap, memLimit float64
	// fieldSets is how many sets of fields the edge cache keeps once.
	fieldSets float64
	// outcomes are the edge cache's outcomes in the traffic phase, in
	// the order of cacheOutcomes.
	outcomes          []float64
	counters, content redisStats
	counterKeys       int64
	counterMemory     string
	// open are the open-loop phases, by increasing load.
	open []openLoop
}

// openLoop is both mixes sent open-loop at rate requests/s: load of the
// traffic phase's rate.
type openLoop struct {
	load, rate float64
	ref, res   *result
}

func rate(r *result) float64 { return float64(r.requests) / r.wall.Seconds() }

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// String is the table: the goals of issue 21 beside what was measured.
func (p *report) String() string {
	var b strings.Builder
	secs := p.res.wall.Seconds()
	ratio := rate(p.res) / rate(p.ref)
	p99 := quantile(p.res.latencies, 0.99)
	hit := 0.0
	if p.res.hotTotal > 0 {
		hit = float64(p.res.hotHits) / float64(p.res.hotTotal)
	}
	fmt.Fprintf(&b, "\n## make bench-traffic (%s, %d articles, %d URLs, %d connections)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), p.n, p.urls, p.conns)
	fmt.Fprintf(&b, "Load average before %s, after %s (1, 5, 15 min; the machine is shared).\n\n", p.loadBefore, p.loadAfter)
	b.WriteString("| what | single URL | traffic | goal | met |\n|---|---|---|---|---|\n")
	row := func(what, ref, got, goal, ok string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", what, ref, got, goal, ok)
	}
	row("requests/s", fmt.Sprintf("%.0f", rate(p.ref)), fmt.Sprintf("%.0f (%.2f×)", rate(p.res), ratio), "≥ 0.9× single URL", met(ratio >= 0.9))
	row("p50 ms", msStr(quantile(p.ref.latencies, 0.5)), msStr(quantile(p.res.latencies, 0.5)), "", "")
	row("p99 ms", msStr(quantile(p.ref.latencies, 0.99)), msStr(p99), "≤ 10", met(p99 <= 10*time.Millisecond))
	row("p99.9 ms", msStr(quantile(p.ref.latencies, 0.999)), msStr(quantile(p.res.latencies, 0.999)), "", "")
	for _, o := range p.open {
		p99 := quantile(o.res.latencies, 0.99)
		row(fmt.Sprintf("open loop at %.0f requests/s (%.0f%% of the traffic's): requests/s answered", o.rate, 100*o.load),
			fmt.Sprintf("%.0f", rate(o.ref)), fmt.Sprintf("%.0f", rate(o.res)), "", "")
		row(fmt.Sprintf("… at %.0f%%: p50 / p99 / p99.9 ms", 100*o.load), quantiles(o.ref.latencies), quantiles(o.res.latencies), "p99 ≤ 10", met(p99 <= 10*time.Millisecond))
		row(fmt.Sprintf("… at %.0f%%: the same from when sent", 100*o.load), quantiles(o.ref.fromSend), quantiles(o.res.fromSend), "", "")
		row(fmt.Sprintf("… at %.0f%%: the generator's own lag behind schedule (connection free)", 100*o.load), quantiles(o.ref.wakeLags), quantiles(o.res.wakeLags), "", "")
		row(fmt.Sprintf("… at %.0f%%: ms a second the edge's busiest thread waited for a CPU / its core went to interrupts and the hypervisor / the generator's busiest thread waited", 100*o.load),
			takenAway(o.ref), takenAway(o.res), "", "")
		// Per kind at every load: which requests make the p99 (the origin
		// answers the forwarded ones and /ask, on the generator's core).
		for _, k := range []struct {
			what string
			kind int
		}{{"hits", kindHit}, {"forwarded GETs", kindForwarded}, {"POST /ask", kindAsk}} {
			row(fmt.Sprintf("… at %.0f%%: p50 / p99 / p99.9 ms, %s alone", 100*o.load, k.what), quantiles(o.ref.byKind[k.kind]), quantiles(o.res.byKind[k.kind]), "", "")
		}
	}
	row("edge peak RSS MiB", fmt.Sprint(p.refRSS/mib), fmt.Sprint(p.rss/mib), "≤ 512", met(p.rss <= 512*mib))
	row("hit ratio, hot set (100 URLs)", "", fmt.Sprintf("%.2f%%", 100*hit), "≥ 99%", met(hit >= 0.99))
	all := 0.0
	if p.res.cacheable > 0 {
		all = float64(p.res.hits) / float64(p.res.cacheable)
	}
	row("hit ratio, every GET (long tail included)", "", fmt.Sprintf("%.2f%%", 100*all), "", "")
	refSecs := p.ref.wall.Seconds()
	row("edge CPU (share of its core)", fmt.Sprintf("%.0f%%", 100*p.ref.edgeCPU.Seconds()/refSecs), fmt.Sprintf("%.0f%%", 100*p.res.edgeCPU.Seconds()/secs), "", "")
	row("edge CPU per request µs", perRequest(p.ref.edgeCPU, p.ref), perRequest(p.res.edgeCPU, p.res), "", "")
	row("bytes a response (status line, fields and body)", perResponse(p.ref), perResponse(p.res), "", "")
	// Requests per second of edge CPU: what one core would serve with
	// the edge saturating it. On a shared machine the edge rarely gets
	// its whole core, so this is the ratio that compares the two phases
	// fairly; requests/s above is what this run's core time allowed.
	refPerCPU, perCPU := perCPUSecond(p.ref.edgeCPU, p.ref), perCPUSecond(p.res.edgeCPU, p.res)
	cpuRatio := ratioOf(perCPU, refPerCPU)
	row("requests per edge CPU-second", fmt.Sprintf("%.0f", refPerCPU), fmt.Sprintf("%.0f (%.2f×)", perCPU, cpuRatio), "≥ 0.9× single URL", met(cpuRatio >= 0.9))
	hotPerCPU := perCPUSecond(p.hot.edgeCPU, p.hot)
	row("… the traffic's hot set alone (all hits, no /ask): requests per edge CPU-second, µs a request, bytes a response", "",
		fmt.Sprintf("%.0f (%.2f×), %s µs, %s B", hotPerCPU, ratioOf(hotPerCPU, refPerCPU), perRequest(p.hot.edgeCPU, p.hot), perResponse(p.hot)), "", "")
	row("origin CPU (share of the other core)", "", fmt.Sprintf("%.0f%%", 100*p.originCPU.Seconds()/secs), "", "")
	row("generator CPU (share of the other core), per request µs", fmt.Sprintf("%.0f%%, %s", 100*p.ref.cpu.Seconds()/refSecs, perRequest(p.ref.cpu, p.ref)),
		fmt.Sprintf("%.0f%%, %s", 100*p.res.cpu.Seconds()/secs, perRequest(p.res.cpu, p.res)), "", "")
	row("edge Go heap in use at end, memory limit MiB", "", fmt.Sprintf("%.0f, %.0f", p.heap/mib, p.memLimit/mib), "", "")
	row("edge cache: sets of fields stored once, at end", "", fmt.Sprintf("%.0f", p.fieldSets), "", "")
	row("edge cache outcomes in the traffic phase, share of its requests", "", p.outcomeShares(), "", "")
	row("distinct clients / minute", "65,536 in turn", fmt.Sprintf("%.0f", float64(p.res.distinctClients)/secs*60), "~1,000,000", "")
	row("edge GC pause total (count, max)", "", fmt.Sprintf("%s (%d, max %s)", p.gcPause.Round(time.Microsecond), p.gcCount, p.gcMax.Round(time.Microsecond)), "", "")
	row("edge GC pause share of wall time", "", fmt.Sprintf("%.2f%%", 100*p.gcPause.Seconds()/secs), "", "")
	row("counters Redis commands/s", "", fmt.Sprintf("%.0f", float64(p.counters.commands)/secs), "", "")
	row("counters Redis bytes/s in + out", "", fmt.Sprintf("%.0f + %.0f", float64(p.counters.netIn)/secs, float64(p.counters.netOut)/secs), "", "")
	row("counters Redis keys, memory at end", "", fmt.Sprintf("%d, %s", p.counterKeys, p.counterMemory), "", "")
	row("content Redis commands/s", "", fmt.Sprintf("%.0f", float64(p.content.commands)/secs), "", "")
	row("errors (transport)", fmt.Sprint(p.ref.errors), fmt.Sprint(p.res.errors), "0", met(p.res.errors == 0))
	row("429 to the 3 clients at 2× quota", "", fmt.Sprint(p.res.heavyLimited), "> 0", met(p.res.heavyLimited > 0))
	row("304 to conditional requests", "", fmt.Sprint(p.res.conditional304), "", "")
	row("POST /ask answered 200", "", fmt.Sprint(p.res.askOK), "", "")
	return b.String()
}

// takenAway is r's edgeWait, edgeCoreTaken and loadWait in ms per second
// of the phase.
func takenAway(r *result) string {
	perSecond := func(d time.Duration) string {
		return fmt.Sprintf("%.1f", float64(d.Microseconds())/1e3/r.wall.Seconds())
	}
	return perSecond(r.edgeWait) + " / " + perSecond(r.edgeCoreTaken) + " / " + perSecond(r.loadWait)
}

func quantiles(l []time.Duration) string {
	return msStr(quantile(l, 0.5)) + " / " + msStr(quantile(l, 0.99)) + " / " + msStr(quantile(l, 0.999))
}

// ratioOf is a / b, or 0 when b is (a phase that measured nothing).
func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func perCPUSecond(cpu time.Duration, r *result) float64 {
	if cpu <= 0 {
		return 0
	}
	return float64(r.requests) / cpu.Seconds()
}

func perResponse(r *result) string {
	if r.requests == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f", float64(r.received)/float64(r.requests))
}

func perRequest(cpu time.Duration, r *result) string {
	if r.requests == 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f", float64(cpu.Microseconds())/float64(r.requests))
}

// raw is every status count and latency quantile, for loadtest/out.
func (p *report) raw() string {
	var b strings.Builder
	for _, ph := range []struct {
		name string
		r    *result
	}{{"single URL", p.ref}, {"hot set alone", p.hot}, {"traffic", p.res}} {
		fmt.Fprintf(&b, "%s: %d requests in %s, %d transport errors\n", ph.name, ph.r.requests, ph.r.wall.Round(time.Millisecond), ph.r.errors)
		codes := make([]int, 0, len(ph.r.byStatus))
		for c := range ph.r.byStatus {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		for _, c := range codes {
			fmt.Fprintf(&b, "  status %d: %d\n", c, ph.r.byStatus[c])
		}
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			fmt.Fprintf(&b, "  latency q%g: %s ms\n", q, msStr(quantile(ph.r.latencies, q)))
		}
	}
	for _, o := range p.open {
		for _, ph := range []struct {
			name string
			r    *result
		}{{"single URL", o.ref}, {"traffic", o.res}} {
			fmt.Fprintf(&b, "%s, open loop at %.0f%% (%.0f requests/s): %d requests in %s, %d transport errors; edge waited for a CPU %s, its core taken away %s, generator waited %s\n",
				ph.name, 100*o.load, o.rate, ph.r.requests, ph.r.wall.Round(time.Millisecond), ph.r.errors, ph.r.edgeWait, ph.r.edgeCoreTaken, ph.r.loadWait)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
				fmt.Fprintf(&b, "  latency q%g: %s ms (from when sent: %s ms; generator's lag: %s ms)\n", q,
					msStr(quantile(ph.r.latencies, q)), msStr(quantile(ph.r.fromSend, q)), msStr(quantile(ph.r.wakeLags, q)))
			}
		}
	}
	fmt.Fprintf(&b, "counters Redis: %+v\ncontent Redis: %+v\n", p.counters, p.content)
	return b.String()
}

// outcomeShares lists the edge cache's outcomes of the traffic phase that
// happened, each as a share of the requests the cache saw.
func (p *report) outcomeShares() string {
	var total float64
	for _, n := range p.outcomes {
		total += n
	}
	if total == 0 {
		return "none read"
	}
	var parts []string
	for i, n := range p.outcomes {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f%%", cacheOutcomes[i], 100*n/total))
		}
	}
	return strings.Join(parts, ", ")
}
