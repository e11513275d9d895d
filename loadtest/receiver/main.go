// Command receiver is the webhook receiver of the load and chaos tests: it
// answers every delivery with 204 and records each delivery id, so a test can
// tell whether every event arrived (at-least-once: duplicates are counted,
// not errors).
//
//	receiver -addr 127.0.0.1:8099 [-slow 200ms]
//
// Deliveries to paths under /slow/ are answered after the -slow delay, so a
// test can catch the worker in the middle of a fan-out.
//
// GET /stats answers {"deliveries": n, "unique": m, "slow": s, "slow_active":
// a, "ids": [...], "events": [...]}: slow counts the deliveries to /slow/
// answered, slow_active those being answered now; ids (with ?ids=1) are "<path> <webhook-id>"; events
// (with ?events=1) are "<path> <type> <data.retraction_reason>", one per
// distinct delivery, which names a retraction uniquely when each one is
// given its own reason.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8099", "listen address")
	slow := flag.Duration("slow", 0, "delay before answering deliveries to /slow/...")
	flag.Parse()
	var (
		mu     sync.Mutex
		total  int
		slowN  int
		active int // deliveries to /slow/ being answered now
		seen   = map[string]int{}
		events = map[string]bool{}
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var env struct {
			Type string `json:"type"`
			Data struct {
				Reason string `json:"retraction_reason"`
			} `json:"data"`
		}
		json.Unmarshal(body, &env)
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			mu.Lock()
			active++
			mu.Unlock()
			time.Sleep(*slow)
			mu.Lock()
			active--
			mu.Unlock()
		}
		// webhook-id is the event's id (docs/decisions.md, delivery): the same event delivered
		// twice to one subscription (one path) has the same key.
		id := r.URL.Path + " " + r.Header.Get("webhook-id")
		mu.Lock()
		total++
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			slowN++
		}
		seen[id]++
		events[r.URL.Path+" "+env.Type+" "+env.Data.Reason] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		out := map[string]any{"deliveries": total, "unique": len(seen), "slow": slowN, "slow_active": active}
		if r.URL.Query().Get("events") == "1" {
			out["events"] = sortedKeys(events)
		}
		if r.URL.Query().Get("ids") == "1" {
			out["ids"] = sortedKeys(seen)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	slog.Info("receiver listening", "addr", *addr)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

// sortedKeys lists a set's members in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
