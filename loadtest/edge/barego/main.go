// Command barego is the benchmark's reference: a bare net/http server that
// writes one file's bytes with the headers a cached API response carries.
// bench.sh runs it beside the edge and divides by its throughput.
//
//	barego -addr 127.0.0.1:18090 -body body.json
package main

import (
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address")
	file := flag.String("body", "", "file whose bytes every response carries")
	flag.Parse()
	body, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	sum := sha256.Sum256(body)
	// Prebuilt header values, shared by every response: what a good
	// hand-written handler would do.
	hdr := http.Header{
		"Content-Type":                {"application/json"},
		"Content-Length":              {strconv.Itoa(len(body))},
		"Cache-Control":               {"public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"},
		"Etag":                        {`"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`},
		"Access-Control-Allow-Origin": {"*"},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wh := w.Header()
		for k, v := range hdr {
			wh[k] = v
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
