package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/redistest"
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
		{desc: "retract again is a no-op", args: []string{"retract", "--reason", "Again.", "greece-first-b2b-wave-postponed-to-march"}, wantOut: "unchanged"},
		{desc: "sync keeps the retraction", args: []string{"sync", corpus}, wantOut: "0 changed, 0 events"},
		{desc: "restore", args: []string{"restore", "greece-first-b2b-wave-postponed-to-march"}, wantOut: "emitted article.published", events: 1},
		{desc: "retract without reason", args: []string{"retract", "greece-first-b2b-wave-postponed-to-march"}, wantErr: "--reason", usage: true},
		{desc: "retract unknown slug", args: []string{"retract", "no-such-slug", "--reason", "x"}, wantErr: "no such article"},
		{desc: "newsletter", args: []string{"newsletter", "send", "--week", "2026-w47", "--content", corpus}, wantOut: "emitted newsletter.sent", events: 1},
		{desc: "newsletter twice", args: []string{"newsletter", "send", "--week", "2026-w47", "--content", corpus}, wantOut: "unchanged"},
		{desc: "newsletter of a malformed week", args: []string{"newsletter", "send", "--week", "47", "--content", corpus}, wantErr: "ISO week"},
		{desc: "sync of a missing directory", args: []string{"sync", filepath.Join(t.TempDir(), "none")}, wantErr: "sources.yaml"},
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
