package ask

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Question-aware answers: a reader who asks "when" wants a date, one who asks
// "how much" an amount, one who asks "which authority" a name. The question
// is classified by its opening words, and the summary leads with the article
// sentence that carries a span of that type close to the question's words.
// Nothing is generated: the span is found in a sentence quoted verbatim.

// question is what the summary needs to know of the question beyond its
// terms: the kind of answer it asks for and its text, lowercased.
type question struct {
	kind  questionKind
	lower string
}

func newQuestion(text string) question {
	return question{kind: classify(text), lower: strings.ToLower(text)}
}

// questionKind is what a question asks for.
type questionKind uint8

const (
	askWhat   questionKind = iota // what is, and anything unclassified
	askWhen                       // when, which date, until when, what year
	askAmount                     // how much, how many, what share, which threshold
	askName                       // who, which body, which format, what is it called
	askYesNo                      // is, does, can, will…
	askReason                     // why, how
)

func (k questionKind) String() string {
	return [...]string{"what", "when", "amount", "name", "yes-no", "reason"}[k]
}

// Openings of questions, tried in order: the first that matches the start
// of a question (after a leading preposition such as "from" or "by") decides.
var questionOpenings = []struct {
	re   *regexp.Regexp
	kind questionKind
}{
	{regexp.MustCompile(`^(when|what date|which date|what day|what year|which year|what month|how soon|how long until|what deadline|which deadline)\b`), askWhen},
	{regexp.MustCompile(`^(what|which)(\s+\S+){0,3}\s+(version|edition|release|port|percentage|share|rate)\b|^(what|which) (is|are|was|were) the (fine|fines|penalty|penalties|sanction|sanctions|threshold|rate|share|percentage|amount|limit|number|turnover|revenue|version)\b`), askAmount},
	{regexp.MustCompile(`^(how (much|many|big|large|high|low|long|often)|what (share|percentage|proportion|rate|test rate|fine|penalt\w*|sanctions?|amount|threshold|turnover|revenue|value|level|number|size|vat revenue|annual turnover|yearly revenue|transaction value)|which (threshold|amount|rate|share|port|percentage))\b`), askAmount},
	{regexp.MustCompile(`^(who|whom|whose|which|what is the name|what are the names|what('s| is) .* called|what .* called)\b`), askName},
	{regexp.MustCompile(`^(is|are|was|were|does|do|did|can|could|will|would|has|have|had|should|must|may|might|shall)\b`), askYesNo},
	{regexp.MustCompile(`^(why|how)\b`), askReason},
}

// leadIn matches the prepositions a question may open with ("From what
// date…", "By when…", "Until when…", "Since when…", "On what date…").
var leadIn = regexp.MustCompile(`^(from|by|until|till|since|on|in|at|after|before|for|above|below|under|over|as of|starting)\s+`)

// classify returns what question asks for.
func classify(question string) questionKind {
	q := strings.ToLower(strings.TrimSpace(question))
	q = strings.TrimLeft(q, `"'¿¡ `)
	q = strings.TrimPrefix(q, "and ")
	rest := q
	// "above what revenue" asks for an amount, "until when" for a date:
	// the word after the preposition decides, and the preposition hints.
	if m := leadIn.FindString(q); m != "" {
		rest = q[len(m):]
		prep := strings.TrimSpace(m)
		if strings.HasPrefix(rest, "what ") || strings.HasPrefix(rest, "which ") || strings.HasPrefix(rest, "when") {
			switch prep {
			case "above", "below", "under", "over":
				return askAmount
			case "until", "till", "since", "by", "from", "as of", "starting", "before", "after", "on":
				if strings.HasPrefix(rest, "when") || dateNoun.MatchString(rest) {
					return askWhen
				}
			}
		}
	}
	for _, o := range questionOpenings {
		if o.re.MatchString(rest) {
			if o.kind == askName && dateNoun.MatchString(rest) {
				return askWhen // "which year", "what date" caught by the name rule
			}
			return o.kind
		}
	}
	// "Until when…" with no preposition rule, "…, and when?" at the end.
	if strings.Contains(q, " when ") || strings.HasSuffix(strings.TrimRight(q, "?"), " when") {
		return askWhen
	}
	return askWhat
}

