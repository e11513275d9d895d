package store_test

import (
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/store"
)

// TestRedactURL: what a log line or an error may show of a Redis URL. The
// password never, wherever the URL carries it; the rest where it is known
// not to be the password.
func TestRedactURL(t *testing.T) {
	testCases := []struct {
		desc, url, want string
	}{
		{desc: "no credentials", url: "redis://127.0.0.1:6379/0", want: "redis://127.0.0.1:6379/0"},
		{desc: "password in the userinfo", url: "redis://:hunter2@127.0.0.1:6379/0", want: "redis://xxxxx@127.0.0.1:6379/0"},
		{desc: "user and password", url: "rediss://app:hunter2@redis.internal:6380/1", want: "rediss://xxxxx@redis.internal:6380/1"},
		{desc: "a userinfo without a colon (some clients read it as the password)", url: "redis://hunter2@127.0.0.1:6379", want: "redis://xxxxx@127.0.0.1:6379"},
		{desc: "cluster password in the query (docs/operations.md, Step by step)", url: "redis+cluster://10.0.0.1:6379,10.0.0.2:6379?password=hunter2", want: "redis+cluster://10.0.0.1:6379,10.0.0.2:6379?password=xxxxx"},
		{desc: "cluster with no nodes (the reviewer's first reproduction)", url: "redis+cluster://?password=hunter2", want: "redis+cluster://?password=xxxxx"},
		{desc: "other query parameters kept", url: "redis+cluster://h:1?username=app&password=hunter2", want: "redis+cluster://h:1?password=xxxxx&username=app"},
		{desc: "any parameter named for a password", url: "redis://h:1?sentinel_password=hunter2", want: "redis://h:1?sentinel_password=xxxxx"},
		{desc: "a bad escape in the password (the reviewer's second reproduction)", url: "redis://:hun%zzter2@127.0.0.1:6379/0", want: "redis://…"},
		{desc: "a bad escape in a query password", url: "redis+cluster://h:1?password=hun%zzter2", want: "redis+cluster://…"},
		{desc: "a '#' in the password, not encoded", url: "redis://user:1#hunter2@127.0.0.1:6379", want: "redis://…"},
		{desc: "a '?' in the password, not encoded", url: "redis://:12?hunter2@127.0.0.1:6379", want: "redis://…"},
		{desc: "a '/' in the password, not encoded", url: "redis://:12/hunter2@127.0.0.1:6379", want: "redis://…"},
		{desc: "not a URL at all", url: "hunter2", want: "…"},
		{desc: "no scheme to show", url: "hun:ter2://x", want: "…"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got := store.RedactURL(tc.url)
			if got != tc.want {
				t.Errorf("redactURL(%q) = %q, want %q", tc.url, got, tc.want)
			}
			if strings.Contains(got, "hunter2") || strings.Contains(got, "ter2") {
				t.Errorf("redactURL(%q) = %q shows the password", tc.url, got)
			}
		})
	}
}

// TestNewClientErrorsHideThePassword: a start-up error about IW_REDIS_URL
// names the variable and what is wrong, and holds no part of the password
// (README: logs never carry secrets), however the URL is malformed.
func TestNewClientErrorsHideThePassword(t *testing.T) {
	testCases := []struct {
		desc, url, want string
	}{
		{desc: "cluster with no nodes", url: "redis+cluster://?password=hunter2", want: "names no cluster nodes"},
		{desc: "cluster credentials before the nodes", url: "redis+cluster://:hunter2@10.0.0.1:6379,10.0.0.2:6379", want: "?password="},
		{desc: "bad escape in a cluster query", url: "redis+cluster://h:1?password=hun%zzter2", want: "invalid URL escape"},
		{desc: "bad escape in the userinfo", url: "redis://:hun%zzter2@127.0.0.1:6379/0", want: "invalid URL escape"},
		{desc: "a '#' in the password breaks the port", url: "redis://:hun#ter2@127.0.0.1:6379/0", want: "not a URL"},
		{desc: "a '?' in the password makes a query", url: "redis://:12?hunter2@127.0.0.1:6379", want: "an '@' after the host"},
		{desc: "a '/' in the password makes a path", url: "redis://:12/hunter2@127.0.0.1:6379", want: "an '@' after the host"},
		{desc: "unknown scheme", url: "redix://:hunter2@127.0.0.1:6379", want: "invalid URL scheme"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			rdb, err := store.NewClient(tc.url)
			if err == nil {
				rdb.Close()
				t.Fatalf("NewClient(%q) succeeded", tc.url)
			}
			msg := err.Error()
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, "ter2") || strings.Contains(msg, "%zz") {
				t.Errorf("NewClient(%q): %q shows the password", tc.url, msg)
			}
			if !strings.Contains(msg, "IW_REDIS_URL") || !strings.Contains(msg, tc.want) {
				t.Errorf("NewClient(%q): %q, want IW_REDIS_URL and %q in it", tc.url, msg, tc.want)
			}
		})
	}
}
