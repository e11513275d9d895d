package netguard_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/netguard"
)

func TestFetcher(t *testing.T) {
	loopback := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "elsewhere") }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc":
			w.Header().Set("Cache-Control", "max-age=600")
			io.WriteString(w, r.Header.Get("Accept"))
		case "/redirect":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/big":
			io.WriteString(w, strings.Repeat("x", 2048))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	testCases := []struct {
		desc    string
		policy  netguard.Policy
		url     string
		want    string
		wantErr string
	}{
		{desc: "a document inside the allow list", policy: loopback, url: srv.URL + "/doc", want: "application/json"},
		{desc: "redirects are not followed", policy: loopback, url: srv.URL + "/redirect", wantErr: "status 302"},
		{desc: "only 200 counts", policy: loopback, url: srv.URL + "/missing", wantErr: "status 404"},
		{desc: "over the size bound", policy: loopback, url: srv.URL + "/big", wantErr: "too large"},
		{desc: "loopback refused at dial time", policy: netguard.Policy{}, url: srv.URL + "/doc", wantErr: "not a public address"},
		{desc: "userinfo refused", policy: loopback, url: "http://user:pw@" + strings.TrimPrefix(srv.URL, "http://") + "/doc", wantErr: "userinfo"},
		{desc: "other schemes refused", policy: loopback, url: "ftp://127.0.0.1/doc", wantErr: "neither https nor http"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			f := netguard.NewFetcher(tc.policy, 2*time.Second, 1024)
			doc, err := f.Get(context.Background(), tc.url, "application/json")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				if tc.wantErr == "too large" && !errors.Is(err, netguard.ErrTooLarge) {
					t.Errorf("error %v is not ErrTooLarge", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(doc.Body) != tc.want {
				t.Errorf("body %q; want %q", doc.Body, tc.want)
			}
			if got := doc.FreshFor(time.Minute, time.Hour, 5*time.Minute); got != 10*time.Minute {
				t.Errorf("fresh for %s; want the max-age of 10m", got)
			}
		})
	}
}

func TestFreshFor(t *testing.T) {
	testCases := []struct {
		desc string
		cc   []string
		want time.Duration
	}{
		{desc: "absent", want: time.Hour},
		{desc: "max-age", cc: []string{"public, max-age=600"}, want: 10 * time.Minute},
		{desc: "below the minimum", cc: []string{"max-age=5"}, want: time.Minute},
		{desc: "above the maximum", cc: []string{"max-age=99999999999"}, want: 24 * time.Hour},
		{desc: "no-store", cc: []string{"no-store"}, want: time.Minute},
		{desc: "no-cache beats max-age", cc: []string{"max-age=600", "no-cache"}, want: time.Minute},
		{desc: "malformed max-age", cc: []string{"max-age=soon"}, want: time.Hour},
		{desc: "quoted max-age", cc: []string{`max-age="120"`}, want: 2 * time.Minute},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			d := &netguard.Document{Header: http.Header{"Cache-Control": tc.cc}}
			if got := d.FreshFor(time.Minute, 24*time.Hour, time.Hour); got != tc.want {
				t.Errorf("fresh for %s; want %s", got, tc.want)
			}
		})
	}
}
