package redisconn

import (
	"strings"
	"testing"
)

// TestAcquireErrorsHideThePassword: the edge's modules build their Redis
// clients here, and Caddy prints a module's provisioning error; a malformed
// redis_url must not put its password in the edge's log
// (internal/store.NewClient redacts it).
func TestAcquireErrorsHideThePassword(t *testing.T) {
	testCases := []struct {
		desc, url string
	}{
		{desc: "cluster with no nodes, password in the query", url: "redis+cluster://?password=hunter2"},
		{desc: "bad escape in the password", url: "redis://:hun%zzter2@127.0.0.1:6379/0"},
		{desc: "bad escape in a cluster query", url: "redis+cluster://h:1?password=hun%zzter2"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			rdb, err := Acquire(tc.url)
			if err == nil {
				rdb.Close()
				Release(tc.url)
				t.Fatalf("Acquire(%q) succeeded", tc.url)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "redisconn: store: ") || strings.Contains(msg, "ter2") || strings.Contains(msg, "%zz") {
				t.Errorf("Acquire(%q): %q, want store's error with no part of the password", tc.url, msg)
			}
		})
	}
}
