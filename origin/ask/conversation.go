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
	for i := len(prev) - 1; i >= 0; i-- {
		var names []string
		for _, t := range ix.entities.find(prev[i]) {
			if name := ix.entities.names[t]; name != "" && !containsString(own, t) {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		if asked.kind == askWhat && !interrogative.MatchString(strings.TrimPrefix(lower, "and ")) {
			asked.inherit(newQuestion(prev[i]))
		}
		return query + " (" + strings.Join(names, ", ") + ")", asked, true
	}
	return query, asked, false
}
