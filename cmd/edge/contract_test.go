package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// TestContractThroughTheEdge checks what clients see through the edge —
// cached reads, the edge's own errors (401, 429, 503) and preflights —
// against openapi.json, as the origin's contract tests check the origin.
func TestContractThroughTheEdge(t *testing.T) {
	inst := origintest.Start(t)
	edge := startEdge(t, inst, 30)
	checker := contract.New(t)
	art := inst.Corpus.Articles[0]
	exchanges := []struct {
		method, path string
		header       []string
	}{
		{"GET", "/api/v1/", nil},
		{"GET", "/api/v1/articles", nil},
		{"GET", "/api/v1/articles", nil}, // a hit
		{"GET", "/api/v1/articles", []string{"Accept-Encoding: gzip"}},
		{"GET", "/api/v1/articles?limit=5", []string{"Cache-Control: no-cache"}},
		{"GET", "/api/v1/articles/" + art.Slug, nil},
		{"GET", "/api/v1/articles/no-such-slug", nil},
		{"GET", "/api/v1/countries", nil},
		{"GET", "/api/v1/countries/zz", nil},
		{"GET", "/api/v1/webhooks", nil},
		{"POST", "/api/v1/webhooks", nil},
		{"POST", "/api/v1/webhooks", []string{"Authorization: Bearer not-a-token"}},
		{"DELETE", "/api/v1/articles/" + art.Slug, nil},
		{"OPTIONS", "/api/v1/articles", []string{"Origin: https://app.example", "Access-Control-Request-Method: GET"}},
	}
	for _, x := range exchanges {
		checkExchange(t, checker, edge, x.method, x.path, x.header)
	}
	// The origin down: the edge's own 503, which the cache looked the
	// request up for, so it carries Cache-Status (openapi.json's
	// Unavailable).
	inst.Server.Close()
	if resp := checkExchange(t, checker, edge, "GET", "/api/v1/countries/de", nil); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Cache-Status") == "" {
		t.Errorf("origin down: %d, Cache-Status %q; want 503 with Cache-Status", resp.StatusCode, resp.Header.Get("Cache-Status"))
	}
	// Spend the rest of the budget (quota 30) and check the 429.
	for range 40 {
		resp, _ := do(t, "GET", edge+"/api/v1/specs")
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
	}
	if resp := checkExchange(t, checker, edge, "GET", "/api/v1/specs", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("over the budget: %d; want 429", resp.StatusCode)
	}
}

func checkExchange(t *testing.T, checker *contract.Checker, edge, method, path string, header []string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, edge+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The checker validates representations, not their transfer codings.
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	// The checker reads the request again; give it a fresh one.
	vreq, _ := http.NewRequest(method, edge+path, nil)
	vreq.Header = req.Header
	checker.Check(t, vreq, resp, body)
	return resp
}