// dateNoun matches a "what/which" followed by a word that names a time.
var dateNoun = regexp.MustCompile(`^(what|which)\s+(date|day|year|month|deadline|time)\b`)

// Answer spans by type. They are found in sentence text, so they see the
// words as written ("1 January 2026", "€800,000", "PLN 200m", "95%").
var (
	month      = `(?:January|February|March|April|May|June|July|August|September|October|November|December)`
	dateSpan   = regexp.MustCompile(`\b(?:\d{1,2} ` + month + `(?: \d{4})?|` + month + ` \d{4}|(?:mid|early|late|end of|the end of)[- ]\d{4}|(?:19|20)\d{2}(?:/\d{2})?)\b`)
	amountSpan = regexp.MustCompile(`(?:[€$£]|\bS\$|\b(?:PLN|RM|SAR|AED|EUR|USD|GBP|NOK|SEK|DKK|CHF)\s?)\d+(?:[.,]\d+)*(?:\s?(?:m|bn|k|million|billion)\b)?|\b\d+(?:[.,]\d+)*\s?(?:%|per ?cent\b)|\bRM\d+m\b|\b\d+(?:[.,]\d+)*\s+(?:characters|days|business days|months|years|weeks|codes|providers|platforms|taxpayers|businesses|companies|invoices|e-invoices|tiers|members|intermediaries|entities)\b|\b\d{1,3}(?:,\d{3})+\b|\b\d+\.\d+(?:\.\d+)*\b|\bport \d+\b`)
	// nameSpan finds proper names: runs of capitalised words or acronyms
	// that are not the sentence's first word, and mixed-case brand names.
	nameSpan = regexp.MustCompile(`\b(?:[A-Z][A-Za-z0-9]*(?:[-/][A-Za-z0-9]+)*(?:\s+(?:of|for|and|de|du|la)?\s*[A-Z][A-Za-z0-9]*(?:[-/][A-Za-z0-9]+)*)*|[a-z]+[A-Z][A-Za-z]+)\b`)
	// yesNoSpan finds the words that settle a yes-no question.
	yesNoSpan = regexp.MustCompile(`(?i)\b(?:no|not|never|none|nothing|only|yes|nearly identical|identical|optional|voluntary|mandatory|compulsory|required|exempt|unclear|not yet)\b`)
)

// spanKind reports whether questions of kind k are answered by a span.
func spanKind(k questionKind) bool {
	return k == askWhen || k == askAmount || k == askName || k == askYesNo
}

// answerSpans returns the byte spans of sentence text that could answer a
// question of kind k; nil for kinds without a span type (what, why, how).
func answerSpans(k questionKind, text string) [][]int {
	switch k {
	case askWhen:
		return dateSpan.FindAllStringIndex(text, -1)
	case askAmount:
		return amountSpan.FindAllStringIndex(text, -1)
	case askName:
		spans := nameSpan.FindAllStringIndex(text, -1)
		// The sentence's first word is capitalised anyway: it names
		// something only if the word after it is capitalised too, or it is
		// an acronym.
		if len(spans) > 0 && spans[0][0] == 0 {
			first := text[spans[0][0]:spans[0][1]]
			if !strings.ContainsAny(first, " ") && strings.ToUpper(first) != first {
				spans = spans[1:]
			}
		}
		return spans
	case askYesNo:
		return yesNoSpan.FindAllStringIndex(text, -1)
	}
	return nil
}

// knownIDF is the idf the question's known terms add up to: words no article
// contains cannot be covered by any sentence, so coverage is a share of the
// others.
func (q *query) knownIDF() float64 {
	s := 0.0
	for _, t := range q.terms {
		if t.id >= 0 && t.synonymOf == 0 {
			s += t.idf
		}
	}
	return s
}

