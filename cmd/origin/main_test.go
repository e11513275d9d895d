package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/cmdtest"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/store"
)

func TestMain(m *testing.M) { os.Exit(cmdtest.Run(m)) }

// TestTwoOriginProcesses runs the real origin binary twice over one Redis: a
// retraction and a new article become visible on both within a second, the
// metrics listener answers, and SIGTERM stops each cleanly.
func TestTwoOriginProcesses(t *testing.T) {
	bin := cmdtest.Build(t, "origin")
	rs := redistest.New(t)
	ctx := context.Background()
	pub := &store.Publisher{Store: store.New(rs.Client()), SiteRoot: "http://localhost:8080", Now: time.Now}
	if err := pub.SyncCorpus(ctx, contenttest.Corpus(10), nil); err != nil {
		t.Fatal(err)
	}

	type proc struct {
		cmd           *exec.Cmd
		base, metrics string
	}
	var procs []proc
	for range 2 {
		addr, maddr := freeAddr(t), freeAddr(t)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "IW_REDIS_URL="+rs.URL(), "IW_ORIGIN_ADDR="+addr, "IW_ORIGIN_METRICS_ADDR="+maddr, "IW_LOG_LEVEL=warn")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		procs = append(procs, proc{cmd, "http://" + addr, "http://" + maddr})
	}
	for _, p := range procs {
		waitStatus(t, p.base+"/api/v1/", 200, 10*time.Second)
		waitStatus(t, p.metrics+"/healthz", 200, time.Second)
	}

	slug := contenttest.Article(2).Slug
	fresh := contenttest.Article(77)
	fresh.PublishedAt = contenttest.Base.Add(time.Hour)
	for _, p := range procs {
		waitStatus(t, p.base+"/api/v1/articles/"+slug, 200, time.Second)
		waitStatus(t, p.base+"/api/v1/articles/"+fresh.Slug, 404, time.Second)
	}
	if _, err := pub.Retract(ctx, slug, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.SyncArticle(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		waitStatus(t, p.base+"/api/v1/articles/"+slug, 410, time.Second)
		waitStatus(t, p.base+"/api/v1/articles/"+fresh.Slug, 200, time.Second)
	}

	for _, p := range procs {
		body := get(t, p.metrics+"/metrics")
		if !strings.Contains(body, "invoicewire_origin_requests_total") || !strings.Contains(body, "invoicewire_origin_cache_hits_total") {
			t.Fatalf("metrics lack the origin's series:\n%.500s", body)
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("origin exited with %v after SIGTERM", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("origin did not stop after SIGTERM")
		}
	}
}

func waitStatus(t *testing.T, url string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := 0
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if last = resp.StatusCode; last == want {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("GET %s: status %d, want %d within %s", url, last, want, within)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}

// TestStartFailureLogsJSON runs the origin binary on an address already
// taken: it exits non-zero, says so in a JSON record at error level, and
// never logs that it is listening.
func TestStartFailureLogsJSON(t *testing.T) {
	bin := cmdtest.Build(t, "origin")
	rs := redistest.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "IW_REDIS_URL="+rs.URL(), "IW_ORIGIN_ADDR="+busy.Addr().String(), "IW_ORIGIN_METRICS_ADDR="+freeAddr(t))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err == nil || code == 0 {
		t.Fatalf("origin on a busy address exited with %v (status %d), want a failure", err, code)
	}
	var last map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q\nwhole log:\n%s", line, stderr.String())
		}
		if rec["msg"] == "origin listening" {
			t.Errorf("logged %q although the bind failed", line)
		}
		last = rec
	}
	if errText, _ := last["err"].(string); last["level"] != "ERROR" || last["msg"] != "origin failed" || !strings.Contains(errText, "address already in use") {
		t.Errorf("last record %v, want the bind failure at error level", last)
	}
}

// TestShutdownGraceClosesOpenRequests stops the origin binary while a
// request is still open (an /ask event stream whose body never arrives, as a
// client holding its stream would): once IW_SHUTDOWN_GRACE runs out the
// origin logs a warning naming the grace, closes the connection, and exits
// cleanly and promptly.
func TestShutdownGraceClosesOpenRequests(t *testing.T) {
	bin := cmdtest.Build(t, "origin")
	rs := redistest.New(t)
	addr := freeAddr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "IW_REDIS_URL="+rs.URL(), "IW_ORIGIN_ADDR="+addr, "IW_ORIGIN_METRICS_ADDR="+freeAddr(t),
		"IW_SHUTDOWN_GRACE=300ms", "IW_LOG_LEVEL=warn")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitStatus(t, "http://"+addr+"/api/v1/", 200, 10*time.Second)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /ask HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// The server has read the request line, so the connection is active:
	// shutting down waits for it rather than closing it as idle.
	time.Sleep(100 * time.Millisecond)

	stopped := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("origin exited with %v after SIGTERM\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("origin did not stop after SIGTERM")
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("origin took %v to stop with a grace of 300ms", took)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("the open request's connection was not closed: %v", err)
		}
	}

	var warned bool
	for line := range strings.SplitSeq(strings.TrimSpace(stderr.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q\nwhole log:\n%s", line, stderr.String())
		}
		if rec["level"] == "WARN" && strings.Contains(fmt.Sprint(rec["msg"]), "shutdown grace over") {
			warned = true
			if rec["grace_seconds"] != 0.3 {
				t.Errorf("warning %v; want grace_seconds 0.3", rec)
			}
		}
	}
	if !warned {
		t.Errorf("no warning that the shutdown grace ran out with requests open; log:\n%s", stderr.String())
	}
}
