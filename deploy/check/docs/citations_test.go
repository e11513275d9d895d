package docs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

var (
	// entryHeading and entryLead are what a citation may name: a heading of
	// docs/decisions.md, or the bold lead of one of its entries.
	entryHeading = regexp.MustCompile(`(?m)^#+ +(.+)$`)
	entryLead    = regexp.MustCompile(`(?m)^ *- \*\*(.+?)\*\*`)

	// citation finds "decisions.md, name", "decisions.md "name"" and
	// "decisions.md (name)", quoted or not, in text whose comment markers
	// and line breaks have been taken out (commentText). An unquoted name
	// runs to the closing parenthesis, a semicolon, a quote, a table cell's
	// end or the end of a sentence.
	citation = regexp.MustCompile(`decisions\.md(?:,? *["“]([^"”]+)["”]|, *([^"“ <](?:[^);"”|.]|\.[^ ])*)|,? *\( *["“]?([^)"”]+))`)

	// commentMarker is what opens a comment or quote line in the files
	// searched: Go, shell, YAML, Caddyfile, Lua, Markdown.
	commentMarker = regexp.MustCompile(`^\s*(//|#+|--|\*|>)?\s*`)
)

// decisionNames are the headings and bold entry leads of docs/decisions.md,
// normalised (normName).
func decisionNames(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "decisions.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, re := range []*regexp.Regexp{entryHeading, entryLead} {
		for _, m := range re.FindAllSubmatch(b, -1) {
			names = append(names, normName(string(m[1])))
		}
	}
	if len(names) < 50 {
		t.Fatalf("docs/decisions.md: found only %d headings and entries", len(names))
	}
	return names
}

// normName folds what a citation may spell differently from the entry:
// case, backquotes, curly apostrophes, runs of spaces, a closing period.
func normName(s string) string {
	s = strings.NewReplacer("`", "", "’", "'", "*", "").Replace(strings.ToLower(s))
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimRight(s, ".: ")
}

// names reports whether cited names an entry: it is an entry's name, or
// the start of one up to a word's end ("Edge cache storage" names "Edge
// cache storage: byte records in freecache, not Go objects in ristretto").
func names(entries []string, cited string) bool {
	for _, e := range entries {
		if e == cited {
			return true
		}
		if rest, ok := strings.CutPrefix(e, cited); ok && rest != "" && strings.ContainsRune(" ,:;(.", rune(rest[0])) {
			return true
		}
	}
	return false
}

// commentText joins a file's lines with their comment markers removed, so
// that a citation wrapped over two comment lines reads as one.
func commentText(b []byte) string {
	var sb strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		sb.WriteString(commentMarker.ReplaceAllString(line, ""))
		sb.WriteByte(' ')
	}
	return sb.String()
}

// eachCitingFile calls f with the path (relative to root) and the text,
// comment markers taken out (commentText), of every text file of the
// repository that mentions one of the docs; build output, dependencies and
// this file's own patterns are skipped.
func eachCitingFile(t *testing.T, root string, f func(rel, text string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".run", ".test", "bin", "out", "fuzz":
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 || !bytes.Contains(b, []byte(".md")) && !bytes.Contains(b, []byte("spec")) {
			return nil // a binary, or no citation
		}
		rel, _ := filepath.Rel(root, path)
		if rel == filepath.Join("deploy", "check", "docs", "citations_test.go") {
			return nil
		}
		f(rel, commentText(b))
		return nil
	})
	if err != nil {
		t.Fatalf("reading the repository: %v", err)
	}
}

// TestDecisionCitations: every "docs/decisions.md, <name>" or
// "docs/decisions.md (<name>)" in the repository's code, configuration and
// documents names a heading or a bold entry of docs/decisions.md, as that
// file's opening says comments cite it. A citation may list several names
// separated by commas.
func TestDecisionCitations(t *testing.T) {
	root := repo.Root(t)
	entries := decisionNames(t, root)
	eachCitingFile(t, root, func(rel, text string) {
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			cited := normName(m[1] + m[2] + m[3])
			if cited == "" || names(entries, cited) {
				continue
			}
			all := true
			for _, part := range strings.Split(cited, ", ") {
				all = all && names(entries, normName(part))
			}
			if !all {
				t.Errorf("%s: %q names no heading or bold entry of docs/decisions.md", rel, strings.TrimSpace(m[0]))
			}
		}
	})
}

// sectionNumber is a numbered section of docs/architecture.md or of the
// service contract. Neither is numbered in the repository (the contract is
// not in it at all), so such a number sends the reader nowhere.
var sectionNumber = regexp.MustCompile(`(architecture\.md|\bspec)[^A-Za-z]{0,6}§[0-9.]*`)

// TestNoSectionNumbers: docs/architecture.md is cited by a heading's name
// and the contract by what it promises, never by a section number.
func TestNoSectionNumbers(t *testing.T) {
	eachCitingFile(t, repo.Root(t), func(rel, text string) {
		for _, m := range sectionNumber.FindAllString(text, -1) {
			t.Errorf("%s: %q cites a section number; cite the heading by its name", rel, m)
		}
	})
}
