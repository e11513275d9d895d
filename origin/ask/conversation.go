package ask

import (
	"regexp"
	"strings"
)

// Follow-ups: NLWeb passes the conversation's earlier queries as prev. A
// reader who asked "When must Spanish firms issue e-invoices?" and then
// "and for the self-employed?" still means Spain. Without a language model,
// a follow-up is recognised by its opening ("and…", "what about…") or by
// naming nothing itself, and it inherits the countries and specifications
// of the latest earlier query that named any, and, when it asks for no
// kind of answer itself, the kind that query asked for. The question
// answered is reported in _meta.decontextualized_query.

// followUpOpening matches the openings of a question that continues the
// previous one.
var followUpOpening = regexp.MustCompile(`^(and|also|plus|but|same|what about|how about|what of|and what about|and how about|then|so)\b`)

// interrogative matches a question that says what it asks for.
var interrogative = regexp.MustCompile(`\b(when|what|which|who|whom|whose|why|how|where|is|are|does|do|did|can|could|will|would|has|have|should|must)\b`)

// maxFollowUpTerms is the most index terms a question naming no country or
// specification may have and still be read as a follow-up.
const maxFollowUpTerms = 3

// contextualize returns the question to answer for query given the earlier
// queries prev (oldest first), what it asks for, and whether it was read as
// a follow-up.
//
// A follow-up that names a country or specification of its own ("and what
// about Germany?" after "When does Belgium require B2B e-invoicing?") asks
// the earlier question of a new subject: the earlier query is restated with
// its countries (or specifications) replaced by the follow-up's, and the
// old ones are not carried over, since the reader has moved on from them.
// Entities of a kind the follow-up does not name are carried as before
// ("and in Germany?" after a question about Peppol BIS in Belgium keeps
// Peppol BIS).
func (ix *Index) contextualize(query string, prev []string) (string, question, bool) {
	asked := newQuestion(query)
	if len(prev) == 0 {
		return query, asked, false
	}
	lower := strings.TrimLeft(strings.ToLower(strings.TrimSpace(query)), `"'¿¡ `)
	own := ix.entities.find(query)
	opening := followUpOpening.MatchString(lower)
	if !opening && (len(own) > 0 || len(Terms(query)) > maxFollowUpTerms) {
		return query, asked, false
	}
	// Whether the follow-up asks something of its own is read past its
	// opening: "what about" continues, it does not ask "what".
	asksItself := interrogative.MatchString(withoutOpening(lower))
	for i := len(prev) - 1; i >= 0; i-- {
		theirs := ix.entities.find(prev[i])
		if len(theirs) == 0 {
			continue
		}
		var names []string
		replaced := false
		for _, t := range theirs {
			switch {
			case containsString(own, t):
			case namesKind(own, entityKind(t)):
				replaced = true // the follow-up names another of its kind
			case ix.entities.names[t] != "":
				names = append(names, ix.entities.names[t])
			}
		}
		if replaced {
			restated := ix.restate(prev[i], own)
			if asked.kind == askWhat && !asksItself {
				asked.inherit(newQuestion(restated))
			}
			return query + " (" + restated + ")", asked, true
		}
		if len(names) == 0 {
			continue
		}
		if asked.kind == askWhat && !asksItself {
			asked.inherit(newQuestion(prev[i]))
		}
		return query + " (" + strings.Join(names, ", ") + ")", asked, true
	}
	return query, asked, false
}

// withoutOpening returns lower without the follow-up openings it starts with
// ("and what about germany?" → "germany?").
func withoutOpening(lower string) string {
	for {
		loc := followUpOpening.FindStringIndex(lower)
		if loc == nil || loc[1] == 0 {
			return lower
		}
		lower = strings.TrimLeft(lower[loc[1]:], " ,")
	}
}

// entityKind is the kind of a synthetic entity term: "cc" for a country,
// "spec" for a specification.
func entityKind(term string) string {
	kind, _, _ := strings.Cut(term, ":")
	return kind
}

// namesKind reports whether terms hold an entity of kind.
func namesKind(terms []string, kind string) bool {
	for _, t := range terms {
		if entityKind(t) == kind {
			return true
		}
	}
	return false
}

// restate returns the earlier query with each mention of a country or
// specification of a kind that own names replaced by own's names of that
// kind, joined by "and": "When does Belgium require B2B e-invoicing?" with
// Germany is "When does Germany require B2B e-invoicing?". The words are
// the reader's own; only the subject changes.
func (ix *Index) restate(earlier string, own []string) string {
	var seq, raw []string
	var at []int // the byte offset of each word of seq in earlier
	cur := 0
	scanWords(earlier, func(w word) {
		if w.joined {
			return
		}
		i := strings.Index(earlier[cur:], w.raw)
		if i < 0 {
			i = 0 // cannot happen: the words are read from earlier in order
		}
		at = append(at, cur+i)
		cur += i + len(w.raw)
		seq, raw = append(seq, w.norm), append(raw, w.raw)
	})
	var b strings.Builder
	last := 0
	for _, f := range ix.entities.matches(seq, raw) {
		kind := entityKind(f.term)
		if !namesKind(own, kind) || containsString(own, f.term) {
			continue
		}
		start, end := at[f.start], at[f.end-1]+len(raw[f.end-1])
		if start < last {
			continue // inside a mention already replaced
		}
		var names []string
		for _, t := range own {
			if entityKind(t) == kind && ix.entities.names[t] != "" {
				names = append(names, ix.entities.names[t])
			}
		}
		b.WriteString(earlier[last:start])
		b.WriteString(strings.Join(names, " and "))
		last = end
	}
	b.WriteString(earlier[last:])
	return b.String()
}