// coverageOf is the share of total that the question terms at positions
// matched cover.
func (q *query) coverageOf(matched []int, total float64) float64 {
	if total == 0 {
		return 0
	}
	s := 0.0
	for _, p := range matched {
		s += q.terms[p].idf
	}
	return s / total
}

// filedUnder returns the positions of the question's country and spec
// terms that article d is about: filed under and named in its headline. An
// article filed under many countries (a round-up) is about none of them in
// particular, and its sentences answer for none of them unless they say so.
func (ix *Index) filedUnder(q *query, h hit) []int {
	if !q.entities {
		return nil
	}
	named := ix.entities.find(h.text.title)
	var out []int
	var filed []string
	for p, t := range q.terms {
		if t.id < 0 || !slices.Contains(named, t.text) {
			continue
		}
		if ix.contains(t.id, h.doc) {
			out = append(out, p)
			filed = append(filed, t.text)
		}
	}
	// The question's word that named the entity ("Belgian") is covered
	// too.
	for p, t := range q.terms {
		if t.id < 0 || strings.Contains(t.text, ":") {
			continue
		}
		for _, ph := range ix.entities.byFirst[t.text] {
			if len(ph.words) == 1 && slices.Contains(filed, ph.term) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// answerSpan finds the answer span of the asked kind in text that the
// question's words surround most closely, and scores it: the share of the
// question's known idf that the sentence covers (matched, as positions of
// q.terms), each word weighted by its closeness to the span (1 when
// adjacent, half at about ten words) and words covered without a place in
// the text (the article's countries) at half, times how precise the span is.
// ok is false when text has no span of the asked kind.
func (ix *Index) answerSpan(q *query, asked question, text string, matched []int, known float64) (span [2]int, score float64, ok bool) {
	spans := answerSpans(asked.kind, text)
	if len(spans) == 0 || known == 0 {
		return span, 0, false
	}
	// Where the words of text that are question terms sit.
	type placed struct{ pos, at int }
	var words []placed
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		end := wordEnd(text, i)
		if id, found := ix.surfaceID(normalize(text[i:end])); found && id >= 0 {
			if p, asked := q.pos[id]; asked {
				words = append(words, placed{q.standsFor(p), i})
			}
		}
		i = end
	}
	for _, sp := range spans {
		// A span the question spells out ("…with revenue of AED 50m…")
		// restates it; it does not answer it.
		if strings.Contains(asked.lower, strings.ToLower(text[sp[0]:sp[1]])) {
			continue
		}
		sum := 0.0
		for _, p := range matched {
			w := 0.5
			for _, pw := range words {
				if pw.pos != p {
					continue
				}
				dist := 0
				switch {
				case pw.at < sp[0]:
					dist = sp[0] - pw.at
				case pw.at >= sp[1]:
					dist = pw.at - sp[1]
				}
				w = max(w, 1/(1+float64(dist)/60))
			}
			sum += q.terms[p].idf * w
		}
		v := specificity(asked.kind, text[sp[0]:sp[1]]) * sum / known
		if v > score {
			score, span, ok = v, [2]int{sp[0], sp[1]}, true
		}
	}
	return span, score, ok
}

// specificity rates how precisely a span answers: 1 for a full date (day,
// month, year) or an amount with a currency or unit, less for a month and
// year, a bare year or a bare number.
func specificity(k questionKind, span string) float64 {
	switch k {
	case askWhen:
		switch strings.Count(span, " ") {
		case 2:
			return 1
		case 1:
			return 0.6
		}
		return 0.45
	case askAmount:
		if strings.IndexFunc(span, func(r rune) bool { return r < '0' || r > '9' && r != ',' && r != '.' }) >= 0 {
			return 1
		}
		return 0.7
	}
	return 1
}
