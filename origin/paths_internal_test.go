package origin

import (
	"errors"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/httpheader"
)

func TestCanonicalPath(t *testing.T) {
	testCases := []struct {
		desc string
		path string
		want string
		err  error
	}{
		{desc: "root", path: "/", want: "/"},
		{desc: "page", path: "/2026/11/a-b/", want: "/2026/11/a-b/"},
		{desc: "document", path: "/feeds/all.xml", want: "/feeds/all.xml"},
		{desc: "sub-delims, colon and at sign stay", path: "/a!$&'()*+,;=:@b", want: "/a!$&'()*+,;=:@b"},
		{desc: "encoded letter", path: "/%61rticles", want: "/articles"},
		{desc: "encoded digit, hyphen, dot, underscore, tilde", path: "/%32%2D%2E%5F%7E", want: "/2-._~"},
		{desc: "lowercase hex of unreserved", path: "/a%2db", want: "/a-b"},
		{desc: "other octets keep their escape, in uppercase hex", path: "/caf%c3%a9%20x", want: "/caf%C3%A9%20x"},
		{desc: "escaped percent stays", path: "/100%25", want: "/100%25"},
		{desc: "stray percent is encoded", path: "/100%", want: "/100%25"},
		{desc: "percent before one hex digit", path: "/%4g", want: "/%254g"},
		{desc: "bytes a path may not hold are encoded", path: "/a\"b<c>\\", want: "/a%22b%3Cc%3E%5C"},
		{desc: "UTF-8 sent raw is encoded", path: "/ä", want: "/%C3%A4"},
		{desc: "dot segment", path: "/a/./b", want: "/a/b"},
		{desc: "dot-dot segment", path: "/a/b/../c", want: "/a/c"},
		{desc: "dot-dot above the root", path: "/../../a", want: "/a"},
		{desc: "trailing dot", path: "/a/.", want: "/a/"},
		{desc: "trailing dot-dot", path: "/a/b/..", want: "/a/"},
		{desc: "dot-dot to the root", path: "/a/..", want: "/"},
		{desc: "only dot-dot", path: "/..", want: "/"},
		{desc: "encoded dot-dot", path: "/a/%2e%2E/b", want: "/b"},
		{desc: "half-encoded dot-dot", path: "/a/.%2e/b", want: "/b"},
		{desc: "dots that are no dot segment", path: "/a/.../b..c/.d", want: "/a/.../b..c/.d"},
		{desc: "encoded dot-dot and slash is one segment", path: "/a/%2e%2e%2fb", err: errEncodedSlash},
		{desc: "encoded slash", path: "/a%2Fb", err: errEncodedSlash},
		{desc: "encoded slash, lowercase", path: "/a%2fb", err: errEncodedSlash},
		{desc: "encoded slash as the last byte", path: "/a%2F", err: errEncodedSlash},
		{desc: "encoded slash in a dot-dot's segment", path: "/a/..%2F/b", err: errEncodedSlash},
		{desc: "doubled slash", path: "/a//b", err: errEmptySegment},
		{desc: "leading doubled slash", path: "//evil.example", err: errEmptySegment},
		{desc: "doubled trailing slash", path: "/a//", err: errEmptySegment},
		{desc: "doubled slash after dot-dot", path: "/..//evil.example", err: errEmptySegment},
		{desc: "doubled slash after dot", path: "/.//evil.example", err: errEmptySegment},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := canonicalPath(tc.path)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("canonicalPath(%q) = %q, %v; want %q, %v", tc.path, got, err, tc.want, tc.err)
			}
		})
	}
}

// decodeLoosely decodes every well-formed escape of s and keeps any other
// byte, a stray "%" included: what a segment means, whichever way it was
// spelled.
func decodeLoosely(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && httpheader.IsHex(s[i+1]) && httpheader.IsHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FuzzCanonicalPath: for any path, canonicalPath either refuses it for an
// encoded slash or an empty segment that is really there, or returns a
// path that is canonical itself (a second pass changes nothing), starts
// with one slash, holds no dot segment, no empty segment but a trailing
// one, no escape of an unreserved character and no lowercase hex; and,
// when the path had no dot segment, means the same segments.
func FuzzCanonicalPath(f *testing.F) {
	for _, p := range []string{
		"/", "/api/v1/articles/a-b", "/2026/11/a%2Fb/", "/%2e%2e/", "/a/../b", "//evil.example", "/..//x",
		"/a%2fb", "/%61", "/%ff%FE", "/100%", "/ä", "/a/.", "/a b", "/.%2E/", "/a\\b", "/%2F%2Fevil.example",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "/") {
			return // requestPath gives every path its slash
		}
		canon, err := canonicalPath(p)
		if err != nil {
			switch {
			case errors.Is(err, errEmptySegment) && !strings.Contains(p, "//"):
				t.Fatalf("%q refused for an empty segment it does not have", p)
			case errors.Is(err, errEncodedSlash) && !strings.Contains(strings.ToUpper(p), "%2F"):
				t.Fatalf("%q refused for an encoded slash it does not have", p)
			}
			return
		}
		if again, err := canonicalPath(canon); err != nil || again != canon {
			t.Fatalf("canonicalPath(%q) = %q, which is not canonical: %q, %v", p, canon, again, err)
		}
		if !strings.HasPrefix(canon, "/") || strings.HasPrefix(canon, "//") {
			t.Fatalf("canonicalPath(%q) = %q", p, canon)
		}
		segs := strings.Split(canon[1:], "/")
		for i, s := range segs {
			if s == "." || s == ".." || (s == "" && i < len(segs)-1) {
				t.Fatalf("canonicalPath(%q) = %q, with segment %q", p, canon, s)
			}
			for j := 0; j < len(s); j++ {
				c := s[j]
				if c == '%' {
					if j+2 >= len(s) || !httpheader.IsHex(s[j+1]) || !httpheader.IsHex(s[j+2]) {
						t.Fatalf("canonicalPath(%q) = %q, with a stray %%", p, canon)
					}
					if unreserved(unhex(s[j+1])<<4|unhex(s[j+2])) || strings.ToUpper(s[j:j+3]) != s[j:j+3] {
						t.Fatalf("canonicalPath(%q) = %q, with escape %s", p, canon, s[j:j+3])
					}
					j += 2
				} else if !pathChar(c) {
					t.Fatalf("canonicalPath(%q) = %q, with byte %q", p, canon, c)
				}
			}
		}
		in := strings.Split(p[1:], "/")
		for _, s := range in {
			if d := decodeLoosely(s); d == "." || d == ".." {
				return // segments removed: compared by the cases above
			}
		}
		if len(in) != len(segs) {
			t.Fatalf("canonicalPath(%q) = %q: %d segments, want %d", p, canon, len(segs), len(in))
		}
		for i := range in {
			if decodeLoosely(in[i]) != decodeLoosely(segs[i]) {
				t.Fatalf("canonicalPath(%q) = %q: segment %d means %q, want %q", p, canon, i, decodeLoosely(segs[i]), decodeLoosely(in[i]))
			}
		}
	})
}
