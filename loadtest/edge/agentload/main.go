// Command agentload measures the edge's cache hits for Web Bot Auth agents
// beside unsigned ones (make bench-edge): the same GET, sent over keep-alive
// connections as fast as the edge answers,
//
//	unsigned   with no signature;
//	fresh      signed anew for every request (new created and nonce), as
//	           agents sign, so the edge verifies every one;
//	repeated   one signature's bytes sent again and again within its
//	           validity, which the edge may remember.
//
// Requests are built and signed before the clock starts, so the load
// generator spends its time on the socket only; it serves the agent's
// signatures directory itself. It prints one line per mode:
// "<mode> <requests/s> <requests>".
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicewire/invoicewire/internal/signing"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the edge")
	path := flag.String("path", "/api/v1/articles?limit=25", "the cached resource")
	modes := flag.String("modes", "unsigned,fresh,repeated", "comma-separated modes, run in this order")
	conns := flag.Int("c", 32, "connections")
	duration := flag.Duration("d", 10*time.Second, "duration of each mode")
	signed := flag.Int("n", 400_000, "fresh signatures prepared per run (at least the requests a run sends)")
	flag.Parse()

	key, err := signing.GenerateKey()
	if err != nil {
		log.Fatal(err)
	}
	dir := serveDirectory(key)
	for _, mode := range strings.Split(*modes, ",") {
		reqs := build(mode, *addr, *path, dir, key, *signed)
		warm(*addr, reqs)
		n := run(*addr, reqs, *conns, *duration)
		fmt.Printf("%s %.0f %d\n", mode, float64(n)/duration.Seconds(), n)
	}
}

// serveDirectory serves key's signatures directory on loopback and returns
// its origin.
func serveDirectory(key *signing.Key) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/http-message-signatures-directory+json")
		w.Header().Set("Cache-Control", "max-age=86400")
		fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":%q}]}`, key.JWK().X, key.ID)
	}))
	return "http://" + l.Addr().String()
}

// build prepares the raw requests of a mode: one for unsigned and
// repeated, n distinct ones for fresh.
func build(mode, addr, path, dir string, key *signing.Key, n int) [][]byte {
	switch mode {
	case "unsigned":
		return [][]byte{raw(addr, path, nil)}
	case "repeated":
		n = 1
	case "fresh":
	default:
		log.Fatalf("unknown mode %q", mode)
	}
	out := make([][]byte, n)
	now := time.Now().Truncate(time.Second)
	agent, err := signing.SignatureAgent(signing.Label, dir)
	if err != nil {
		log.Fatal(err)
	}
	for i := range out {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set(signing.HeaderSignatureAgent, agent)
		err := key.SignRequest(req, signing.Label, []signing.Component{{Name: "@authority"}, {Name: "signature-agent", Key: signing.Label}},
			signing.Params{Created: now, Expires: now.Add(10 * time.Minute), KeyID: key.ID, Alg: signing.Alg, Tag: "web-bot-auth", Nonce: strconv.Itoa(i)})
		if err != nil {
			log.Fatal(err)
		}
		out[i] = raw(addr, path, req.Header)
	}
	return out
}

func raw(addr, path string, h http.Header) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", path, addr)
	h.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}

// warm sends the first request until the edge answers it as a verified
// agent would be (the key is fetched in the background) and the resource is
// cached.
func warm(addr string, reqs [][]byte) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for range 50 {
		c.Write(reqs[0])
		if _, err := readResponse(r); err != nil {
			log.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run sends reqs round robin over conns connections for d and returns how
// many answers came back.
func run(addr string, reqs [][]byte, conns int, d time.Duration) int64 {
	var next, done atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				log.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReaderSize(c, 64<<10)
			for time.Now().Before(stop) {
				i := next.Add(1) - 1
				if int(i) >= len(reqs) && len(reqs) > 1 {
					log.Fatalf("more requests than prepared signatures (%d); raise -n", len(reqs))
				}
				if _, err := c.Write(reqs[int(i)%len(reqs)]); err != nil {
					log.Fatal(err)
				}
				status, err := readResponse(r)
				if err != nil {
					log.Fatal(err)
				}
				if status != 200 {
					log.Fatalf("status %d", status)
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return done.Load()
}

// readResponse reads one response with a Content-Length body and returns
// its status.
func readResponse(r *bufio.Reader) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, _ := strconv.Atoi(string(line[9:12]))
	length := -1
	for {
		l, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(l) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(l, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("a response without Content-Length")
	}
	_, err = io.CopyN(io.Discard, r, int64(length))
	return status, err
}
