package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/freeport"
)

// Cluster is a local Redis Cluster of three masters (no replicas), each a
// real redis-server on a free loopback port, created with
// `redis-cli --cluster create` as an operator would.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// clusterTimeout bounds how long a cluster may take to report ok after it
// is created or restarted.
const clusterTimeout = 30 * time.Second

// StartCluster starts three cluster-enabled servers, joins them into one
// cluster covering all 16384 slots and waits until every node reports
// cluster_state:ok.
//
// The cost is dominated by Redis itself: a master does not declare the
// cluster ok within two seconds of its start (CLUSTER_WRITABLE_DELAY), and
// redis-cli waits a second for the nodes to agree. So the nodes start in
// parallel and the clock of that delay runs while redis-cli works; and in
// make test's cluster pass the next test's cluster is made while this one
// runs (spareDir).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	var c *Cluster
	var err error
	if spareDir != "" {
		c, err = takeSpare()
	} else {
		c, err = launchCluster(func() (string, error) { return t.TempDir(), nil })
	}
	if err != nil {
		t.Fatal(err)
	}
	c.t = t
	for _, n := range c.Nodes {
		n.t = t
	}
	t.Cleanup(func() {
		c.Stop()
		for _, n := range c.Nodes {
			os.RemoveAll(n.dir) // a spare's; the test's own TempDir goes anyway
		}
	})
	return c
}

// launchCluster starts a cluster whose nodes keep their data in
// directories from mkdir. On an error it stops what it started.
func launchCluster(mkdir func() (string, error)) (*Cluster, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: redis-server not found on PATH (make test installs it): %w", err)
	}
	// Each node needs a client port and a cluster bus port. The bus port
	// is chosen too (cluster-port) rather than left at port+10000, which
	// may be taken or, above 55535, not exist.
	ports, err := freeport.Find(6)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := range 3 {
		dir, err := mkdir()
		if err != nil {
			return nil, fmt.Errorf("redistest: a cluster node's directory: %w", err)
		}
		c.Nodes = append(c.Nodes, &Server{dir: dir, port: ports[2*i], args: serverArgs(bin, dir, ports[2*i], []string{
			"cluster-enabled yes",
			"cluster-config-file nodes.conf",
			"cluster-node-timeout 2000",
			"cluster-port " + strconv.Itoa(ports[2*i+1]),
		})})
	}
	err = c.each(func(n *Server) error { return n.launch() })
	if err == nil {
		args := []string{"--cluster", "create"}
		args = append(args, c.Addrs()...)
		args = append(args, "--cluster-replicas", "0", "--cluster-yes")
		if out, cerr := exec.Command("redis-cli", args...).CombinedOutput(); cerr != nil {
			err = fmt.Errorf("redistest: redis-cli --cluster create: %w\n%s", cerr, out)
		}
	}
	if err == nil {
		err = c.waitOK()
	}
	if err != nil {
		c.Kill()
		return nil, err
	}
	return c, nil
}

// spareDir, set by deploy/local/cluster-pass.sh (IW_REDISTEST_SPARE_DIR),
// makes StartCluster hand each test a cluster started while the test
// before it ran, and start the next one: the pass starts two hundred
// clusters of two seconds each. The spares' data lives under spareDir,
// which the script removes, since the last spare of a test binary is
// never taken; its servers end with the binary (procAttr).
var spareDir = os.Getenv("IW_REDISTEST_SPARE_DIR")

// spare is the cluster being made for the next StartCluster.
var spare struct {
	mu   sync.Mutex
	next chan spareCluster
}

type spareCluster struct {
	c   *Cluster
	err error
}

// takeSpare returns the spare cluster, waiting for it if it is still
// starting (or starting it, the first time), and starts the next.
func takeSpare() (*Cluster, error) {
	spare.mu.Lock()
	ch := spare.next
	if ch == nil {
		ch = makeSpare()
	}
	spare.next = makeSpare()
	spare.mu.Unlock()
	s := <-ch
	return s.c, s.err
}

func makeSpare() chan spareCluster {
	ch := make(chan spareCluster, 1)
	go func() {
		c, err := launchCluster(func() (string, error) { return os.MkdirTemp(spareDir, "node-") })
		ch <- spareCluster{c, err}
	}()
	return ch
}

// each runs f on every node at once and joins the errors.
func (c *Cluster) each(f func(n *Server) error) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() { errs[i] = f(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitOK waits until every node reports cluster_state:ok.
func (c *Cluster) waitOK() error {
	deadline := time.Now().Add(clusterTimeout)
	return c.each(func(n *Server) error {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		defer cl.Close()
		for {
			info, err := cl.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redistest: cluster node %s not ok within %v: %v %s", n.Addr(), clusterTimeout, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
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
func (c *Cluster) Client() redis.UniversalClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// Stop shuts every node down gracefully. It is safe to call twice.
func (c *Cluster) Stop() { c.each(func(n *Server) error { n.Stop(); return nil }) }

// Kill ends every node with SIGKILL, as a crash (or a power cut) would.
func (c *Cluster) Kill() { c.each(func(n *Server) error { n.Kill(); return nil }) }

// Restart stops every node (with SIGKILL when crash is true), starts each
// again on its ports and data directory, where nodes.conf holds the
// cluster's layout, and waits until the cluster reports ok again.
func (c *Cluster) Restart(crash bool) {
	c.t.Helper()
	c.each(func(n *Server) error { n.down(crash); return nil })
	if err := c.each(func(n *Server) error { return n.launch() }); err != nil {
		c.t.Fatal(err)
	}
	if err := c.waitOK(); err != nil {
		c.t.Fatal(err)
	}
}
