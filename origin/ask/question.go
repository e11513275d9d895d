package ask

import (
	"regexp"
	"strings"
)

// Question-aware answers: a reader who asks "when" wants a date, one who asks
// "how much" an amount, one who asks "which authority" a name. The question
// is read for what it asks (its kind, and for an amount the unit it is
// measured in), for the noun it asks about (its focus: "tax regime code" in
// "Which tax regime code…"), for the bound a threshold question names
// ("above what turnover") and for whether it asks about an obligation. The
// summary then leads with the article sentence that carries a span of that
// type next to the question's words (answer.go). Nothing is generated: the
// span is found in a sentence quoted verbatim.

// question is what the summary needs to know of the question beyond its
// terms.
type question struct {
	kind questionKind
	// unit is what an amount question measures; unitAny for other kinds.
	unit unitKind
	// group is true for "which businesses…", "which bodies…": the answer
	// is the threshold or the name that delimits the group.
	group bool
	// bound is the side of a threshold or date the question's opening
	// preposition names ("above what…", "by when…"); 0 when none.
	bound boundKind
	// focus are the index terms of the noun the question asks about.
	focus []string
	// obliged is true when the question asks what must be done ("must",
	// "have to", "required").
	obliged bool
	// event is, for a when-question, the event it asks the date of
	// (clause.go): a start, an end or deadline, a text or decision.
	event eventKind
	// amounts are the amounts the question bounds ("under AED 50m"),
	// lowercased, with their side.
	amounts []boundedAmount
	// text is the question as answered (a follow-up with the subject it
	// continues), and lower the question's own text, lowercased.
	text  string
	lower string
}

// boundedAmount is an amount of a question and the side of it the question
// means.
type boundedAmount struct {
	text string
	side boundKind
}

func newQuestion(text string) question {
	q := strings.ToLower(strings.TrimSpace(text))
	q = strings.TrimLeft(q, `"'¿¡ `)
	q = strings.TrimPrefix(q, "and ")
	rest, prep := q, ""
	if m := leadIn.FindString(q); m != "" {
		rest, prep = q[len(m):], strings.TrimSpace(m)
	}
	asked := question{kind: classify(text), text: text, lower: q, obliged: obligation.MatchString(q)}
	asked.bound = bounds[prep]
	switch asked.kind {
	case askAmount:
		asked.unit = unitOf(rest)
		if asked.unit == unitAny && (asked.bound == boundAbove || asked.bound == boundBelow) {
			asked.unit = unitMoney
		}
	case askName:
		switch {
		case groupNoun.MatchString(rest):
			asked.kind, asked.group = askAmount, true
		case codeNoun.MatchString(rest):
			asked.kind, asked.unit = askAmount, unitCode
		}
	}
	if asked.kind != askWhen {
		asked.focus = focusOf(rest)
	}
	asked.event = askedEvent(asked)
	lower := strings.ToLower(text)
	for _, m := range moneySpan.FindAllStringIndex(text, -1) {
		if len(lower) != len(text) {
			break // lowercasing moved the offsets
		}
		if side := sideOf(lower, m[0], m[1]); side != boundNone {
			asked.amounts = append(asked.amounts, boundedAmount{lower[m[0]:m[1]], side})
		}
	}
	return asked
}

// sideOf returns the side of the amount at lower[start:end] that its words
// mean: "above €800,000" and "AED 50m or more" the upper, "under AED 50m"
// and "up to PLN 10,000" the lower.
func sideOf(lower string, start, end int) boundKind {
	before := strings.TrimRight(lower[:start], " ")
	after := strings.TrimLeft(lower[end:], " ")
	for _, b := range []boundKind{boundAbove, boundBelow} {
		for _, w := range boundWords[b] {
			if strings.HasSuffix(before, w) && (len(before) == len(w) || before[len(before)-len(w)-1] == ' ') {
				return b
			}
		}
	}
	switch {
	case strings.HasPrefix(after, "or more"), strings.HasPrefix(after, "and above"), strings.HasPrefix(after, "or above"):
		return boundAbove
	case strings.HasPrefix(after, "or less"), strings.HasPrefix(after, "and below"), strings.HasPrefix(after, "or below"):
		return boundBelow
	}
	return boundNone
}

