package content

import "strings"

// MaxSlugLength bounds slugs so they fit comfortably in paths and Redis keys.
const MaxSlugLength = 120

// SlugPattern is the rule ValidSlug applies, as a regular expression for
// schemas (openapi.json's Slug, the MCP tools' inputs).
const SlugPattern = "^[a-z0-9]+(-[a-z0-9]+)*$"

// ValidSlug reports whether s is a slug: lowercase ASCII words of letters
// and digits joined by single hyphens, at most MaxSlugLength bytes. It is
// the one check of the loader, the API, the pages and the edge's markdown
// twin; it allocates nothing, as it runs on every request that names one.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlugLength || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
