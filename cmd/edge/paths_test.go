package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/origin/origintest"
)

// rawRequest sends one request to base (http://host:port) with its target
// on the request line exactly as given, so no client cleans or re-encodes
// it.
func rawRequest(t *testing.T, base, target string, header ...string) (*http.Response, []byte) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	msg := "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	for _, h := range header {
		msg += h + "\r\n"
	}
	if _, err := io.WriteString(conn, msg+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestCanonicalPathsThroughEdge: the edge hands the origin the path as the
// client sent it and adds no second address of its own, so the origin's
// rule holds end to end (docs/decisions.md, "One address per resource"):
// an encoded slash is a JSON 404, an equivalent spelling a 301 on the site,
// for markdown readers too.
func TestCanonicalPathsThroughEdge(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 100000)
	art := inst.Corpus.Articles[2]
	page := art.Path() + "/"
	md := "Accept: text/markdown"

	testCases := []struct {
		desc     string
		target   string
		header   []string
		status   int
		location string // after the site root
	}{
		{desc: "page", target: page, status: 200},
		{desc: "page as markdown", target: page, header: []string{md}, status: 200},
		{desc: "page, trailing slash encoded", target: art.Path() + "%2F", status: 404},
		{desc: "page, trailing slash encoded, as markdown", target: art.Path() + "%2F", header: []string{md}, status: 404},
		{desc: "page, encoded slash after the year, as markdown", target: "/2026%2F11/" + art.Slug + "/", header: []string{md}, status: 404},
		{desc: "page, encoded letter", target: "/2026/11/%61" + strings.TrimPrefix(art.Slug, "a") + "/", status: 301, location: page},
		{desc: "page, encoded letter, as markdown", target: "/2026/11/%61" + strings.TrimPrefix(art.Slug, "a") + "/", header: []string{md}, status: 301, location: page},
		{desc: "page, dot-dot segment, as markdown", target: "/2026/11/x/../" + art.Slug + "/", header: []string{md}, status: 301, location: page},
		{desc: "API article, trailing slash encoded", target: "/api/v1/articles/" + art.Slug + "%2F", status: 404},
		{desc: "API, encoded slash in the prefix", target: "/api%2Fv1/articles", status: 404},
		{desc: "API, encoded letter", target: "/api/v1/%61rticles", status: 301, location: "/api/v1/articles"},
		{desc: "protocol-relative path", target: "//evil.example/", status: 404},
		{desc: "protocol-relative path after a dot-dot", target: "/..//evil.example/", status: 404},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body := rawRequest(t, edge, tc.target, tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("GET %s: %d, want %d: %.200s", tc.target, resp.StatusCode, tc.status, body)
			}
			if tc.status == 404 && (resp.Header.Get("Content-Type") != "application/json" || !isJSONError(body, "not_found")) {
				t.Fatalf("GET %s: 404 as %q: %.200s", tc.target, resp.Header.Get("Content-Type"), body)
			}
			if tc.location != "" && resp.Header.Get("Location") != inst.SiteRoot+tc.location {
				t.Fatalf("GET %s: Location %q, want %q", tc.target, resp.Header.Get("Location"), inst.SiteRoot+tc.location)
			}
		})
	}
}