// inherit takes what an earlier question of the conversation asked for,
// keeping this question's own words.
func (q *question) inherit(prev question) {
	q.kind, q.unit, q.group, q.bound = prev.kind, prev.unit, prev.group, prev.bound
	if len(q.focus) == 0 {
		q.focus = prev.focus
	}
	if q.event == eventNone {
		q.event = prev.event
	}
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

// unitKind is what an amount question measures.
type unitKind uint8

const (
	unitAny      unitKind = iota
	unitMoney             // how much, what fine, above what turnover
	unitShare             // what share, which percentage
	unitCount             // how many
	unitDuration          // how long: a time or a length with its unit
	unitVersion           // which version, which edition
	unitCode              // which code, which status codes
)

// boundKind is the side of a value a question's opening preposition names.
type boundKind uint8

const (
	boundNone  boundKind = iota
	boundAbove           // above, over
	boundBelow           // below, under
	boundStart           // from, since, starting, as of
	boundEnd             // by, until, before
)

var bounds = map[string]boundKind{
	"above": boundAbove, "over": boundAbove,
	"below": boundBelow, "under": boundBelow,
	"from": boundStart, "since": boundStart, "starting": boundStart, "as of": boundStart,
	"by": boundEnd, "until": boundEnd, "till": boundEnd, "before": boundEnd,
}

// Openings of questions, tried in order: the first that matches the start
// of a question (after a leading preposition such as "from" or "by") decides.
var questionOpenings = []struct {
	re   *regexp.Regexp
	kind questionKind
}{
	{regexp.MustCompile(`^(when|what date|which date|what day|what year|which year|what month|how soon|how long until|what deadline|which deadline)\b`), askWhen},
	{regexp.MustCompile(`^(what|which)(\s+\S+){0,3}\s+(version|edition|release|port|percentage|share|rate)\b|^(what|which) (is|are|was|were) the (fine|fines|penalty|penalties|sanction|sanctions|threshold|rate|share|percentage|amount|limit|number|turnover|revenue|version)\b`), askAmount},
	{regexp.MustCompile(`^(how (much|many|big|large|high|low|long|often)|what (share|percentage|proportion|rate|test rate|fine|fines|penalt\w*|sanctions?|amount|threshold|turnover|revenue|value|level|number|size|vat revenue|annual turnover|yearly revenue|transaction value)|which (threshold|amount|rate|share|port|percentage))\b`), askAmount},
	{regexp.MustCompile(`^(who|whom|whose|which|what is the name|what are the names|what('s| is) .* called|what .* called)\b`), askName},
	{regexp.MustCompile(`^(is|are|was|were|does|do|did|can|could|will|would|has|have|had|should|must|may|might|shall)\b`), askYesNo},
	{regexp.MustCompile(`^(why|how)\b`), askReason},
}

// leadIn matches the prepositions a question may open with ("From what
// date…", "By when…", "Until when…", "Since when…", "On what date…").
var leadIn = regexp.MustCompile(`^(from|by|until|till|since|on|in|at|after|before|for|above|below|under|over|as of|starting|through|via|with)\s+`)

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
	// "Until when…" with no preposition rule, "What is ViDA and when does
	// it start?", "…, and when?" at the end; not "What format applies when
	// a company…", which asks what.
	if strings.Contains(q, " and when ") || !strings.HasPrefix(rest, "what ") && strings.Contains(q, " when ") || strings.HasSuffix(strings.TrimRight(q, "?"), " when") {
		return askWhen
	}
	return askWhat
}

// dateNoun matches a "what/which" followed by a word that names a time.
var dateNoun = regexp.MustCompile(`^(what|which)\s+(date|day|year|month|deadline|time)\b`)

// groupNoun matches "which" followed by the words for a group of parties:
// "Which Polish taxpayers had to start first?" is answered by what sets the
// group apart (sales above PLN 200m), not by a name.
var groupNoun = regexp.MustCompile(`^(which|what)(\s+[\w'’-]+){0,2}?\s+(taxpayers|businesses|companies|firms|suppliers|sellers|buyers|customers|bodies|agencies|authorities|entities|organisations|organizations|traders|enterprises|groups)\b`)

// obligation matches a question about what must be done.
var obligation = regexp.MustCompile(`\b(must|have to|has to|had to|required|require|requires|obliged|obligatory|mandatory|compulsory|need to|needs to|obligation)\b`)

// unitOf returns what an amount question (its text after any opening
// preposition) measures.
func unitOf(rest string) unitKind {
	switch {
	case strings.HasPrefix(rest, "how many"):
		return unitCount
	case strings.HasPrefix(rest, "how long"):
		return unitDuration
	case strings.HasPrefix(rest, "how much"):
		return unitMoney
	case shareNoun.MatchString(rest):
		return unitShare
	case versionNoun.MatchString(rest):
		return unitVersion
	case codeNoun.MatchString(rest):
		return unitCode
	case moneyNoun.MatchString(rest):
		return unitMoney
	}
	return unitAny
}

