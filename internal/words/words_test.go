package words

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScan(t *testing.T) {
	testCases := []struct {
		desc, text string
		want       []Word
	}{
		{desc: "plain words, case and punctuation", text: "Peppol, the NETWORK.",
			want: []Word{{Norm: "peppol", Raw: "Peppol"}, {Norm: "the", Raw: "the"}, {Norm: "network", Raw: "NETWORK"}}},
		{desc: "versions and amounts stay whole", text: "BIS 3.0.20 for 800,000 firms",
			want: []Word{{Norm: "bis", Raw: "BIS"}, {Norm: "3.0.20", Raw: "3.0.20"}, {Norm: "for", Raw: "for"}, {Norm: "800000", Raw: "800,000"}, {Norm: "firms", Raw: "firms"}}},
		{desc: "a full stop after a number ends it", text: "in 2026.",
			want: []Word{{Norm: "in", Raw: "in"}, {Norm: "2026", Raw: "2026"}}},
		{desc: "possessive dropped, typographic apostrophe too", text: "Peppol's Poland’s",
			want: []Word{{Norm: "peppol", Raw: "Peppol's"}, {Norm: "poland", Raw: "Poland’s"}}},
		{desc: "diacritics folded", text: "eRačun",
			want: []Word{{Norm: "eracun", Raw: "eRačun"}}},
		{desc: "a capital whose lowercase has a mark", text: "İstanbul",
			want: []Word{{Norm: "istanbul", Raw: "İstanbul"}}},
		{desc: "a compound: parts, then joined", text: "e-invoicing",
			want: []Word{{Norm: "e", Raw: "e", Part: true}, {Norm: "invoicing", Raw: "invoicing", Part: true}, {Norm: "einvoicing", Raw: "einvoicing", Joined: true}}},
		{desc: "Unicode hyphen joins", text: "B2B‐only",
			want: []Word{{Norm: "b2b", Raw: "B2B", Part: true}, {Norm: "only", Raw: "only", Part: true}, {Norm: "b2bonly", Raw: "b2bonly", Joined: true}}},
		{desc: "an en dash is a range", text: "2026–2028",
			want: []Word{{Norm: "2026", Raw: "2026"}, {Norm: "2028", Raw: "2028"}}},
		{desc: "a trailing hyphen joins nothing", text: "pre- and post-",
			want: []Word{{Norm: "pre", Raw: "pre"}, {Norm: "and", Raw: "and"}, {Norm: "post", Raw: "post"}}},
		{desc: "nothing of a word", text: " -- … ", want: nil},
		{desc: "a long run is cut", text: strings.Repeat("a", 100),
			want: []Word{{Norm: strings.Repeat("a", MaxBytes), Raw: strings.Repeat("a", MaxBytes)}}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			var got []Word
			Scan(tc.text, func(w Word) bool { got = append(got, w); return true })
			if !slices.Equal(got, tc.want) {
				t.Errorf("Scan(%q) =\n%+v\nwant\n%+v", tc.text, got, tc.want)
			}
		})
	}
}

// TestScanStops checks that Scan stops at the first false from fn, inside a
// compound too.
func TestScanStops(t *testing.T) {
	for _, tc := range []struct {
		desc, text string
		after      int
	}{
		{desc: "plain words", text: "one two three", after: 2},
		{desc: "inside a compound", text: "e-invoicing mandate", after: 1},
		{desc: "at the joined form", text: "e-invoicing mandate", after: 3},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			n := 0
			Scan(tc.text, func(Word) bool { n++; return n < tc.after })
			if n != tc.after {
				t.Errorf("fn called %d times, want %d", n, tc.after)
			}
		})
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, tc := range []struct {
		desc, in string
		max      int
		want     string
	}{
		{desc: "short enough", in: "abc", max: 3, want: "abc"},
		{desc: "cut between characters", in: "abcdef", max: 4, want: "abcd"},
		{desc: "never inside a character", in: "ačč", max: 4, want: "ač"},
	} {
		if got := TruncateUTF8(tc.in, tc.max); got != tc.want {
			t.Errorf("%s: TruncateUTF8(%q, %d) = %q, want %q", tc.desc, tc.in, tc.max, got, tc.want)
		}
	}
}

// FuzzScan checks the invariants every caller relies on: each word is valid
// UTF-8, non-empty, at most MaxBytes, its Norm is Normalize(Raw) (joined
// forms apart), and Normalize is idempotent.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"e-invoicing in the EU", "3.0.20, 800,000", "Poland’s KSeF", "a\u0301-b", "x‑y‐z–w", "\xff-a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		Scan(text, func(w Word) bool {
			if w.Norm == "" || len(w.Norm) > MaxBytes*4 || !utf8.ValidString(w.Norm) {
				t.Fatalf("word %+v of %q: empty, too long or not UTF-8", w, text)
			}
			if len(w.Raw) > MaxBytes {
				t.Fatalf("word %+v of %q: raw longer than %d bytes", w, text, MaxBytes)
			}
			if !w.Joined && Normalize(w.Raw) != w.Norm {
				t.Fatalf("word %+v of %q: Normalize(raw) = %q", w, text, Normalize(w.Raw))
			}
			if Normalize(w.Norm) != w.Norm {
				t.Fatalf("word %+v of %q: Normalize not idempotent: %q", w, text, Normalize(w.Norm))
			}
			return true
		})
	})
}
