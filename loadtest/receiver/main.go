// Command receiver is the webhook receiver of the load and chaos tests: it
// answers every delivery with 204 and records each delivery id, so a test can
// tell whether every event arrived (at-least-once: duplicates are counted,
// not errors).
//
//	receiver -addr 127.0.0.1:8099
//
// GET /stats answers {"deliveries": n, "unique": m, "ids": [...]} (ids only
// with ?ids=1).
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
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8099", "listen address")
	flag.Parse()
	var (
		mu    sync.Mutex
		total int
		seen  = map[string]int{}
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		// webhook-id is the event's id (docs/decisions.md, delivery): the same event delivered
		// twice to one subscription (one path) has the same key.
		id := r.URL.Path + " " + r.Header.Get("webhook-id")
		mu.Lock()
		total++
		seen[id]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		out := map[string]any{"deliveries": total, "unique": len(seen)}
		if r.URL.Query().Get("ids") == "1" {
			ids := make([]string, 0, len(seen))
			for id := range seen {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			out["ids"] = ids
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
