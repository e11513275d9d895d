package edgecache

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// decodeBody undoes coding.
func decodeBody(t *testing.T, coding string, b []byte) string {
	t.Helper()
	var r io.Reader
	switch coding {
	case "":
		return string(b)
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("gzip body: %v", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("zstd body: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		t.Fatalf("unknown coding %q", coding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return string(out)
}

// TestCodingsShareOneFetch: the codings of one URL version are made from one
// identity body fetched once, whatever coding is asked for first; each
// keeps the ETag the encode handler gives it (strong ETags suffixed per
// coding, RFC 9110 §8.8.3.3; weak ones shared), and conditional requests
// are answered per coding.
func TestCodingsShareOneFetch(t *testing.T) {
	edge, o := startEdge(t, "")
	big := `{"items":"` + strings.Repeat("peppol e-invoicing mandate ", 600) + `"}`
	testCases := []struct {
		desc  string
		etag  string
		order []string // codings asked for, in turn
		// wantETag per coding.
		wantETag map[string]string
	}{
		{desc: "zstd first", etag: `"a1"`, order: []string{"zstd", "gzip", ""},
			wantETag: map[string]string{"zstd": `"a1-zstd"`, "gzip": `"a1-gzip"`, "": `"a1"`}},
		{desc: "gzip first", etag: `"a2"`, order: []string{"gzip", "", "zstd"},
			wantETag: map[string]string{"zstd": `"a2-zstd"`, "gzip": `"a2-gzip"`, "": `"a2"`}},
		{desc: "identity first", etag: `"a3"`, order: []string{"", "zstd", "gzip"},
			wantETag: map[string]string{"zstd": `"a3-zstd"`, "gzip": `"a3-gzip"`, "": `"a3"`}},
		{desc: "weak ETag is shared", etag: `W/"a4"`, order: []string{"zstd", "gzip", ""},
			wantETag: map[string]string{"zstd": `W/"a4"`, "gzip": `W/"a4"`, "": `W/"a4"`}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			p := unique("/api/v1/articles")
			o.handle(p, static(big, test.etag, readCC, "list"))
			for i, coding := range test.order {
				var hdr []string
				if coding != "" {
					hdr = append(hdr, "Accept-Encoding: "+coding)
				}
				resp, body := edge.Do(t, "GET", p, "", hdr...)
				if got := resp.Header.Get("Content-Encoding"); got != coding {
					t.Fatalf("%q: Content-Encoding %q", coding, got)
				}
				if decodeBody(t, coding, []byte(body)) != big {
					t.Errorf("%q: body does not decode to the origin's", coding)
				}
				if got := resp.Header.Get("ETag"); got != test.wantETag[coding] {
					t.Errorf("%q: ETag %q; want %q", coding, got, test.wantETag[coding])
				}
				if coding != "" && !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
					t.Errorf("%q: Vary %q lacks Accept-Encoding", coding, resp.Header.Get("Vary"))
				}
				if cs := resp.Header.Get("Cache-Status"); i > 0 && !strings.Contains(cs, "; hit;") {
					t.Errorf("%q after %q: Cache-Status %q; want a hit on the stored body", coding, test.order[0], cs)
				}
				// The coding's own ETag validates it; another coding's
				// strong ETag does not (RFC 9110 §13.1.2, weak comparison).
				resp, body = edge.Do(t, "GET", p, "", append(hdr, "If-None-Match: "+test.wantETag[coding])...)
				if resp.StatusCode != http.StatusNotModified || body != "" {
					t.Errorf("%q with its ETag: %d %q; want 304", coding, resp.StatusCode, body)
				}
				for other, etag := range test.wantETag {
					if etag == test.wantETag[coding] {
						continue
					}
					if resp, _ := edge.Do(t, "GET", p, "", append(hdr, "If-None-Match: "+etag)...); resp.StatusCode != http.StatusOK {
						t.Errorf("%q with %q's ETag %s: %d; want 200", coding, other, etag, resp.StatusCode)
					}
				}
			}
			if n := o.count(p); n != 1 {
				t.Errorf("origin requests %d; want 1 (one fetch per URL version)", n)
			}
			if ae := o.lastHeader(p).Get("Accept-Encoding"); ae != "identity" {
				t.Errorf("origin asked with Accept-Encoding %q; want identity", ae)
			}
		})
	}
}

// TestCodingRevalidatesIdentity: a stale coding is revalidated at the
// origin with the identity ETag (the encode handler's suffix removed), and
// refreshed codings come from the refreshed identity body.
func TestCodingRevalidatesIdentity(t *testing.T) {
	edge, o := startEdge(t, "")
	big := strings.Repeat("e-invoicing news ", 400)
	testCases := []struct {
		desc     string
		etag     string
		first    string // coding stored first
		then     string // coding asked for once stale, with no-cache
		wantINM  string
		wantETag string
	}{
		{desc: "strong, zstd stored", etag: `"r1"`, first: "zstd", then: "zstd", wantINM: `"r1"`, wantETag: `"r1-zstd"`},
		{desc: "strong, identity stored", etag: `"r2"`, first: "", then: "gzip", wantINM: `"r2"`, wantETag: `"r2-gzip"`},
		{desc: "weak", etag: `W/"r3"`, first: "gzip", then: "gzip", wantINM: `W/"r3"`, wantETag: `W/"r3"`},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			p := unique("/api/v1/sources")
			o.handle(p, static(big, test.etag, readCC, "sources"))
			ae := func(c string) []string {
				if c == "" {
					return nil
				}
				return []string{"Accept-Encoding: " + c}
			}
			edge.Do(t, "GET", p, "", ae(test.first)...)
			resp, body := edge.Do(t, "GET", p, "", append(ae(test.then), "Cache-Control: no-cache")...)
			if resp.StatusCode != 200 || decodeBody(t, test.then, []byte(body)) != big {
				t.Fatalf("revalidated: %d", resp.StatusCode)
			}
			if got := o.lastHeader(p).Get("If-None-Match"); got != test.wantINM {
				t.Errorf("origin saw If-None-Match %q; want %q", got, test.wantINM)
			}
			if cs := resp.Header.Get("Cache-Status"); !strings.Contains(cs, "fwd-status=304") {
				t.Errorf("Cache-Status %q; want the origin's 304", cs)
			}
			if got := resp.Header.Get("ETag"); got != test.wantETag {
				t.Errorf("ETag %q; want %q", got, test.wantETag)
			}
			if n := o.count(p); n != 2 {
				t.Errorf("origin requests %d; want 2", n)
			}
		})
	}
}

