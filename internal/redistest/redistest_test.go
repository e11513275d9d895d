package redistest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestBackends: both kinds of backend serve keys of every slot, list them
// all, and keep what reached the append-only file across a graceful and a
// crashed restart.
func TestBackends(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		start func(testing.TB) redistest.Backend
	}{
		{desc: "single server", start: func(t testing.TB) redistest.Backend { return redistest.Start(t) }},
		{desc: "three-master cluster", start: func(t testing.TB) redistest.Backend { return redistest.StartCluster(t) }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			began := time.Now()
			b := tc.start(t)
			t.Logf("started in %v", time.Since(began))
			rdb := b.Client()
			ctx := context.Background()
			var want []string
			for i := range 20 {
				k := fmt.Sprintf("iw:test:%d", i) // no hash tag: spread over the slots
				if err := rdb.Set(ctx, k, i, 0).Err(); err != nil {
					t.Fatal(err)
				}
				want = append(want, k)
			}
			got, err := redistest.Keys(ctx, rdb, "iw:test:*")
			slices.Sort(got)
			slices.Sort(want)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("Keys = %v, %v; want %v", got, err, want)
			}
			for _, crash := range []bool{false, true} {
				// appendfsync everysec: wait for the fsync before a crash.
				time.Sleep(1100 * time.Millisecond)
				began := time.Now()
				b.Restart(crash)
				t.Logf("restarted (crash=%v) in %v", crash, time.Since(began))
				for _, k := range want {
					if err := rdb.Get(ctx, k).Err(); err != nil {
						t.Fatalf("after a restart (crash=%v) %s: %v", crash, k, err)
					}
				}
			}
			b.Kill()
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if err := rdb.Ping(ctx).Err(); err == nil {
				t.Error("PING answered after Kill")
			}
		})
	}
}

// TestNewFollowsTheEnvironment: New starts a cluster exactly in cluster mode.
func TestNewFollowsTheEnvironment(t *testing.T) {
	_, cluster := redistest.New(t).(*redistest.Cluster)
	if cluster != redistest.ClusterMode() {
		t.Errorf("New started a cluster: %v; cluster mode: %v", cluster, redistest.ClusterMode())
	}
}
