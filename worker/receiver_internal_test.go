package worker

import (
	"testing"
	"time"
)

// TestReceiverKey: the bound is keyed by host:port, lowercased, with the
// scheme's default port spelt out, whatever the path, query or case
// (docs/decisions.md, "Per-receiver bound").
func TestReceiverKey(t *testing.T) {
	testCases := []struct {
		desc, url, want string
	}{
		{desc: "https without a port", url: "https://Hooks.Example.com/a?b=c", want: "hooks.example.com:443"},
		{desc: "https with its default port", url: "https://hooks.example.com:443/other", want: "hooks.example.com:443"},
		{desc: "https on another port", url: "https://hooks.example.com:8443/", want: "hooks.example.com:8443"},
		{desc: "http without a port", url: "HTTP://hooks.example.com", want: "hooks.example.com:80"},
		{desc: "IPv4 literal", url: "http://127.0.0.1:8080/x", want: "127.0.0.1:8080"},
		{desc: "IPv6 literal", url: "https://[2001:DB8::1]/x", want: "[2001:db8::1]:443"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := receiverKey(tc.url); got != tc.want {
				t.Errorf("receiverKey(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

// TestReceiversDefer: a receiver at its bound refuses another slot until
// one is released, and its deferred deliveries are spread out, never sooner
// than deferMin and never later than the attempt timeout.
func TestReceiversDefer(t *testing.T) {
	const timeout = 10 * time.Second
	r := newReceivers(2, 64, timeout)
	var starts []time.Time
	for range 2 {
		s, ok := r.acquire("a:443")
		if !ok {
			t.Fatal("a slot under the bound was refused")
		}
		starts = append(starts, s)
	}
	if _, ok := r.acquire("a:443"); ok {
		t.Fatal("a third slot was given with a bound of 2")
	}
	if _, ok := r.acquire("b:443"); !ok {
		t.Fatal("another receiver was refused")
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// Pretend attempts there take 4 s: deferrals are 2 s apart.
	r.m["a:443"].took = 4 * time.Second
	var last time.Time
	for i := range 10 {
		due := r.deferUntil("a:443", now)
		if d := due.Sub(now); d < deferMin || d > timeout {
			t.Errorf("deferral %d is due after %s, want within [%s, %s]", i, d, deferMin, timeout)
		}
		if i > 0 && i < 5 && due.Sub(last) < 2*time.Second {
			t.Errorf("deferral %d is due %s after the one before, want 2 s", i, due.Sub(last))
		}
		last = due
	}
	r.release("a:443", starts[0])
	if _, ok := r.acquire("a:443"); !ok {
		t.Fatal("a released slot was not given again")
	}
}

// TestSlowShare: receivers known to be slow share half the slots between
// them, however many there are and whatever each one's own bound; a
// receiver that answers is not held by that share; an attempt running for
// slowAfter makes its receiver slow; and a slow receiver is forgotten
// once slowMemory has passed with nothing in flight there.
func TestSlowShare(t *testing.T) {
	r := newReceivers(8, 4, 10*time.Second) // a share of 2
	now := time.Now()
	for _, k := range []string{"slow1:443", "slow2:443"} {
		r.m[k] = &receiverState{slowUntil: now.Add(time.Minute)}
	}
	testCases := []struct {
		desc string
		key  string
		ok   bool
	}{
		{desc: "a slow receiver, inside the share", key: "slow1:443", ok: true},
		{desc: "another, filling the share", key: "slow2:443", ok: true},
		{desc: "a slow receiver under its own bound, but the share is full", key: "slow1:443", ok: false},
		{desc: "the other slow one too", key: "slow2:443", ok: false},
		{desc: "a receiver that answers", key: "fast:443", ok: true},
		{desc: "and again", key: "fast:443", ok: true},
	}
	starts := map[string]time.Time{}
	for _, tc := range testCases {
		s, ok := r.acquire(tc.key)
		if ok != tc.ok {
			t.Fatalf("%s: acquire(%s) = %v, want %v", tc.desc, tc.key, ok, tc.ok)
		}
		if ok {
			starts[tc.key] = s
		}
	}
	r.release("slow1:443", starts["slow1:443"])
	if _, ok := r.acquire("slow2:443"); !ok {
		t.Fatal("a slot of the share freed, and a slow receiver was still refused")
	}
	if r.slowInFlight != 2 {
		t.Fatalf("slowInFlight = %d, want 2", r.slowInFlight)
	}

	// An attempt in flight for slowAfter makes its receiver slow, before
	// any attempt there has finished.
	s, _ := r.acquire("new:443")
	r.m["new:443"].starts[0].at = s.Add(-r.slowAfter)
	if _, ok := r.acquire("new:443"); ok {
		t.Fatal("a receiver with an attempt running for slowAfter was not counted slow")
	}

	// Forgotten after slowMemory with nothing in flight, at the next sweep.
	r.m["slow1:443"].slowUntil = now.Add(-time.Second)
	r.sweepAt = time.Time{}
	r.release("fast:443", starts["fast:443"])
	if _, kept := r.m["slow1:443"]; kept {
		t.Fatal("an idle receiver no longer slow was kept")
	}
	if _, kept := r.m["slow2:443"]; !kept {
		t.Fatal("a receiver with attempts in flight was forgotten")
	}
}
