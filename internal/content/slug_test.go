package content

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidSlug checks ValidSlug against SlugPattern and the length bound.
func TestValidSlug(t *testing.T) {
	pattern := regexp.MustCompile(SlugPattern)
	testCases := []struct {
		desc string
		slug string
		want bool
	}{
		{desc: "words", slug: "belgium-b2b-mandate", want: true},
		{desc: "one word", slug: "peppol", want: true},
		{desc: "digits", slug: "en-16931", want: true},
		{desc: "empty", slug: "", want: false},
		{desc: "leading hyphen", slug: "-a", want: false},
		{desc: "trailing hyphen", slug: "a-", want: false},
		{desc: "double hyphen", slug: "a--b", want: false},
		{desc: "uppercase", slug: "A-b", want: false},
		{desc: "non-ASCII", slug: "ärticle", want: false},
		{desc: "slash", slug: "a/b", want: false},
		{desc: "NUL", slug: "a\x00b", want: false},
		{desc: "at the bound", slug: strings.Repeat("a", MaxSlugLength), want: true},
		{desc: "over the bound", slug: strings.Repeat("a", MaxSlugLength+1), want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ValidSlug(tc.slug); got != tc.want {
				t.Errorf("ValidSlug(%q) = %v, want %v", tc.slug, got, tc.want)
			}
			if len(tc.slug) <= MaxSlugLength && pattern.MatchString(tc.slug) != tc.want {
				t.Errorf("SlugPattern disagrees on %q", tc.slug)
			}
		})
	}
}
