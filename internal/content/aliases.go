package content

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"unicode"
)

// aliasesFile is aliases.yaml: the other names readers use for the tracked
// countries and specs, and groups of words that mean the same to them. It is
// optional; when present it must cover every country and spec.
type aliasesFile struct {
	Countries map[string][]string `yaml:"countries"`
	Specs     map[string][]string `yaml:"specs"`
	Terms     [][]string          `yaml:"terms"`
}

const aliasesName = "aliases.yaml"

// readAliases reads aliases.yaml into the countries' and specs' Aliases and
// returns its synonym groups. An alias must name one entry only, and a word
// belongs to one group only: either would make a question ambiguous.
func (l *loader) readAliases(countries map[string]*Country, specs map[string]*Spec) [][]string {
	if _, err := fs.Stat(l.fsys, aliasesName); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var f aliasesFile
	before := len(l.errs)
	l.readYAML(aliasesName, &f)
	if len(l.errs) > before {
		return nil
	}
	owner := map[string]string{} // folded alias → the entry it names
	claim := func(field, entry string, aliases []string) []string {
		var out []string
		for i, a := range aliases {
			a = strings.TrimSpace(a)
			at := fmt.Sprintf("%s[%d]", field, i)
			if a == "" || strings.IndexFunc(a, unicode.IsLetter) < 0 {
				l.fail(aliasesName, at, "must contain a letter, got %q", a)
				continue
			}
			key := strings.ToLower(a)
			if prev, ok := owner[key]; ok && prev != entry {
				l.fail(aliasesName, at, "%q already names %s", a, prev)
				continue
			}
			owner[key] = entry
			out = append(out, a)
		}
		return out
	}
	for code, aliases := range f.Countries {
		c := countries[code]
		if c == nil {
			l.fail(aliasesName, "countries."+code, "not a country of countries.yaml")
			continue
		}
		c.Aliases = claim("countries."+code, "country "+code, aliases)
	}
	for slug, aliases := range f.Specs {
		s := specs[slug]
		if s == nil {
			l.fail(aliasesName, "specs."+slug, "not a spec of specs.yaml")
			continue
		}
		s.Aliases = claim("specs."+slug, "spec "+slug, aliases)
	}
	for _, code := range sortedKeys(countries) {
		if len(f.Countries[code]) == 0 {
			l.fail(aliasesName, "countries."+code, "no aliases: every country of countries.yaml needs its demonym and other names")
		}
	}
	for _, slug := range sortedKeys(specs) {
		if len(f.Specs[slug]) == 0 {
			l.fail(aliasesName, "specs."+slug, "no aliases: every spec of specs.yaml needs its short forms")
		}
	}
	group := map[string]int{} // folded word → its group
	var terms [][]string
	for i, g := range f.Terms {
		at := fmt.Sprintf("terms[%d]", i)
		if len(g) < 2 {
			l.fail(aliasesName, at, "a group needs at least two words, got %d", len(g))
			continue
		}
		var words []string
		for k, w := range g {
			w = strings.TrimSpace(w)
			key := strings.ToLower(w)
			switch prev, dup := group[key]; {
			case w == "" || strings.IndexFunc(w, unicode.IsLetter) < 0:
				l.fail(aliasesName, fmt.Sprintf("%s[%d]", at, k), "must contain a letter, got %q", w)
				continue
			case dup:
				l.fail(aliasesName, fmt.Sprintf("%s[%d]", at, k), "%q is already in terms[%d]", w, prev)
				continue
			}
			group[key] = i
			words = append(words, w)
		}
		terms = append(terms, words)
	}
	return terms
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
