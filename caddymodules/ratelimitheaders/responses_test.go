package ratelimitheaders

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestResponsesByStatus checks that every way a handler behind the limiter
// can answer is counted under the status the client gets.
func TestResponsesByStatus(t *testing.T) {
	testCases := []struct {
		desc string
		next caddyhttp.HandlerFunc
		want int
	}{
		{desc: "explicit 200", want: 200, next: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(200)
			return nil
		}},
		{desc: "body only: net/http's implicit 200", want: 200, next: func(w http.ResponseWriter, r *http.Request) error {
			_, err := w.Write([]byte("x"))
			return err
		}},
		{desc: "copied body (ReadFrom) only", want: 200, next: func(w http.ResponseWriter, r *http.Request) error {
			_, err := io.Copy(w, strings.NewReader("x"))
			return err
		}},
		{desc: "not modified", want: 304, next: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(304)
			return nil
		}},
		{desc: "early hints, then 200", want: 200, next: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(103)
			w.WriteHeader(200)
			return nil
		}},
		{desc: "second WriteHeader ignored", want: 502, next: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(502)
			w.WriteHeader(200)
			return nil
		}},
		{desc: "handler error with status (handle_errors answers)", want: 404, next: func(w http.ResponseWriter, r *http.Request) error {
			return caddyhttp.Error(404, errors.New("nope"))
		}},
		{desc: "wrapped handler error", want: 503, next: func(w http.ResponseWriter, r *http.Request) error {
			return errors.Join(errors.New("upstream"), caddyhttp.Error(503, errors.New("down")))
		}},
		{desc: "plain error", want: 500, next: func(w http.ResponseWriter, r *http.Request) error {
			return errors.New("boom")
		}},
		{desc: "status written, then an error", want: 200, next: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(200)
			return caddyhttp.Error(502, errors.New("cut off"))
		}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			before := snapshot()
			rec := httptest.NewRecorder()
			serveCounted(rec, httptest.NewRequest(http.MethodGet, "/", nil), tc.next)
			after := snapshot()
			for code := range after {
				d := after[code] - before[code]
				switch {
				case code == tc.want && d != 1:
					t.Errorf("code %d counted %d times; want once", code, d)
				case code != tc.want && d != 0:
					t.Errorf("code %d counted %d times; want only %d", code, d, tc.want)
				}
			}
		})
	}
}

func snapshot() []uint64 {
	out := make([]uint64, len(responses.counts))
	for i := range out {
		out[i] = responses.counts[i].Load()
	}
	return out
}

// BenchmarkServeCounted is the cost the status count adds to every request
// (compare with BenchmarkServeUncounted in the same run).
func BenchmarkServeCounted(b *testing.B) {
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(200)
		return nil
	})
	w, r := httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		serveCounted(w, r, next)
	}
}

// BenchmarkServeUncounted is the reference for BenchmarkServeCounted.
func BenchmarkServeUncounted(b *testing.B) {
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(200)
		return nil
	})
	w, r := httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		next.ServeHTTP(w, r)
	}
}
