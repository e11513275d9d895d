package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// startProductionEdge loads caddyfile/Caddyfile.production in front of inst,
// with only its admin address and site address swapped for free local ports
// (plain HTTP, no certificates), and returns the edge's base URL.
func startProductionEdge(t *testing.T, inst *origintest.Instance) string {
	t.Helper()
	ports := freeport.Ports(t, 2)
	admin, port := ports[0], ports[1]
	t.Setenv("IW_REDIS_URL", inst.Redis.URL())
	t.Setenv("IW_PUBLIC_URL", inst.SiteRoot)
	t.Setenv("IW_ORIGIN_ADDRS", strings.TrimPrefix(inst.SiteRoot, "http://"))
	t.Setenv("IW_TRUSTED_PROXIES", "")
	loadCaddy(t, productionCaddyfile(t, admin, port), admin)
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// productionCaddyfile is caddyfile/Caddyfile.production with its admin API
// on the port admin and its site on plain HTTP on port.
func productionCaddyfile(t *testing.T, admin, port int) string {
	t.Helper()
	raw, err := os.ReadFile("../../caddyfile/Caddyfile.production")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IW_EDGE_ADMIN_ADDR", fmt.Sprintf("localhost:%d", admin))
	// The metrics site on a port of its own, not 9180 (tests run side by side).
	t.Setenv("IW_EDGE_METRICS_PORT", fmt.Sprint(freeport.Ports(t, 1)[0]))
	cfg := string(raw)
	for _, r := range []struct{ old, new string }{
		{"admin {$IW_EDGE_ADMIN_ADDR:127.0.0.1:2019}", "admin {$IW_EDGE_ADMIN_ADDR}\n\tskip_install_trust"},
		{"{$IW_SITE_HOST:invoicewire.example} {", fmt.Sprintf("http://127.0.0.1:%d {", port)},
	} {
		if !strings.Contains(cfg, r.old) {
			t.Fatalf("the production Caddyfile no longer has %q; update this test", r.old)
		}
		cfg = strings.Replace(cfg, r.old, r.new, 1)
	}
	return cfg
}

// TestRetiredPrefixAnnouncesSunset runs the production Caddyfile, which
// retires /api/v0: every answer under it, the origin's 404s included,
// carries Deprecation (RFC 9745 §2, an SF Date), Sunset (RFC 8594 §3, an
// IMF-fixdate) and the policy links, exactly as configured; answers of
// /api/v1 and of /api/v0's look-alikes carry none of them.
func TestRetiredPrefixAnnouncesSunset(t *testing.T) {
	inst := origintest.Start(t)
	edge := startProductionEdge(t, inst)
	// The dates of the deprecation block in caddyfile/Caddyfile.production.
	deprecated := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sunset := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)
	wantLinks := []string{
		"<" + inst.SiteRoot + `/developers#versioning>; rel="deprecation"; type="text/html"`,
		"<" + inst.SiteRoot + `/developers#sunset>; rel="sunset"`,
	}
	for _, path := range []string{"/api/v0", "/api/v0/", "/api/v0/articles", "/api/v0/articles/" + inst.Corpus.Articles[0].Slug} {
		t.Run(path, func(t *testing.T) {
			resp, body := do(t, "GET", edge+path)
			if resp.StatusCode >= 500 || resp.Header.Get("Content-Type") == "" || len(body) == 0 {
				t.Fatalf("%d %q %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if got, want := resp.Header.Get("Deprecation"), fmt.Sprintf("@%d", deprecated.Unix()); got != want {
				t.Errorf("Deprecation %q; want %q", got, want)
			}
			if got, want := resp.Header.Get("Sunset"), sunset.Format(http.TimeFormat); got != want {
				t.Errorf("Sunset %q; want %q", got, want)
			}
			links := strings.Join(resp.Header.Values("Link"), ", ")
			for _, l := range wantLinks {
				if !strings.Contains(links, l) {
					t.Errorf("Link %q lacks %q", links, l)
				}
			}
		})
	}
	for _, path := range []string{"/api/v1/", "/api/v1/articles", "/api/v01", "/api/v0x/articles"} {
		resp, _ := do(t, "GET", edge+path)
		if d, s := resp.Header.Get("Deprecation"), resp.Header.Get("Sunset"); d != "" || s != "" {
			t.Errorf("GET %s (%d): Deprecation %q, Sunset %q; want neither", path, resp.StatusCode, d, s)
		}
	}
}

// TestRestoredArticleThroughTheEdgeCache retracts an article whose JSON,
// page and markdown twin the edge has stored, waits until the edge serves
// (and has stored) the 410s, restores the article, and reads it back
// through the edge: the restored article, byte for byte what was served
// before the retraction, never the stored 410. The purges travel by
// pub/sub; the waits are a safety net for a broken build, not a speed
// assertion.
func TestRestoredArticleThroughTheEdgeCache(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	art := inst.Corpus.Articles[2]
	paths := []string{"/api/v1/articles/" + art.Slug, art.Path() + "/", art.Path() + ".md"}
	before := map[string]string{}
	for _, p := range paths {
		// Stored at the edge: the edge clears its cache once, when its
		// invalidation subscription first comes up, so read until a hit.
		resp, body := untilStored(t, edge+p, 200)
		before[p] = string(body)
		if resp.Header.Get("Last-Modified") == "" {
			t.Errorf("%s: no Last-Modified", p)
		}
	}
	ctx := context.Background()
	if _, err := inst.Publisher.Retract(ctx, art.Slug, "Restore test."); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		_, body := untilStored(t, edge+p, http.StatusGone)
		if !isJSONError(body, "gone") {
			t.Errorf("%s: retracted answer %.200s", p, body)
		}
	}
	if _, err := inst.Publisher.Restore(ctx, art.Slug); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		_, body := untilStored(t, edge+p, 200)
		if string(body) != before[p] {
			t.Errorf("%s: the restored answer differs from the one before the retraction:\n%.300s\nwant\n%.300s", p, body, before[p])
		}
	}
}

// untilStored reads url through the edge until it answers status from the
// edge's store (Cache-Status hit) and returns that answer.
func untilStored(t *testing.T, url string, status int) (*http.Response, []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := do(t, "GET", url)
		if resp.StatusCode == status && strings.HasPrefix(resp.Header.Get("Cache-Status"), "Invoicewire; hit") {
			return resp, body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: still %d (Cache-Status %q) after 30 s; want a stored %d", url, resp.StatusCode, resp.Header.Get("Cache-Status"), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