// versionedOrigin answers p with the version held in version: a JSON body
// padded past the encoders' minimum length, ETag "m<version>", and a
// lifetime of maxAge(version) seconds with a minute of
// stale-while-revalidate.
func versionedOrigin(o *fakeOrigin, p string, version *atomic.Int64, maxAge func(v int64) int) {
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		v := version.Load()
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%[1]d, s-maxage=%[1]d, stale-while-revalidate=60", maxAge(v)))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", fmt.Sprintf(`"m%d"`, v))
		fmt.Fprintf(w, `{"version":%d,"pad":"%s"}`, v, strings.Repeat("x", 2000))
	})
}

// TestStaleCodingRefreshedFromIdentity: within stale-while-revalidate a
// stale coding is served at once and refreshed in the background through
// the identity body; once refreshed, every coding is the new version
// without more origin requests.
func TestStaleCodingRefreshedFromIdentity(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/mandates")
	var version atomic.Int64
	version.Store(1)
	// The refreshed version stays fresh for a minute, so a slow machine
	// cannot make it stale (and refreshed again) before the test ends.
	versionedOrigin(o, p, &version, func(v int64) int {
		if v == 1 {
			return 1
		}
		return 60
	})
	for _, c := range []string{"zstd", "gzip"} {
		edge.Do(t, "GET", p, "", "Accept-Encoding: "+c)
	}
	// Counted from here: on a loaded machine the gzip request may come
	// after the one-second version went stale, and refresh it already.
	filled := o.count(p)
	version.Store(2)
	time.Sleep(1100 * time.Millisecond)
	resp, body := edge.Do(t, "GET", p, "", "Accept-Encoding: zstd")
	if !strings.Contains(decodeBody(t, "zstd", []byte(body)), `"version":1`) || !strings.Contains(resp.Header.Get("Cache-Status"), "hit; ttl=-") {
		t.Fatalf("stale zstd: Cache-Status %q", resp.Header.Get("Cache-Status"))
	}
	waitFor(t, func() bool {
		_, body := edge.Do(t, "GET", p, "", "Accept-Encoding: zstd")
		return strings.Contains(decodeBody(t, "zstd", []byte(body)), `"version":2`)
	})
	for _, c := range []string{"gzip", ""} {
		var hdr []string
		if c != "" {
			hdr = []string{"Accept-Encoding: " + c}
		}
		resp, body := edge.Do(t, "GET", p, "", hdr...)
		if !strings.Contains(decodeBody(t, c, []byte(body)), `"version":2`) || resp.Header.Get("ETag") != map[string]string{"gzip": `"m2-gzip"`, "": `"m2"`}[c] {
			t.Errorf("%q after the refresh: ETag %q", c, resp.Header.Get("ETag"))
		}
	}
	if filled < 1 || filled > 2 {
		t.Errorf("origin requests for the two codings %d; want 1 (one fill for both), or 2 when the fill was already stale", filled)
	}
	if n := o.count(p) - filled; n != 1 {
		t.Errorf("origin requests after the version changed %d; want 1 (one refresh for every coding)", n)
	}
}

