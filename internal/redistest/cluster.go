package redistest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a local Redis Cluster of three masters (no replicas), each a
// real redis-server on a free loopback port, created with
// `redis-cli --cluster create` as an operator would.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// StartCluster starts three cluster-enabled servers, joins them into one
// cluster covering all 16384 slots and waits until it reports ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for range 3 {
		c.Nodes = append(c.Nodes, Start(t, "cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000"))
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		for {
			info, err := cl.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("redistest: cluster node %s not ok within 20s: %v %s", n.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
	return c
}

// Addrs lists the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}

// URL is the cluster as an IW_REDIS_URL value.
func (c *Cluster) URL() string { return "redis+cluster://" + strings.Join(c.Addrs(), ",") }

// Client returns a new cluster client, closed at cleanup.
func (c *Cluster) Client() *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}
