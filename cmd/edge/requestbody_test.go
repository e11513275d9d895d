package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestAnswerSurvivesLateEndOfRequestBody is issue 9: an answer the edge had
// begun to copy was cut off when the client's request body ended after the
// answer began. Streaming the body, the edge's transport reads it once more
// after its Content-Length bytes to see EOF, while the edge's own HTTP/1
// server drains and closes it as the answer's first bytes go out; the
// transport's read then fails, it closes the upstream connection, and the
// client gets part of the answer and an unexpected EOF.
//
// Under load (make loadtest) the late read came from the scheduler: the
// transport's goroutine was descheduled between sending a POST /ask's last
// byte and its EOF read, while the origin answered. Here the client makes
// the same order on purpose: it holds back the body's end (newlines after
// the JSON) until the upstream, which answers once the JSON is in, has
// begun its answer. The upstream stands in for the origin because the
// origin always reads a body to its end before answering; everything else
// is the Caddyfile of make run over a real Redis.
//
// With the edge reading the body to its end first (request_buffers), the
// upstream sees nothing until the last byte, so the client's wait below
// runs out and every answer arrives whole. Without it, every round is cut
// off, unless the machine is so slow that the client ends the body before
// the edge has begun to answer: then a round passes without proving
// anything; it never fails wrongly.
func TestAnswerSurvivesLateEndOfRequestBody(t *testing.T) {
	const query = `{"query":"When does Belgium require e-invoicing?"}`
	// The first 16 KiB overflow the edge's 2 KiB response buffer, so the
	// edge begins answering the client (and its server drains the body);
	// the rest comes only after the request body has ended.
	answer := []byte(`{"answer":"` + strings.Repeat("Peppol ", 64<<10) + `"}`)
	answered := make(chan struct{}, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// Answer before the body has ended; net/http would otherwise
		// drain the rest first (server.go, chunkWriter.writeHeader).
		if err := rc.EnableFullDuplex(); err != nil {
			t.Errorf("upstream: %v", err)
		}
		if _, err := io.ReadFull(r.Body, make([]byte, len(query))); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.Write(answer[:16<<10])
		rc.Flush()
		select {
		case answered <- struct{}{}:
		default:
		}
		// The rest only once the body has ended, one way or the other:
		// whatever the edge got of the answer before then, it must not
		// hold all of it when its connection to here goes.
		io.Copy(io.Discard, r.Body)
		w.Write(answer[16<<10:])
	}))
	t.Cleanup(upstream.Close)
	rd := redistest.Start(t)
	edge := strings.TrimPrefix(startEdgeFor(t, upstream.Listener.Addr().String(), rd.URL(), "http://localhost", 100000), "http://")

	// Three newlines end the body, sent one at a time while the edge's
	// server waits to drain the body. The server is then the goroutine
	// that reads the body's last byte: either it takes the body's lock at
	// the first newline, or the transport takes it back and the server's
	// wait, over a millisecond, puts Go's mutex in starvation mode
	// (sync.Mutex), which hands the lock to the server at the second. The
	// upstream never sees the body end, so it holds back the rest of its
	// answer until the edge has closed the connection, and the round
	// fails every time the edge closes it.
	const tail = "\n\n\n"
	for round := range 3 {
		select { // a late signal of the round before
		case <-answered:
		default:
		}
		conn, err := net.Dial("tcp", edge)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(query)+len(tail), query)
		pause := time.Duration(0)
		select {
		case <-answered:
			// The edge passed the JSON on as it came and the upstream
			// has answered; the pauses give the edge time to begin
			// copying the answer (a shorter pause only weakens the round).
			pause = 100 * time.Millisecond
		case <-time.After(time.Second):
			// The edge is holding the body until its end.
		}
		for i := range len(tail) {
			time.Sleep(pause)
			if _, err := conn.Write([]byte{tail[i]}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			conn.Close()
			t.Fatalf("round %d: no response: %v", round, err)
		}
		got, err := io.ReadAll(resp.Body)
		conn.Close()
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, answer) {
			t.Errorf("round %d: status %d, %d of %d bytes, %v", round, resp.StatusCode, len(got), len(answer), err)
		}
	}
}
