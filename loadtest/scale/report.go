package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// row is one measured figure of a table.
type row struct {
	area, what, value, goal, met string
}

// table is everything measured at one size.
type table struct {
	n    int
	rows []row
	lat  []latency
	// raw is the run's log for this size, kept beside the table.
	raw strings.Builder
}

func (t *table) add(area, what, value, goal, met string) {
	t.rows = append(t.rows, row{area, what, value, goal, met})
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "never"
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// latencyGoal is the p95 goal for a kind of request, if any.
func latencyGoal(name string) time.Duration {
	switch {
	case strings.HasPrefix(name, "list"):
		return 5 * time.Millisecond
	case strings.HasPrefix(name, "article"), strings.HasPrefix(name, "markdown"):
		return 3 * time.Millisecond
	case strings.HasPrefix(name, "/ask"):
		return 15 * time.Millisecond
	}
	return 0
}

// String renders the table as markdown.
func (t *table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s articles\n\n", group(t.n))
	b.WriteString("| area | measurement | value | goal at 1M | met |\n|---|---|---|---|---|\n")
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.area, r.what, r.value, dash(r.goal), dash(r.met))
	}
	b.WriteString("\nCache misses at the origin, one request at a time:\n\n")
	b.WriteString("| request | n | failed | p50 ms | p95 ms | p99 ms | max ms | mean bytes | p95 goal | met |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range t.lat {
		goal, ok := "-", "-"
		if g := latencyGoal(l.name); g > 0 {
			goal = "≤ " + ms(g)
			ok = met(l.fails == 0 && l.p95 <= g)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %d | %s | %s |\n", l.name, l.n, l.fails, ms(l.p50), ms(l.p95), ms(l.p99), ms(l.max), l.bytes, goal, ok)
	}
	b.WriteString("\n")
	return b.String()
}

// growth compares the figures of two sizes: the larger's ÷ the smaller's.
func growth(small, large *table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Growth from %s to %s articles (×%.0f)\n\n", group(small.n), group(large.n), float64(large.n)/float64(small.n))
	b.WriteString("| measurement | " + group(small.n) + " | " + group(large.n) + " | ratio |\n|---|---|---|---|\n")
	for i, r := range large.rows {
		if i >= len(small.rows) || small.rows[i].what != r.what {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.what, small.rows[i].value, r.value, ratio(small.rows[i].value, r.value))
	}
	lat := map[string]latency{}
	for _, l := range small.lat {
		lat[l.name] = l
	}
	for _, l := range large.lat {
		s, ok := lat[l.name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s, p95 ms | %s | %s | %s |\n", l.name, ms(s.p95), ms(l.p95), ratio(ms(s.p95), ms(l.p95)))
	}
	b.WriteString("\n")
	return b.String()
}

// ratio divides two figures that carry the same unit.
func ratio(a, b string) string {
	x, ux := number(a)
	y, uy := number(b)
	if ux != uy || x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", y/x)
}

func number(s string) (float64, string) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, ""
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(f[0], ",", ""), 64)
	if err != nil {
		return 0, ""
	}
	unit := strings.Join(f[1:], " ")
	switch unit {
	case "s":
		return v * 1000, "ms"
	}
	return v, unit
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// group writes n with thousands separators.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
