package negotiate

import (
	"strings"
	"testing"
)

func TestPreferred(t *testing.T) {
	offers := []string{"text/html", "text/markdown"}
	testCases := []struct {
		desc   string
		accept []string
		want   string
	}{
		{desc: "no Accept takes the first offer", accept: nil, want: "text/html"},
		{desc: "wildcard takes the first offer", accept: []string{"*/*"}, want: "text/html"},
		{desc: "markdown alone", accept: []string{"text/markdown"}, want: "text/markdown"},
		{desc: "markdown over wildcard", accept: []string{"text/markdown, */*;q=0.8"}, want: "text/markdown"},
		{desc: "html preferred by q", accept: []string{"text/markdown;q=0.5, text/html"}, want: "text/html"},
		{desc: "markdown preferred by q", accept: []string{"text/html;q=0.5", "text/markdown;q=0.9"}, want: "text/markdown"},
		{desc: "explicit beats wildcard at equal q", accept: []string{"text/*, text/markdown"}, want: "text/markdown"},
		{desc: "case-insensitive", accept: []string{"Text/Markdown"}, want: "text/markdown"},
		{desc: "q=0 refuses", accept: []string{"text/markdown;q=0, text/html;q=0"}, want: ""},
		{desc: "malformed q skipped", accept: []string{"text/markdown;q=2, text/html;q=0.1"}, want: "text/html"},
		{desc: "garbage ignored", accept: []string{";;,,,/,text/markdown ; q=1.000"}, want: "text/markdown"},
		{desc: "params other than q ignored", accept: []string{"text/markdown;charset=utf-8;variant=gfm"}, want: "text/markdown"},
		{desc: "unrelated type only", accept: []string{"image/png"}, want: ""},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			if got := Preferred(test.accept, offers); got != test.want {
				t.Errorf("Preferred(%q) = %q; want %q", test.accept, got, test.want)
			}
		})
	}
}

func TestEncoding(t *testing.T) {
	offers := []string{"zstd", "gzip"}
	testCases := []struct {
		desc string
		ae   []string
		want string
	}{
		{desc: "absent is identity", ae: nil, want: ""},
		{desc: "gzip only", ae: []string{"gzip"}, want: "gzip"},
		{desc: "x-gzip is gzip", ae: []string{"x-gzip"}, want: "gzip"},
		{desc: "server order on a tie", ae: []string{"gzip, deflate, br, zstd"}, want: "zstd"},
		{desc: "client q wins", ae: []string{"zstd;q=0.5, gzip"}, want: "gzip"},
		{desc: "star covers unnamed", ae: []string{"*"}, want: "zstd"},
		{desc: "star with refusal", ae: []string{"zstd;q=0, *"}, want: "gzip"},
		{desc: "identity only", ae: []string{"identity"}, want: ""},
		{desc: "all refused", ae: []string{"*;q=0"}, want: ""},
		{desc: "malformed q skipped", ae: []string{"zstd;q=abc, gzip;q=0.2"}, want: "gzip"},
		{desc: "case-insensitive", ae: []string{"GZIP"}, want: "gzip"},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			if got := Encoding(test.ae, offers); got != test.want {
				t.Errorf("Encoding(%q) = %q; want %q", test.ae, got, test.want)
			}
		})
	}
}

func TestElementsBounded(t *testing.T) {
	// A header of a million elements costs at most maxElements of work.
	huge := strings.Repeat("a/b,", 1_000_000) + "text/markdown"
	if got := Preferred([]string{huge}, []string{"text/markdown"}); got != "" {
		t.Errorf("element beyond the bound was read: %q", got)
	}
}

func TestNoAllocs(t *testing.T) {
	accept := []string{"text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1"}
	ae := []string{"gzip, deflate, br, zstd"}
	offers := []string{"text/html", "text/markdown"}
	codings := []string{"zstd", "gzip"}
	if n := testing.AllocsPerRun(100, func() {
		Preferred(accept, offers)
		Encoding(ae, codings)
	}); n != 0 {
		t.Errorf("allocations per run = %v; want 0", n)
	}
}

func FuzzAccept(f *testing.F) {
	for _, s := range []string{"text/markdown", "*/*;q=0.1", "text/*;q=0.5,text/markdown;q=1.0", ";;,", "a/b;q=1.0000", "text/markdown;q=0."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := MediaType([]string{s}, "text/markdown")
		if m.Q < 0 || m.Q > 1 || m.Specificity < 0 || m.Specificity > 3 {
			t.Fatalf("MediaType(%q) = %+v out of range", s, m)
		}
		if p := Preferred([]string{s}, []string{"text/html", "text/markdown"}); p != "" && p != "text/html" && p != "text/markdown" {
			t.Fatalf("Preferred(%q) = %q, not an offer", s, p)
		}
	})
}

func FuzzAcceptEncoding(f *testing.F) {
	for _, s := range []string{"gzip", "zstd;q=0.5, gzip", "*;q=0", "x-gzip, identity;q=0", ",,;q=", "br;q=1.001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if e := Encoding([]string{s}, []string{"zstd", "gzip"}); e != "" && e != "zstd" && e != "gzip" {
			t.Fatalf("Encoding(%q) = %q, not an offer", s, e)
		}
	})
}