var (
	shareNoun   = regexp.MustCompile(`^(what|which)\s+(is |are )?(the )?(share|percentage|proportion|percent|rate)\b`)
	versionNoun = regexp.MustCompile(`^(what|which)(\s+\S+){0,3}\s+(version|edition|release)\b|^(what|which) (is|are) the (current |latest |newest )?(version|edition|release)\b`)
	codeNoun    = regexp.MustCompile(`^(what|which)(\s+\S+){0,3}?\s+(code|codes)\b`)
	moneyNoun   = regexp.MustCompile(`^(what|which)\s+(is |are )?(the )?(\w+ )?(fine|fines|penalty|penalties|sanction|sanctions|amount|threshold|turnover|revenue|value|price|cost|fee|fees|limit)\b`)
)

// focusStop ends a question's focus: the verb or preposition after the noun
// asked about.
var focusStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`is are was were be been do does did can could will would must may might
should shall has have had of for in on at to from by with that which who whom whose what when where
why how called named under above below over after before since until through via into per as than
the a an`) {
		m[w] = true
	}
	return m
}()

// focusLead matches the opening a focus follows: "which", "what", "what
// kind of", "how many", "what is the".
var focusLead = regexp.MustCompile(`^(which|what|how many)\s+((kind|kinds|type|types|sort|form|forms) of\s+)?((is|are|was|were) (the |a |an )?|'s (the )?)?`)

// focusOf returns the index terms of the noun a question (its text after any
// opening preposition) asks about: up to four words after its opening, up
// to the first verb or preposition. "When…", "how much…" and "is…" have
// none.
func focusOf(rest string) []string {
	m := focusLead.FindString(rest)
	if m == "" {
		return nil
	}
	var words []string
	for _, w := range strings.Fields(rest[len(m):]) {
		w = strings.Trim(w, `?!.,;:"'()`)
		if w == "" || focusStop[w] || len(words) == 4 {
			break
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		return nil
	}
	return Terms(strings.Join(words, " "))
}

// The size classes a mandate's phases are drawn by: the large businesses
// first, the small or remaining ones later, each on its own date.
const (
	sizeLarge = 1
	sizeSmall = 2
)

// sizeWords name a size class, as questions and articles write it. The
// smaller class is also the rest of the parties ("other Polish taxpayers",
// "everyone else"), and the self-employed, who are the smallest.
var sizeWords = regexp.MustCompile(`(?i)\b(?:(large|larger|largest|big|bigger|biggest)|(small|smaller|smallest|remaining|all other|smes?|micro|others|everyone else|self-employed|sole traders?|freelancers|other(?: [\w-]+)? (?:taxpayers|businesses|companies|firms|enterprises|entities|suppliers)))\b`)

// partyNouns are the words for the parties a mandate's phases group.
var partyNouns = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("business businesses company companies firm firms enterprise enterprises entity entities taxpayer taxpayers supplier suppliers sized") {
		m[w] = true
	}
	return m
}()

// sizeClass tells which size class text speaks of: sizeLarge, sizeSmall,
// or 0 for neither or both. A threshold names one too: the parties above
// an amount of money are the larger ones ("turnover above €8m"), those
// below it the smaller.
func sizeClass(text string) int {
	class := 0
	for _, m := range sizeWords.FindAllStringSubmatchIndex(text, -1) {
		if rest, ok := strings.CutPrefix(text[m[1]:], "-"); ok {
			// A compound names the size of its second word: "micro-
			// businesses" are small businesses, a "small-invoice
			// allowance" is about invoices.
			if w, _, _ := strings.Cut(rest, " "); !partyNouns[strings.ToLower(strings.TrimRight(w, ".,;:"))] {
				continue
			}
		}
		if m[2] >= 0 {
			class |= sizeLarge
		} else {
			class |= sizeSmall
		}
	}
	if lower := strings.ToLower(text); len(lower) == len(text) {
		for _, m := range moneySpan.FindAllStringIndex(text, -1) {
			switch sideOf(lower, m[0], m[1]) {
			case boundAbove:
				class |= sizeLarge
			case boundBelow:
				class |= sizeSmall
			}
		}
	}
	if class == sizeLarge|sizeSmall {
		return 0
	}
	return class
}
