package k8s

import (
	"fmt"
	"regexp"
	"slices"
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

// Redis memory beyond maxmemory (deploy/k8s/base/redis.conf explains each).
const (
	// redisCOWShare is the share of the data set a fork (AOF rewrite,
	// replica full sync) may copy on write while it runs.
	redisCOWShare = 0.5
	// redisFragmentation is the allocator's overhead over used_memory.
	redisFragmentation = 0.1
	// redisReplicaBufferDefault is Redis's own hard limit on a replica's
	// output buffer when redis.conf sets none (256mb).
	redisReplicaBufferDefault = 256 * mib
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

// redisBytes parses a redis.conf memory size (k = 1000, kb = 1024, m, mb,
// g, gb likewise; case-insensitive).
func redisBytes(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("not a size")
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	mult, ok := map[string]int64{"": 1, "k": 1e3, "kb": 1 << 10, "m": 1e6, "mb": 1 << 20, "g": 1e9, "gb": 1 << 30}[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", m[2])
	}
	return n * mult, nil
}

// redisConfig is the configuration a Redis container runs with: the file
// its command names, from the ConfigMap mounted there, then the --options
// of its command line, which override the file.
func redisConfig(t *testing.T, o *objects, p pod, c corev1.Container) map[string][]string {
	cmd := strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
	m := regexp.MustCompile(`redis-server\s+(\S+\.conf)`).FindStringSubmatch(cmd)
	if m == nil {
		t.Fatalf("%s/%s: redis-server is not started with a config file: %q", p.owner, c.Name, cmd)
	}
	file := ""
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(m[1], strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range p.spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				file = o.configMaps[v.ConfigMap.Name].Data[rel]
			}
		}
	}
	if file == "" {
		t.Fatalf("%s/%s: %s is not on a ConfigMap volume", p.owner, c.Name, m[1])
	}
	conf := map[string][]string{}
	for _, line := range strings.Split(file, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		key := strings.ToLower(f[0])
		if key == "client-output-buffer-limit" && len(f) > 1 {
			key += " " + f[1]
			f = f[1:]
		}
		conf[key] = f[1:]
	}
	for _, om := range regexp.MustCompile(`--([a-z-]+)((?:\s+[^-\s"$][^\s]*)*)`).FindAllStringSubmatch(cmd, -1) {
		key, vals := om[1], strings.Fields(om[2])
		if key == "client-output-buffer-limit" && len(vals) > 0 {
			key += " " + vals[0]
			vals = vals[1:]
		}
		if len(vals) > 0 {
			conf[key] = vals
		}
	}
	return conf
}

// TestRedisMemory: every Redis node has a maxmemory with noeviction, so a
// full node refuses writes instead of being OOM-killed, and maxmemory plus
// what Redis keeps beyond it (a fork's copy-on-write, a replica's output
// buffer, fragmentation; deploy/k8s/base/redis.conf) fits the container's
// memory limit.
func TestRedisMemory(t *testing.T) {
	root := repo.Root(t)
	for _, dir := range builds {
		t.Run(dir, func(t *testing.T) {
			o := build(t, root, dir)
			found := false
			for _, p := range o.pods {
				if component(p) != "redis" {
					continue
				}
				for _, c := range p.spec.Containers {
					if isRedisExporter(c) {
						continue
					}
					found = true
					checkRedisMemory(t, o, p, c)
				}
			}
			if !found {
				t.Fatal("no Redis container")
			}
		})
	}
}

func checkRedisMemory(t *testing.T, o *objects, p pod, c corev1.Container) {
	what := p.owner + "/" + c.Name
	conf := redisConfig(t, o, p, c)
	if pol := conf["maxmemory-policy"]; len(pol) != 1 || pol[0] != "noeviction" {
		t.Errorf("%s: maxmemory-policy %v, want noeviction (evicting would drop tokens and pending deliveries)", what, pol)
	}
	mm := conf["maxmemory"]
	if len(mm) != 1 {
		t.Errorf("%s: no maxmemory: noeviction never refuses a write, and the node grows until the OOM killer stops it", what)
		return
	}
	maxmemory, err := redisBytes(mm[0])
	if err != nil || maxmemory == 0 {
		t.Errorf("%s: maxmemory %q: want a size above 0 (%v)", what, mm[0], err)
		return
	}
	replicaBuf := int64(redisReplicaBufferDefault)
	if v := conf["client-output-buffer-limit replica"]; len(v) == 3 {
		if replicaBuf, err = redisBytes(v[0]); err != nil {
			t.Errorf("%s: client-output-buffer-limit replica %v: %v", what, v, err)
		}
	}
	lim, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok || lim.IsZero() {
		t.Errorf("%s: no memory limit", what)
		return
	}
	need := float64(maxmemory)*(1+redisCOWShare+redisFragmentation) + float64(replicaBuf)
	if need > float64(lim.Value()) {
		t.Errorf("%s: maxmemory %d MiB needs %.0f MiB with a fork's copy-on-write (%.0f %%), fragmentation (%.0f %%) and a replica's output buffer (%d MiB); the limit is %s",
			what, maxmemory/mib, need/mib, redisCOWShare*100, redisFragmentation*100, replicaBuf/mib, lim.String())
	}
}

// isRedisExporter reports whether c is the redis_exporter sidecar.
func isRedisExporter(c corev1.Container) bool { return strings.Contains(c.Image, "redis_exporter") }
