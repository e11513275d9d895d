package ask

import (
	"slices"
	"strings"
	"unicode"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Entities: a question that names a country, a section or a tracked
// specification should find the articles the editors filed under it, even
// when an article's text names it differently ("German businesses" for an
// article tagged de, "PINT AE" for one that links the pint-ae spec). The
// names come from the registries and from the editors' aliases
// (content/aliases.yaml: demonyms, informal names, national platforms).
//
// Each article's entities field holds one synthetic term per country code
// ("cc:de") and per linked specification ("spec:pint-ae"), plus the words of
// its section's name. Synthetic terms contain ":", which the analyzer never
// produces, so they cannot collide with words. A question gets the same
// synthetic terms when it names a country (its name, its demonym, a common
// alias or its code written in capitals) or a specification (its name, the
// short form in its name's parentheses, or its slug read as words).

func countryTerm(code string) string { return "cc:" + code }
func specTerm(slug string) string    { return "spec:" + slug }

// sectionWords are the words a section is known by, beyond its name.
var sectionWords = map[string]string{
	"mandates": "mandates",
	"network":  "network",
	"vendors":  "vendors",
	"policy":   "policy",
	"specs":    "specs specifications",
	"guides":   "guides",
}

// phrase is one alias: a sequence of normalised words and the synthetic
// term it stands for.
type phrase struct {
	words []string
	term  string
}

// entityMatcher finds country and specification names in a question.
type entityMatcher struct {
	// byFirst maps an alias's first word to the aliases that start with it.
	byFirst map[string][]phrase
	// codes maps a country code in capitals, or a short abbreviation as
	// written, to its synthetic term.
	codes map[string]string
	// names maps a synthetic term to the registry name of its country or
	// specification, for the follow-ups of a conversation.
	names map[string]string
}

func newEntityMatcher(countries []*content.Country, specs []*content.Spec) *entityMatcher {
	m := &entityMatcher{byFirst: map[string][]phrase{}, codes: map[string]string{}, names: map[string]string{}}
	for _, c := range countries {
		code := strings.ToLower(c.Code)
		term := countryTerm(code)
		m.codes[strings.ToUpper(code)] = term
		m.names[term] = c.Name
		m.add(c.Name, term)
		for _, a := range c.Aliases {
			// A short abbreviation ("UK", "KSA", "US", "SAT") counts only
			// as written, like a country code: in lower case it is often an
			// English word.
			if abbreviation(a) {
				m.codes[a] = term
				continue
			}
			m.add(a, term)
		}
	}
	for _, s := range specs {
		term := specTerm(s.Slug)
		m.names[term] = s.Name
		for _, a := range specAliases(s) {
			m.add(a, term)
		}
	}
	return m
}

// add registers an alias, unless it is empty, a lone stop word, or has no
// word with a letter (the "3" of "KSeF FA(3)" names nothing).
func (m *entityMatcher) add(alias, term string) {
	var words []string
	letters := false
	scanWords(alias, func(w word) {
		if !w.joined {
			words = append(words, w.norm)
			if strings.IndexFunc(w.norm, unicode.IsLetter) >= 0 {
				letters = true
			}
		}
	})
	if !letters || (len(words) == 1 && (stopWords[words[0]] || len(words[0]) < 2)) {
		return
	}
	for _, p := range m.byFirst[words[0]] {
		if p.term == term && strings.Join(p.words, " ") == strings.Join(words, " ") {
			return
		}
	}
	m.byFirst[words[0]] = append(m.byFirst[words[0]], phrase{words: words, term: term})
}

// abbreviation reports whether alias is one word of at most four letters
// and digits with two capitals or more ("UK", "KSA", "NFe", "SdI").
func abbreviation(alias string) bool {
	if len(alias) > 4 || len(alias) < 2 {
		return false
	}
	upper := 0
	for _, r := range alias {
		switch {
		case unicode.IsUpper(r):
			upper++
		case unicode.IsLower(r) || unicode.IsDigit(r):
		default:
			return false
		}
	}
	return upper >= 2
}

// specAliases derives the names a reader might use for a specification from
// its registry entry: the full name, the name without its parenthesis, the
// parenthesis alone ("PINT" in "Peppol International Invoice (PINT)"), each
// side of a slash ("ZUGFeRD / Factur-X"), the slug read as words
// ("pint-ae" → "pint ae"), and each of these without a leading "Peppol"
// when what is left is still specific (two words or more, or a version).
func specAliases(s *content.Spec) []string {
	var out []string
	add := func(a string) {
		a = strings.TrimSpace(a)
		if a != "" {
			out = append(out, a)
		}
	}
	name := s.Name
	add(name)
	if i := strings.Index(name, "("); i > 0 {
		add(name[:i])
		if j := strings.Index(name[i:], ")"); j > 0 {
			add(name[i+1 : i+j])
		}
	}
	for _, part := range strings.Split(name, " / ") {
		if part != name {
			add(part)
		}
	}
	add(strings.ReplaceAll(s.Slug, "-", " "))
	for _, a := range s.Aliases {
		add(a)
	}
	for _, a := range out {
		rest, ok := strings.CutPrefix(strings.ToLower(a), "peppol ")
		if !ok {
			continue
		}
		if i := strings.Index(rest, "("); i > 0 {
			rest = rest[:i]
		}
		if len(strings.Fields(rest)) >= 2 || strings.ContainsAny(rest, "0123456789") {
			out = append(out, rest)
		}
	}
	return out
}

// find returns the synthetic terms of the countries and specifications text
// names.
func (m *entityMatcher) find(text string) []string {
	var seq, raw []string
	scanWords(text, func(w word) {
		if !w.joined {
			seq = append(seq, w.norm)
			raw = append(raw, w.raw)
		}
	})
	return m.match(seq, raw)
}

// match returns the synthetic terms a question's words name. seq is the
// question's words in order (normalised, joined compounds left out); raw are
// the same words as written. Every alias found counts, except one that lies
// inside a longer alias of the same kind: "PINT AE" names the pint-ae spec,
// not also the PINT base spec, while "Australia and New Zealand" (the
// parenthesis of PINT A-NZ's name) still names both countries as well.
func (m *entityMatcher) match(seq, raw []string) []string { return m.matchAt(seq, raw, nil) }

// matchAt is match for aliases that start at the positions at only, or at
// every position when at is nil. The index build, which knows which of its
// words can start an alias or are a code, passes those positions: the
// others find nothing, so the terms are the same, for far fewer lookups.
func (m *entityMatcher) matchAt(seq, raw []string, at []int) []string {
	var terms []string
	for _, f := range m.matchesAt(seq, raw, at) {
		if !slices.Contains(terms, f.term) {
			terms = append(terms, f.term)
		}
	}
	return terms
}

// found is an alias found in a question: the words seq[start:end] name
// term.
type found struct {
	start, end int
	term       string
}

// matches returns the aliases found in a question's words (see match), with
// where they are.
func (m *entityMatcher) matches(seq, raw []string) []found { return m.matchesAt(seq, raw, nil) }

// matchesAt is matches for aliases that start at the positions at only (in
// increasing order), or at every position when at is nil (see matchAt).
func (m *entityMatcher) matchesAt(seq, raw []string, at []int) []found {
	var all []found
	if at == nil {
		for i := range seq {
			all = m.foundAt(all, seq, raw, i)
		}
	} else {
		for _, i := range at {
			all = m.foundAt(all, seq, raw, i)
		}
	}
	var out []found
	for _, f := range all {
		kind, _, _ := strings.Cut(f.term, ":")
		inside := false
		for _, g := range all {
			gk, _, _ := strings.Cut(g.term, ":")
			if gk == kind && g.start <= f.start && f.end <= g.end && g.end-g.start > f.end-f.start {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, f)
		}
	}
	return out
}

// foundAt appends to all the aliases that start at seq[i].
func (m *entityMatcher) foundAt(all []found, seq, raw []string, i int) []found {
	for _, p := range m.byFirst[seq[i]] {
		if len(p.words) > len(seq)-i {
			continue
		}
		ok := true
		for k, w := range p.words {
			if seq[i+k] != w {
				ok = false
				break
			}
		}
		if ok {
			all = append(all, found{i, i + len(p.words), p.term})
		}
	}
	// A country code counts only in capitals: "be", "it", "in", "no"
	// and "us" are English words too. So do short abbreviations.
	if term, ok := m.codes[raw[i]]; ok {
		all = append(all, found{i, i + 1, term})
	}
	return all
}

// aliasWords returns, for each country or specification the question names
// (as the position of its synthetic term in q.terms), the positions of the
// question's words that named it: a sentence that names ZUGFeRD covers
// "German-French hybrid format" in a question that says so, as one that
// names Belgium covers "Belgian".
func (ix *Index) aliasWords(q *query, text string) map[int][]int {
	if !q.entities {
		return nil
	}
	var seq, raw []string
	var ids []int32      // the term id of each word of seq, or -1
	type joined struct { // a compound's joined form and its parts
		id         int32
		start, end int
	}
	var joins []joined
	scanWords(text, func(w word) {
		id, ok := ix.surfaceID(w.norm)
		if !ok {
			id = -1
		}
		if w.joined {
			// The parts are the last words, which spell it.
			start, rest := len(seq), w.norm
			for start > 0 && strings.HasSuffix(rest, seq[start-1]) && rest != "" {
				rest = strings.TrimSuffix(rest, seq[start-1])
				start--
			}
			joins = append(joins, joined{id, start, len(seq)})
			return
		}
		seq, raw, ids = append(seq, w.norm), append(raw, w.raw), append(ids, id)
	})
	out := map[int][]int{}
	add := func(e int, id int32) {
		if id < 0 {
			return
		}
		if p, ok := q.pos[id]; ok && q.standsFor(p) != e && !containsInt(out[e], q.standsFor(p)) {
			out[e] = append(out[e], q.standsFor(p))
		}
	}
	for _, f := range ix.entities.matches(seq, raw) {
		id, ok := ix.termID(f.term)
		if !ok {
			continue
		}
		e, ok := q.pos[id]
		if !ok {
			continue
		}
		for i := f.start; i < f.end; i++ {
			add(e, ids[i])
		}
		for _, j := range joins {
			if f.start <= j.start && j.end <= f.end {
				add(e, j.id)
			}
		}
	}
	return out
}
