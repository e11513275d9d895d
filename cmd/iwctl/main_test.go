package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

// TestCommands runs iwctl's commands in order against a real Redis with the
// real corpus in content/, checking what each prints and what reaches the
// events stream.
func TestCommands(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	rdb := rs.Client()
	ctx := context.Background()
	corpus := filepath.Join("..", "..", "content")
	streamLen := func() int64 { n, _ := rdb.XLen(ctx, events.Stream).Result(); return n }

	first := ""
	missing := filepath.Join(t.TempDir(), "none")
	cases := []struct {
		desc    string
		args    []string
		wantOut string
		wantErr string
		usage   bool
		events  int64 // new stream entries
	}{
		{desc: "first sync publishes every article", args: []string{"sync", corpus}, wantOut: "events", events: -1},
		{desc: "second sync changes nothing", args: []string{"sync", corpus}, wantOut: "0 changed, 0 events"},
		{desc: "retract", args: []string{"retract", "greece-first-b2b-wave-postponed-to-march", "--reason", "Test retraction."}, wantOut: "emitted article.retracted", events: 1},
		{desc: "retract again is a no-op", args: []string{"retract", "--reason", "Test retraction.", "greece-first-b2b-wave-postponed-to-march"}, wantOut: "unchanged"},
		{desc: "retract again with a new reason corrects it, with no event", args: []string{"retract", "--reason", "Corrected reason.", "greece-first-b2b-wave-postponed-to-march"}, wantOut: "reason updated, no event"},
		{desc: "sync keeps the retraction", args: []string{"sync", corpus}, wantOut: "0 changed, 0 events"},
		{desc: "restore", args: []string{"restore", "greece-first-b2b-wave-postponed-to-march"}, wantOut: "emitted article.published", events: 1},
		{desc: "retract without reason", args: []string{"retract", "greece-first-b2b-wave-postponed-to-march"}, wantErr: "--reason", usage: true},
		{desc: "retract unknown slug", args: []string{"retract", "no-such-slug", "--reason", "x"}, wantErr: "no such article"},
		{desc: "newsletter", args: []string{"newsletter", "send", "--week", "2026-w47", "--content", corpus}, wantOut: "emitted newsletter.sent", events: 1},
		{desc: "newsletter twice", args: []string{"newsletter", "send", "--week", "2026-w47", "--content", corpus}, wantOut: "unchanged"},
		{desc: "newsletter of a malformed week", args: []string{"newsletter", "send", "--week", "47", "--content", corpus}, wantErr: "ISO week"},
		{desc: "sync of a missing directory", args: []string{"sync", missing}, wantErr: "content directory " + missing + ": no such file or directory"},
		{desc: "unknown command", args: []string{"publish"}, wantErr: "unknown command", usage: true},
		{desc: "no command", args: nil, wantErr: "no command", usage: true},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			before := streamLen()
			var out bytes.Buffer
			err := run(ctx, tc.args, &out)
			if tc.wantErr != "" {
				var ue usageError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &ue) != tc.usage {
					t.Fatalf("err = %v, want one mentioning %q (usage error: %v)", err, tc.wantErr, tc.usage)
				}
				if streamLen() != before {
					t.Fatal("a failed command wrote events")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("output %q does not contain %q", out.String(), tc.wantOut)
			}
			got := streamLen() - before
			if tc.events == -1 {
				first = out.String()
				if got < 40 {
					t.Fatalf("first sync emitted %d events, want one per article", got)
				}
				return
			}
			if got != tc.events {
				t.Fatalf("%d events, want %d", got, tc.events)
			}
		})
	}
	if !strings.Contains(first, "emitted article.published") {
		t.Fatalf("first sync output lacks the events: %s", first)
	}
	rec, err := store.New(rdb).Article(ctx, "greece-first-b2b-wave-postponed-to-march")
	if err != nil || rec.Retracted() {
		t.Fatalf("the restored article: %v, %v", rec, err)
	}
}

