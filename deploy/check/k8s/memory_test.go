package k8s

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

const mib = 1 << 20

// goMemLimitShare is the most of a container's memory limit the Go
// collector may target: the rest is for what the runtime does not count
// (the binary's code and data, thread stacks, the kernel's page cache
// charged to the cgroup), so the collector works hard before the OOM
// killer acts. Caddy sets the same 90 % for the edge when GOMEMLIMIT is
// unset.
const goMemLimitShare = 0.9

// askIndexLive is the origin's live heap besides its response cache at a
// million articles: the ask index and the strings it keeps (docs/scale.md,
// "ask index at a million articles": 478 MB live after a collection).
const askIndexLive = 480 * mib

// Edge memory: caddymodules/internal/memorybudget and docs/edge-gateway.md,
// "Memory": 142 MiB + each cache's max_bytes × 33/32 + 1.6 MiB + each
// limiter's max_clients × 128 B.
const (
	edgeBase           = 142 * mib
	edgeCacheOverhead  = 1.6 * mib
	edgeBytesPerClient = 128
)

// TestGoMemoryLimits: every Invoicewire container has a memory limit; its
// GOMEMLIMIT is an explicit value at most 90 % of it (a resourceFieldRef
// gives the whole limit; only the edge may leave it unset, sizing itself);
// and what each process keeps live fits: the origin's cache and ask index
// in half its target (the collector's usual room, GOGC 100), the edge's
// cache and limiter in 90 % of its limit.
func TestGoMemoryLimits(t *testing.T) {
	root := repo.Root(t)
	for _, dir := range builds {
		t.Run(dir, func(t *testing.T) {
			o := build(t, root, dir)
			for _, p := range o.pods {
				if !strings.HasPrefix(p.owner, "Deployment/") {
					continue
				}
				for _, c := range p.spec.Containers {
					if !strings.Contains(c.Image, "invoicewire") {
						continue
					}
					checkGoMemory(t, o, p, c)
				}
			}
		})
	}
}

func checkGoMemory(t *testing.T, o *objects, p pod, c corev1.Container) {
	what := p.owner + "/" + c.Name
	lim, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok || lim.IsZero() {
		t.Errorf("%s: no memory limit", what)
		return
	}
	limit := float64(lim.Value())
	ceiling := goMemLimitShare * limit
	var goLimit float64
	set := false
	for _, e := range c.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		set = true
		if e.ValueFrom != nil {
			t.Errorf("%s: GOMEMLIMIT from a field reference is the whole limit, leaving the runtime no headroom; set 90 %% of it", what)
			return
		}
		n, err := goBytes(e.Value)
		if err != nil {
			t.Errorf("%s: GOMEMLIMIT=%q: %v", what, e.Value, err)
			return
		}
		goLimit = float64(n)
	}
	comp := component(p)
	switch {
	case !set && comp != "edge":
		t.Errorf("%s: no GOMEMLIMIT: the collector would not know the %s limit", what, lim.String())
		return
	case set && goLimit > ceiling:
		t.Errorf("%s: GOMEMLIMIT is %.0f MiB, above 90 %% of the %s limit (%.0f MiB)", what, goLimit/mib, lim.String(), ceiling/mib)
	case !set:
		goLimit = ceiling // Caddy's own 90 %
	}
	switch comp {
	case "origin":
		cache := envBytes(t, o, c, "IW_ORIGIN_CACHE_BYTES", 64*mib)
		if live := float64(cache + askIndexLive); live > goLimit/2 {
			t.Errorf("%s: IW_ORIGIN_CACHE_BYTES %d MiB + the ask index's %d MiB need a GOMEMLIMIT of at least %.0f MiB (twice what is live), it is %.0f MiB",
				what, cache/mib, askIndexLive/mib, 2*live/mib, goLimit/mib)
		}
	case "edge":
		cache := envBytes(t, o, c, "IW_EDGE_CACHE_BYTES", 192*mib)
		clients := envBytes(t, o, c, "IW_RATELIMIT_MAX_CLIENTS", 1_000_000)
		need := edgeBase + float64(cache)*33/32 + edgeCacheOverhead + float64(clients*edgeBytesPerClient)
		if need > goLimit {
			t.Errorf("%s: the edge's cache (%d MiB) and limiter (%d clients) need a soft limit of %.0f MiB, above %.0f MiB (90 %% of the %s limit)",
				what, cache/mib, clients, need/mib, goLimit/mib, lim.String())
		}
	}
}

// envBytes is a size the container's environment sets, or def.
func envBytes(t *testing.T, o *objects, c corev1.Container, name string, def int64) int64 {
	v, ok := env(o, c, name)
	if !ok || v == "" {
		return def
	}
	n, err := goBytes(v)
	if err != nil {
		t.Errorf("%s=%q: %v", name, v, err)
		return def
	}
	return n
}

var sizeRe = regexp.MustCompile(`^(\d+)\s*([A-Za-z]*)$`)

// goBytes parses a size as GOMEMLIMIT and the IW_*_BYTES variables write
// it: a plain number of bytes, or with a B, KiB, MiB, GiB (or KB, MB, GB)
// suffix.
func goBytes(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("not a size")
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m[2]]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q", m[2])
	}
	return n * mult, nil
}