// TestStaleCodingAfterStaleIdentity: a stale coding whose identity body
// was refreshed since, and is itself stale by now, is answered from that
// newer identity body, not with the version the cache already replaced.
func TestStaleCodingAfterStaleIdentity(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/api/v1/mandates")
	var version atomic.Int64
	version.Store(1)
	versionedOrigin(o, p, &version, func(int64) int { return 1 })
	for _, c := range []string{"zstd", "gzip"} {
		edge.Do(t, "GET", p, "", "Accept-Encoding: "+c)
	}
	version.Store(2)
	time.Sleep(1100 * time.Millisecond)
	edge.Do(t, "GET", p, "", "Accept-Encoding: zstd") // stale; refreshes the identity body
	waitFor(t, func() bool {
		_, body := edge.Do(t, "GET", p, "", "Accept-Encoding: zstd")
		return strings.Contains(decodeBody(t, "zstd", []byte(body)), `"version":2`)
	})
	time.Sleep(1100 * time.Millisecond) // version 2 is stale too now
	resp, body := edge.Do(t, "GET", p, "", "Accept-Encoding: gzip")
	if !strings.Contains(decodeBody(t, "gzip", []byte(body)), `"version":2`) || resp.Header.Get("ETag") != `"m2-gzip"` {
		t.Errorf("gzip: ETag %q, Cache-Status %q; want version 2 from the refreshed identity body", resp.Header.Get("ETag"), resp.Header.Get("Cache-Status"))
	}
	if cs := resp.Header.Get("Cache-Status"); !strings.Contains(cs, "hit; ttl=-") {
		t.Errorf("gzip: Cache-Status %q; want a stale hit", cs)
	}
}

// TestCodingsOfVariants: a response that varies on Accept keeps one
// identity body per normalised Accept, and each coding is made from its
// own variant's body.
func TestCodingsOfVariants(t *testing.T) {
	edge, o := startEdge(t, "")
	p := unique("/2026/05/page")
	md, html := "# "+strings.Repeat("markdown ", 200), "<h1>"+strings.Repeat("html ", 300)+"</h1>"
	o.handle(p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", readCC)
		w.Header().Set("Vary", "Accept")
		if strings.Contains(r.Header.Get("Accept"), "markdown") {
			w.Header().Set("Content-Type", "text/markdown")
			w.Header().Set("ETag", `"md"`)
			w.Write([]byte(md))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("ETag", `"html"`)
		w.Write([]byte(html))
	})
	testCases := []struct {
		desc, accept, coding, want, etag string
	}{
		{desc: "markdown in zstd", accept: "text/markdown", coding: "zstd", want: md, etag: `"md-zstd"`},
		{desc: "html in zstd", accept: "text/html", coding: "zstd", want: html, etag: `"html-zstd"`},
		{desc: "markdown in gzip", accept: "text/markdown", coding: "gzip", want: md, etag: `"md-gzip"`},
		{desc: "html identity", accept: "text/html", coding: "", want: html, etag: `"html"`},
		{desc: "html in gzip", accept: "*/*", coding: "gzip", want: html, etag: `"html-gzip"`},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			hdr := []string{"Accept: " + test.accept}
			if test.coding != "" {
				hdr = append(hdr, "Accept-Encoding: "+test.coding)
			}
			resp, body := edge.Do(t, "GET", p, "", hdr...)
			if decodeBody(t, test.coding, []byte(body)) != test.want || resp.Header.Get("ETag") != test.etag {
				t.Errorf("ETag %q, body %.20q; want %q, %.20q", resp.Header.Get("ETag"), body, test.etag, test.want)
			}
			if v := resp.Header.Values("Vary"); !strings.Contains(strings.Join(v, ","), "Accept") {
				t.Errorf("Vary %q", v)
			}
		})
	}
	if n := o.count(p); n != 2 {
		t.Errorf("origin requests %d; want 2 (one per normalised Accept)", n)
	}
}