// TestRetractReasonCorrected checks that a retracted article's reason can
// be corrected: the record's reason changes, its retraction time does not,
// and no event is emitted (no event kind means "a notice changed").
func TestRetractReasonCorrected(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	ctx := context.Background()
	rdb := rs.Client()
	const slug = "greece-first-b2b-wave-postponed-to-march"
	for _, args := range [][]string{
		{"sync", filepath.Join("..", "..", "content")},
		{"retract", slug, "--reason", "First reason."},
	} {
		if err := run(ctx, args, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	st := store.New(rdb)
	before, err := st.Article(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := rdb.XLen(ctx, events.Stream).Result()
	var out bytes.Buffer
	if err := run(ctx, []string{"retract", slug, "--reason", "The corrected reason."}, &out); err != nil {
		t.Fatal(err)
	}
	after, err := st.Article(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Retracted() || after.RetractionReason != "The corrected reason." || !after.RetractedAt.Equal(*before.RetractedAt) {
		t.Fatalf("after correcting the reason: retracted %v, reason %q, at %v (was %v)", after.Retracted(), after.RetractionReason, after.RetractedAt, before.RetractedAt)
	}
	if m, _ := rdb.XLen(ctx, events.Stream).Result(); m != n {
		t.Fatalf("correcting the reason emitted %d events", m-n)
	}
	if !strings.Contains(out.String(), "reason updated") {
		t.Fatalf("output %q", out.String())
	}
}

func TestSyncRefusesAnInvalidTreeAndWritesNothing(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	dir := t.TempDir()
	src := filepath.Join("..", "..", "internal", "content", "testdata", "valid")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "articles", "2026", "01", "broken.md")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("---\ntitle: Broken\nsection: sports\n---\nBody.\n"), 0o644)

	err := run(context.Background(), []string{"sync", dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "broken.md") || !strings.Contains(err.Error(), "section") {
		t.Fatalf("err = %v, want one naming broken.md and section", err)
	}
	if keys, err := redistest.Keys(context.Background(), rs.Client(), "*"); err != nil || len(keys) != 0 {
		t.Fatalf("a refused sync left %d keys in Redis (%v)", len(keys), err)
	}
}

// TestSyncMilestoneChange edits one milestone of the real corpus: the next
// sync stores that one country and emits nothing (docs/decisions.md), and a
// milestone the loader rejects stops the sync before anything is written.
func TestSyncMilestoneChange(t *testing.T) {
	rs := redistest.New(t)
	t.Setenv("IW_REDIS_URL", rs.URL())
	t.Setenv("IW_PUBLIC_URL", "https://iw.test")
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "content"))); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"sync", dir}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	countries := filepath.Join(dir, "countries.yaml")
	orig, err := os.ReadFile(countries)
	if err != nil {
		t.Fatal(err)
	}
	const old, renamed = "title: Issuing compulsory above €800,000 turnover", "title: Issuing compulsory above €800,000 prior-year turnover"
	if !bytes.Contains(orig, []byte(old)) {
		t.Fatalf("countries.yaml no longer has %q; pick another milestone", old)
	}
	streamLen := func() int64 { n, _ := rs.Client().XLen(ctx, events.Stream).Result(); return n }
	before := streamLen()

	os.WriteFile(countries, bytes.Replace(orig, []byte(old), []byte(renamed), 1), 0o644)
	var out bytes.Buffer
	if err := run(ctx, []string{"sync", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "country de") || !strings.Contains(out.String(), "1 changed, 0 events") {
		t.Errorf("sync output %q, want country de as the one change and no event", out.String())
	}
	if streamLen() != before {
		t.Error("a milestone change emitted an event")
	}
	st := store.New(rs.Client())
	de, err := st.Country(ctx, "de")
	if err != nil || !slices.ContainsFunc(de.Milestones, func(m content.Milestone) bool { return strings.HasSuffix(m.Title, "prior-year turnover") }) {
		t.Fatalf("the stored country lacks the new title (%v)", err)
	}

	os.WriteFile(countries, bytes.Replace(orig, []byte("obligation: [issue]"), []byte("obligation: [pay]"), 1), 0o644)
	err = run(ctx, []string{"sync", dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "obligation") {
		t.Fatalf("err = %v, want the loader's error on the obligation", err)
	}
	if again, _ := st.Country(ctx, "de"); !reflect.DeepEqual(again, de) {
		t.Error("a refused sync changed a stored country")
	}
}

// TestHelpNeedsNoRedis: help prints the usage, a command's --help its own
// usage (and succeeds), and an unknown command is a usage error, with no
// Redis at IW_REDIS_URL (a port nothing listens on): none reaches the store.
func TestHelpNeedsNoRedis(t *testing.T) {
	t.Setenv("IW_REDIS_URL", "redis://127.0.0.1:1/0")
	testCases := []struct {
		desc      string
		args      []string
		wantUsage bool // a usageError, not output
		want      string
	}{
		{desc: "--help", args: []string{"--help"}, want: "iwctl sync"},
		{desc: "help", args: []string{"help"}, want: "iwctl sync"},
		{desc: "unknown command", args: []string{"publish"}, wantUsage: true},
		{desc: "sync --help", args: []string{"sync", "--help"}, want: "usage: iwctl sync [DIR]"},
		{desc: "sync DIR -h", args: []string{"sync", "content", "-h"}, want: "usage: iwctl sync [DIR]"},
		{desc: "retract --help", args: []string{"retract", "--help"}, want: "usage: iwctl retract SLUG --reason TEXT"},
		{desc: "restore -help", args: []string{"restore", "-help"}, want: "usage: iwctl restore SLUG"},
		{desc: "newsletter send --help", args: []string{"newsletter", "send", "--help"}, want: "usage: iwctl newsletter send"},
		{desc: "deadletters replay --help", args: []string{"deadletters", "replay", "--help"}, want: "iwctl deadletters replay [ID...]"},
		{desc: "subscriptions --help promises no replay of events published while disabled", args: []string{"subscriptions", "--help"}, want: "and are never delivered to it"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var out strings.Builder
			err := run(context.Background(), tc.args, &out)
			var ue usageError
			if tc.wantUsage != errors.As(err, &ue) || (!tc.wantUsage && (err != nil || !strings.Contains(out.String(), tc.want))) {
				t.Fatalf("err %v, output %q", err, out.String())
			}
		})
	}
}

