package edgecache

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// representation answers body as ctype with an ETag, cc, and vary when not
// empty; If-None-Match with the ETag gets 304 with the same fields.
func representation(body, ctype, vary, cc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", cc)
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("ETag", `"rep"`)
		if vary != "" {
			w.Header().Set("Vary", vary)
		}
		if r.Header.Get("If-None-Match") == `"rep"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte(body))
	}
}

// varyMembers lists the members of h's Vary field lines, as sent.
func varyMembers(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// TestIdentityVariesOnAcceptEncoding: a response the cache's encode
// handler would compress for a client accepting a coding is selected by
// Accept-Encoding, so its identity variant carries Vary: Accept-Encoding
// too (RFC 9110 §12.5.5) — on misses, hits, revalidations and 304s (RFC
// 9110 §15.4.5), stored or not, and on answers that bypass the cache (a
// token), whose 304s carry it always — merged into the origin's Vary without
// listing a member twice. What the encode handler never compresses (a
// body of at most its minimum length, a type it does not compress) does
// not gain it. Each case also checks the rule against the encode handler
// itself: a gzip client gets a compressed body exactly when the identity
// variant varies.
func TestIdentityVariesOnAcceptEncoding(t *testing.T) {
	edge, o := startEdge(t, "")
	big := `{"items":"` + strings.Repeat("peppol e-invoicing mandate ", 1000) + `"}` // 27 KB
	page := "<h1>" + strings.Repeat("e-invoicing news ", 600) + "</h1>"
	atMin := `{"pad":"` + strings.Repeat("x", 512-len(`{"pad":""}`)) + `"}` // 512 bytes: the minimum length, not compressed
	overMin := atMin + " "
	ae := []string{"Accept-Encoding"}
	testCases := []struct {
		desc                  string
		method                string // default GET
		body, ctype, vary, cc string
		before                []string // codings asked for first ("" identity)
		coding                string   // the request's coding
		header                []string // more request fields
		wantStatus            int
		wantCacheStatus       string // a substring of Cache-Status
		wantVary              []string
	}{
		{desc: "identity miss", body: big, ctype: "application/json",
			wantCacheStatus: "fwd=uri-miss; stored", wantVary: ae},
		{desc: "identity hit", body: big, ctype: "application/json", before: []string{""},
			wantCacheStatus: "; hit;", wantVary: ae},
		{desc: "identity hit, identity stored by a gzip miss", body: big, ctype: "application/json", before: []string{"gzip"},
			wantCacheStatus: "; hit;", wantVary: ae},
		{desc: "gzip hit made from the identity entry", body: big, ctype: "application/json", before: []string{""},
			coding: "gzip", wantCacheStatus: "; hit;", wantVary: ae},
		{desc: "zstd hit", body: big, ctype: "application/json", before: []string{"zstd"},
			coding: "zstd", wantCacheStatus: "; hit;", wantVary: ae},
		{desc: "identity 304", body: big, ctype: "application/json", before: []string{""},
			header: []string{`If-None-Match: "rep"`}, wantStatus: http.StatusNotModified, wantCacheStatus: "; hit;", wantVary: ae},
		{desc: "identity revalidated", body: big, ctype: "application/json", before: []string{""},
			header: []string{"Cache-Control: no-cache"}, wantCacheStatus: "fwd-status=304; stored", wantVary: ae},
		{desc: "identity not stored", body: big, ctype: "application/json", cc: "no-store",
			wantCacheStatus: "fwd=uri-miss", wantVary: ae},
		{desc: "body of the minimum length", body: atMin, ctype: "application/json", before: []string{""},
			wantCacheStatus: "; hit;"},
		{desc: "body one byte over the minimum length", body: overMin, ctype: "application/json", before: []string{""},
			wantCacheStatus: "; hit;", wantVary: ae},
		{desc: "short body not stored", body: `{"items":[]}`, ctype: "application/json", cc: "no-store",
			wantCacheStatus: "fwd=uri-miss"},
		{desc: "non-compressible type", body: big, ctype: "image/png", before: []string{""},
			wantCacheStatus: "; hit;"},
		{desc: "non-compressible type in gzip", body: big, ctype: "image/png", before: []string{""},
			coding: "gzip", wantCacheStatus: "; hit;"},
		{desc: "page varying on Accept, identity miss", body: page, ctype: "text/html; charset=utf-8", vary: "Accept",
			wantCacheStatus: "fwd=uri-miss; stored", wantVary: []string{"Accept", "Accept-Encoding"}},
		{desc: "page varying on Accept, identity hit", body: page, ctype: "text/html; charset=utf-8", vary: "Accept", before: []string{"zstd"},
			wantCacheStatus: "; hit;", wantVary: []string{"Accept", "Accept-Encoding"}},
		{desc: "page varying on Accept, gzip hit", body: page, ctype: "text/html; charset=utf-8", vary: "Accept", before: []string{""},
			coding: "gzip", wantCacheStatus: "; hit;", wantVary: []string{"Accept", "Accept-Encoding"}},
		{desc: "page varying on Accept, identity 304", body: page, ctype: "text/html; charset=utf-8", vary: "Accept", before: []string{""},
			header: []string{`If-None-Match: "rep"`}, wantStatus: http.StatusNotModified, wantCacheStatus: "; hit;", wantVary: []string{"Accept", "Accept-Encoding"}},
		{desc: "page varying on Accept, identity revalidated", body: page, ctype: "text/html; charset=utf-8", vary: "Accept", before: []string{""},
			header: []string{"Cache-Control: no-cache"}, wantCacheStatus: "fwd-status=304; stored", wantVary: []string{"Accept", "Accept-Encoding"}},
		{desc: "token, identity", body: big, ctype: "application/json", header: []string{"Authorization: Bearer x"},
			wantCacheStatus: "fwd=bypass", wantVary: ae},
		{desc: "token, identity HEAD", method: "HEAD", body: big, ctype: "application/json", header: []string{"Authorization: Bearer x"},
			wantCacheStatus: "fwd=bypass", wantVary: ae},
		{desc: "token, identity 304", body: big, ctype: "application/json", header: []string{"Authorization: Bearer x", `If-None-Match: "rep"`},
			wantStatus: http.StatusNotModified, wantCacheStatus: "fwd=bypass", wantVary: ae},
		{desc: "token, gzip", body: big, ctype: "application/json", coding: "gzip", header: []string{"Authorization: Bearer x"},
			wantCacheStatus: "fwd=bypass", wantVary: ae},
		{desc: "token, gzip 304", body: big, ctype: "application/json", coding: "gzip", header: []string{"Authorization: Bearer x", `If-None-Match: "rep-gzip"`},
			wantStatus: http.StatusNotModified, wantCacheStatus: "fwd=bypass", wantVary: ae},
		{desc: "token, page varying on Accept", body: page, ctype: "text/html; charset=utf-8", vary: "Accept", header: []string{"Authorization: Bearer x"},
			wantCacheStatus: "fwd=bypass", wantVary: []string{"Accept", "Accept-Encoding"}},
		{desc: "token, short body", body: `{"items":[]}`, ctype: "application/json", header: []string{"Authorization: Bearer x"},
			wantCacheStatus: "fwd=bypass"},
		{desc: "token, non-compressible type", body: big, ctype: "image/png", header: []string{"Authorization: Bearer x"},
			wantCacheStatus: "fwd=bypass"},
		{desc: "POST", method: "POST", body: big, ctype: "application/json",
			wantCacheStatus: "fwd=method", wantVary: ae},
		{desc: "origin already varies on accept-encoding", body: big, ctype: "application/json", vary: "Accept, accept-encoding", before: []string{""},
			wantCacheStatus: "; hit;", wantVary: []string{"Accept", "accept-encoding"}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			p := unique("/api/v1/vary")
			cc := test.cc
			if cc == "" {
				cc = readCC
			}
			o.handle(p, representation(test.body, test.ctype, test.vary, cc))
			codingHeader := func(c string) []string {
				if c == "" {
					return nil
				}
				return []string{"Accept-Encoding: " + c}
			}
			for _, c := range test.before {
				edge.Do(t, "GET", p, "", codingHeader(c)...)
			}
			method := cmp.Or(test.method, http.MethodGet)
			resp, body := edge.Do(t, method, p, "", append(codingHeader(test.coding), test.header...)...)
			wantStatus := cmp.Or(test.wantStatus, http.StatusOK)
			if resp.StatusCode != wantStatus {
				t.Fatalf("status %d; want %d", resp.StatusCode, wantStatus)
			}
			if cs := resp.Header.Get("Cache-Status"); !strings.Contains(cs, test.wantCacheStatus) {
				t.Errorf("Cache-Status %q; want %q in it", cs, test.wantCacheStatus)
			}
			if got := varyMembers(resp.Header); !slices.Equal(got, test.wantVary) {
				t.Errorf("Vary %q; want %q", got, test.wantVary)
			}
			if wantStatus == http.StatusOK && method != http.MethodHead && decodeBody(t, resp.Header.Get("Content-Encoding"), []byte(body)) != test.body {
				t.Errorf("body (Content-Encoding %q) does not decode to the origin's", resp.Header.Get("Content-Encoding"))
			}
			// The rule is the encode handler's: a client accepting gzip
			// gets the body compressed exactly when identity varies.
			gz, _ := edge.Do(t, "GET", p, "", "Accept-Encoding: gzip")
			varies := slices.ContainsFunc(test.wantVary, func(f string) bool { return strings.EqualFold(f, "Accept-Encoding") })
			if compressed := gz.Header.Get("Content-Encoding") == "gzip"; compressed != varies {
				t.Errorf("gzip client: Content-Encoding %q, Vary %q; identity varies on Accept-Encoding: %v", gz.Header.Get("Content-Encoding"), varyMembers(gz.Header), varies)
			}
		})
	}
}

// TestRevalidatedCodingKeepsVary: an origin 304 carrying its own Vary
// (without Accept-Encoding, which it does not know the edge's codings add)
// replaces the stored Vary, yet a revalidated entry keeps
// Accept-Encoding among its members, a coding's entry (whose
// Content-Encoding keeps compressible from adding it) included.
func TestRevalidatedCodingKeepsVary(t *testing.T) {
	h := provisioned(t, &Handler{Name: "InvoicewireVary"})
	now := time.Now()
	testCases := []struct {
		desc    string
		coding  string
		stored  http.Header
		bodyLen int
		want    []string
	}{
		{desc: "gzip entry", coding: "gzip", stored: http.Header{"Vary": {"Accept", "Accept-Encoding"}, "Content-Encoding": {"gzip"}}, bodyLen: 700, want: []string{"Accept", "Accept-Encoding"}},
		{desc: "identity entry", stored: http.Header{"Vary": {"Accept"}}, bodyLen: 1100, want: []string{"Accept", "Accept-Encoding"}},
		{desc: "short gzip entry, not compressed", coding: "gzip", stored: http.Header{"Vary": {"Accept"}}, bodyLen: 100, want: []string{"Accept"}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			hdr := test.stored.Clone()
			hdr.Set("Content-Type", "text/html")
			hdr.Set("Cache-Control", readCC)
			body := []byte(strings.Repeat("n", test.bodyLen))
			stale := h.newEntry("k", http.StatusOK, hdr, body, now, now)
			stale.coding = test.coding
			fresh := h.revalidated(stale, http.Header{"Vary": {"Accept"}, "Cache-Control": {readCC}}, now, now)
			if got := varyMembers(fresh.header.header(0)); !slices.Equal(got, test.want) {
				t.Errorf("Vary %q; want %q", got, test.want)
			}
		})
	}
}

// TestVaryOtherFields: a response varying on a field other than Accept and
// Accept-Encoding is stored per value of that field (RFC 9111 §4.1), so
// requests that differ in it never share an entry while requests that
// agree on it do. The origin echoes the fields, so a body answered for the
// wrong variant shows.
func TestVaryOtherFields(t *testing.T) {
	edge, o := startEdge(t, "")
	type step struct {
		header []string // request fields
		want   string   // the body of the variant
		hit    bool     // answered from the cache
	}
	testCases := []struct {
		desc  string
		vary  string
		steps []step
	}{
		{desc: "Accept-Language", vary: "Accept-Language", steps: []step{
			{header: []string{"Accept-Language: de"}, want: "de|"},
			{header: []string{"Accept-Language: fr"}, want: "fr|"},
			{header: []string{"Accept-Language: de"}, want: "de|", hit: true},
			{header: []string{"Accept-Language: fr"}, want: "fr|", hit: true},
		}},
		{desc: "a member in lower case names the same field", vary: "accept-language", steps: []step{
			{header: []string{"Accept-Language: de"}, want: "de|"},
			{header: []string{"Accept-Language: en-GB"}, want: "en-gb|"},
			{header: []string{"Accept-Language: en-GB"}, want: "en-gb|", hit: true},
		}},
		{desc: "a field the request lacks is a variant of its own", vary: "Accept-Language", steps: []step{
			{want: "|"},
			{header: []string{"Accept-Language: de"}, want: "de|"},
			{want: "|", hit: true},
		}},
		{desc: "Origin", vary: "Origin", steps: []step{
			{header: []string{"Origin: https://a.example"}, want: "|https://a.example"},
			{header: []string{"Origin: https://b.example"}, want: "|https://b.example"},
			{header: []string{"Origin: https://a.example"}, want: "|https://a.example", hit: true},
		}},
		{desc: "the second of two fields", vary: "Accept-Language, Origin", steps: []step{
			{header: []string{"Accept-Language: de", "Origin: https://a.example"}, want: "de|https://a.example"},
			{header: []string{"Accept-Language: de", "Origin: https://b.example"}, want: "de|https://b.example"},
			{header: []string{"Accept-Language: de", "Origin: https://a.example"}, want: "de|https://a.example", hit: true},
		}},
		{desc: "with Accept", vary: "Accept, Accept-Language", steps: []step{
			{header: []string{"Accept: text/html", "Accept-Language: de"}, want: "de|"},
			{header: []string{"Accept: text/html", "Accept-Language: fr"}, want: "fr|"},
			{header: []string{"Accept: text/html", "Accept-Language: de"}, want: "de|", hit: true},
		}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			p := unique("/api/v1/vary-fields")
			o.handle(p, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", readCC)
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Vary", test.vary)
				w.Write([]byte(strings.ToLower(r.Header.Get("Accept-Language")) + "|" + r.Header.Get("Origin")))
			})
			misses := 0
			for i, s := range test.steps {
				resp, body := edge.Do(t, "GET", p, "", s.header...)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d %q: status %d", i, s.header, resp.StatusCode)
				}
				if body != s.want {
					t.Errorf("request %d %q: body %q; want %q", i, s.header, body, s.want)
				}
				if cs := resp.Header.Get("Cache-Status"); strings.Contains(cs, "; hit") != s.hit {
					t.Errorf("request %d %q: Cache-Status %q; hit %v", i, s.header, cs, s.hit)
				}
				if !s.hit {
					misses++
				}
			}
			if n := o.count(p); n != misses {
				t.Errorf("origin requests %d; want %d (one per variant)", n, misses)
			}
		})
	}
}

// TestVaryValueCase: a secondary key lowercases a value only where the
// field's definition makes its case insignificant (RFC 9111 §4.1): requests
// differing only in the case of a case-sensitive field's value get
// answers of their own, while those differing only in the case of a
// language tag or charset share one. The origin echoes the field as it got
// it, so an answer stored for another variant shows.
func TestVaryValueCase(t *testing.T) {
	edge, o := startEdge(t, "")
	type step struct {
		value string // the request's value of the field
		want  string // the body of the variant
		hit   bool   // answered from the cache
	}
	testCases := []struct {
		desc  string
		field string
		steps []step
	}{
		{desc: "case-sensitive field", field: "X-Case", steps: []step{
			{value: "abc", want: "abc"},
			{value: "ABC", want: "ABC"},
			{value: "abc", want: "abc", hit: true},
			{value: "ABC", want: "ABC", hit: true},
		}},
		{desc: "case-sensitive field, mixed case", field: "X-Case", steps: []step{
			{value: "aBc", want: "aBc"},
			{value: "abc", want: "abc"},
			{value: "aBc", want: "aBc", hit: true},
		}},
		{desc: "Accept-Language is case-insensitive", field: "Accept-Language", steps: []step{
			{value: "de-DE", want: "de-DE"},
			{value: "DE-de", want: "de-DE", hit: true},
			{value: "fr", want: "fr"},
		}},
		{desc: "Accept-Charset is case-insensitive", field: "Accept-Charset", steps: []step{
			{value: "UTF-8", want: "UTF-8"},
			{value: "utf-8", want: "UTF-8", hit: true},
		}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			p := unique("/api/v1/vary-case")
			o.handle(p, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", readCC)
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Vary", test.field)
				w.Write([]byte(r.Header.Get(test.field)))
			})
			misses := 0
			for i, s := range test.steps {
				resp, body := edge.Do(t, "GET", p, "", test.field+": "+s.value)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d %q: status %d", i, s.value, resp.StatusCode)
				}
				if body != s.want {
					t.Errorf("request %d %q: body %q; want %q", i, s.value, body, s.want)
				}
				if cs := resp.Header.Get("Cache-Status"); strings.Contains(cs, "; hit") != s.hit {
					t.Errorf("request %d %q: Cache-Status %q; hit %v", i, s.value, cs, s.hit)
				}
				if !s.hit {
					misses++
				}
			}
			if n := o.count(p); n != misses {
				t.Errorf("origin requests %d; want %d (one per variant)", n, misses)
			}
		})
	}
}