// TestUsageMistakesNeedNoRedis: every command's usage mistake is a usage
// error (exit 2) found before Redis is reached, so a typo neither waits
// for a store that is down or still loading its data nor logs connection
// errors. IW_REDIS_URL points at a listener that accepts and never
// answers, as a Redis loading a large append-only file does not answer
// PING with PONG; none may connect to it.
func TestUsageMistakesNeedNoRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int64
	go func() {
		var open []net.Conn
		defer func() {
			for _, c := range open {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			open = append(open, c)
		}
	}()
	t.Setenv("IW_REDIS_URL", "redis://"+l.Addr().String()+"/0")
	hash := strings.Repeat("ab", 32)
	testCases := []struct {
		desc string
		args []string
	}{
		{desc: "sync with two directories", args: []string{"sync", "a", "b"}},
		{desc: "retract without a slug", args: []string{"retract"}},
		{desc: "retract with two slugs", args: []string{"retract", "a", "b", "--reason", "x"}},
		{desc: "retract without a reason", args: []string{"retract", "a"}},
		{desc: "retract with an unknown flag", args: []string{"retract", "a", "--reason", "x", "--force"}},
		{desc: "restore without a slug", args: []string{"restore"}},
		{desc: "newsletter without send", args: []string{"newsletter"}},
		{desc: "newsletter send with an argument", args: []string{"newsletter", "send", "extra"}},
		{desc: "deadletters without a subcommand", args: []string{"deadletters"}},
		{desc: "deadletters list with a negative limit", args: []string{"deadletters", "list", "--limit", "-1"}},
		{desc: "deadletters replay of nothing", args: []string{"deadletters", "replay"}},
		{desc: "deadletters replay of a malformed id", args: []string{"deadletters", "replay", "x"}},
		{desc: "tokens without revoke", args: []string{"tokens"}},
		{desc: "tokens revoke of nothing", args: []string{"tokens", "revoke"}},
		{desc: "tokens revoke of a hash and a client", args: []string{"tokens", "revoke", hash, "--client", "cli_a"}},
		{desc: "tokens revoke of a token", args: []string{"tokens", "revoke", "iw_not-a-hash"}},
		{desc: "clients without a subcommand", args: []string{"clients"}},
		{desc: "clients list with an argument", args: []string{"clients", "list", "x"}},
		{desc: "clients show without a client", args: []string{"clients", "show"}},
		{desc: "clients delete of a malformed id", args: []string{"clients", "delete", "https://x"}},
		{desc: "subscriptions with an unknown subcommand", args: []string{"subscriptions", "drop", "sub_a"}},
		{desc: "subscriptions list with a bad status", args: []string{"subscriptions", "list", "--status", "paused"}},
		{desc: "subscriptions disable without an id", args: []string{"subscriptions", "disable"}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			// Bounded, so that a command that does reach the listener
			// fails here instead of waiting for it.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			err := run(ctx, tc.args, &bytes.Buffer{})
			var ue usageError
			if !errors.As(err, &ue) {
				t.Errorf("err = %v after %s, want a usage error", err, time.Since(start).Round(time.Millisecond))
			}
			if n := conns.Load(); n > 0 {
				t.Errorf("%d connections to IW_REDIS_URL for a usage mistake", n)
				conns.Store(0)
			}
		})
	}
}
