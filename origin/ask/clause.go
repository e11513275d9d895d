package ask

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reading a span within its clause. A sentence often states two facts of
// the asked kind: "was published on 31 January 2025 and applies from
// 1 April 2025", "was launched on 5 February 2026 and is due to report by
// 30 November 2027". The question's words anywhere in the sentence used to
// count for either date almost alike, so the one that came first, or sat
// nearer a common word, was given as the answer. Each span is now read
// within its clause, by what its words say happens on it, and by the phase
// it is about (docs/decisions.md, ask; answerSpan applies the rules):
//
//   - its clause: a question word counts by its closeness to the span only
//     when it is in the span's clause (clauseCuts); elsewhere in the
//     sentence it counts as far away. Spans listed together ("€1,500,
//     €3,000 and €5,000", "on 4 May 2026 and on 9 June 2026") are one
//     clause, as near the words as the list is;
//   - its event (dates only): the words just before a date say what
//     happens on it (dateEvent): something begins ("applies from", "went
//     live on", "since"), ends or falls due ("due to report by", "lasts
//     until"), or a text appears or a decision is taken ("published on",
//     "approved on", "decision of"). A timetable's entry ("1 January 2028:
//     …") or a table column headed "From" or "Go live" begins. The question
//     says which it asks for (askedEvent: "When did … apply?", "When is …
//     due?", "When was … published?"); eventFactor weighs the date by it;
//   - what it replaced: in "moved from 2 February to 2 March 2026" the
//     first date is no longer the date (superseded);
//   - the phase it is about: mandates come in phases, each with its own
//     date (the first and the second wave, the large and the other
//     businesses, domestic and intra-EU trade, issuing and receiving). When
//     the question names a phase, the phase a span is about is the one its
//     clause names, else the rest of its sentence up to a strong
//     separator, else its article's headline; a span of the same phase
//     counts more, one of another phase less (phases.factor). A question
//     that names none asks when the obligation first applies: a later
//     start of the same sentence, or a date its clause says follows or
//     extends an earlier phase, counts less;
//   - and when the sentence's next best span scores nearly as well and is
//     not listed with it, the words do not settle which answers: the
//     sentence may still lead the summary, but no span is given as the
//     answer (summary.go, tieShare).

// clauseCuts returns the byte offsets of text at which its clauses meet,
// in order: every strong separator (a semicolon, a comma before a
// coordinating conjunction: strongSeparators) and, between two spans that
// follow each other, the strongest separator of the words between them, at
// its last occurrence: a colon; then a comma before a conjunction or a
// relative word (", and", ", which"); then a conjunction (" and ",
// " but "); then a comma. Two spans with none of these between them share
// a clause ("from 2 February to 2 March 2026").
func clauseCuts(text string, spans []span, dst []int) []int {
	dst = dst[:0]
	for _, sep := range strongSeparators {
		for i := 0; ; {
			j := strings.Index(text[i:], sep)
			if j < 0 {
				break
			}
			if !containsInt(dst, i+j) {
				dst = append(dst, i+j)
			}
			i += j + len(sep)
		}
	}
	for k := 1; k < len(spans); k++ {
		from, to := spans[k-1].end, spans[k].start
		if from >= to || listedWith(text, spans[k-1], spans[k]) {
			continue // a list ("€1,500, €3,000 and €5,000") is one clause
		}
		if cut := clauseSeparator(text[from:to]); cut >= 0 && !containsInt(dst, from+cut) {
			dst = append(dst, from+cut)
		}
	}
	// Few cuts: an insertion sort keeps them in order.
	for i := 1; i < len(dst); i++ {
		for j := i; j > 0 && dst[j] < dst[j-1]; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// listed reports whether between, the text between two spans, lists them:
// a comma, "and", "or", "to" or a dash, with "on" or "in" after a
// conjunction ("on 4 May and on 9 June").
func listed(between string) bool {
	b := strings.TrimSpace(between)
	for _, prep := range []string{" on", " in"} {
		if c, ok := strings.CutSuffix(b, prep); ok && (strings.HasSuffix(c, "and") || strings.HasSuffix(c, "or")) {
			b = c
		}
	}
	switch b {
	case ",", "and", ", and", "or", ", or", "to", "–", "-", "/":
		return true
	}
	return false
}

// listedWith reports whether spans a and b of text, a before b, are listed
// together: values of one type (dates, or amounts of one kind; names are
// different things however they are listed) with a list's separator
// between them.
func listedWith(text string, a, b span) bool {
	return a.typ == b.typ && a.typ != typeName && a.end <= b.start && listed(text[a.end:b.start])
}

// clauseSeparators are the separators of clauseCuts, strongest first.
var clauseSeparators = [...][]string{
	{";", ":"},
	{", and ", ", but ", ", while ", ", whereas ", ", which ", ", so ", ", then ", ", or ", ", with "},
	{" and ", " but ", " while ", " whereas ", " then "},
	{", "},
}

// clauseSeparator returns the offset in between of its strongest clause
// separator (its last occurrence), or -1.
func clauseSeparator(between string) int {
	for _, tier := range clauseSeparators {
		best := -1
		for _, sep := range tier {
			if i := strings.LastIndex(between, sep); i > best {
				best = i
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// clauseAround returns the clause of text that holds sp, as byte offsets,
// given the cuts of clauseCuts.
func clauseAround(text string, cuts []int, sp span) (start, end int) {
	start, end = 0, len(text)
	for _, c := range cuts {
		switch {
		case c < sp.start:
			start = c + 1
		case c >= sp.end:
			return start, min(end, c)
		}
	}
	return start, end
}

// Events a date may be of: what begins on it, ends or falls due on it, or
// the text or decision it dates.
const (
	eventNone eventKind = iota
	eventBegin
	eventEnd
	eventText
)

type eventKind uint8

// eventWords are the words that say which event a date is of, in the
// question and just before a date. "launched" is none of them: an inquiry
// launched is a decision, a system launched begins. Obligation words
// ("mandatory", "required") say that something begins to apply; "must"
// does not: "must appoint a provider by 31 July" is a deadline.
var eventWords = func() map[string]eventKind {
	m := map[string]eventKind{}
	for _, w := range strings.Fields(`start starts started starting begin begins began begun commence commences
commenced apply applies applied applying application effective effect force live kick kicks phase-in
mandatory compulsory obligatory required require requires available from since`) {
		m[w] = eventBegin
	}
	for _, w := range strings.Fields(`end ends ended expire expires expired close closes closed lapse lapses
lasts lasted due deadline deadlines cutoff until till by before retire retires retired retirement
sunset withdrawn conclude concludes concluded finish finishes finished`) {
		m[w] = eventEnd
	}
	for _, w := range strings.Fields(`publish publishes published publication release released announce announces
announced announcement adopt adopts adopted approve approves approved approval pass passes passed sign signs
signed propose proposes proposed proposal present presents presented vote votes voted validate validates
validated cancel cancels cancelled canceled scrap scraps scrapped decide decides decided decision decree
agreement notice letter circular dated revised updated amended`) {
		m[w] = eventText
	}
	return m
}()

// eventVerbs are the event words that are verbs: a question's verb says
// what it asks ("When did the government propose mandatory e-invoicing?"
// asks for the proposal, not the start), its nouns and adjectives only
// when it has no such verb ("When does the May 2026 release become
// mandatory?").
var eventVerbs = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`start starts started begin begins began commence commences commenced apply
applies applied require requires end ends ended expire expires expired close closes closed lapse lapses lasts
lasted retire retires retired conclude concludes concluded finish finishes finished publish publishes
published released announce announces announced adopt adopts adopted approve approves approved pass passes
passed sign signs signed propose proposes proposed present presents presented vote votes voted validate
validates validated cancel cancels cancelled canceled scrap scraps scrapped decide decides decided revised
updated amended`) {
		m[w] = true
	}
	return m
}()

// askedEvent returns the event a when-question asks the date of: the side
// its opening preposition names ("by when" ends, "since when" begins), else
// its first event verb ("When did FatturaPA 1.9 apply?", "When was the law
// published?"), else its last event word ("When is the inquiry report
// due?"); eventNone when it names none ("When must German companies issue
// e-invoices?").
func askedEvent(asked question) eventKind {
	switch asked.bound {
	case boundStart:
		return eventBegin
	case boundEnd:
		return eventEnd
	}
	ev := eventNone
	for _, w := range strings.FieldsFunc(asked.lower, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
		if w == "from" || w == "since" || w == "by" || w == "until" || w == "till" || w == "before" {
			continue // a preposition inside the question, not its event
		}
		if k := eventWords[w]; k != eventNone {
			if eventVerbs[w] {
				return k
			}
			ev = k
		}
	}
	return ev
}

// cueWords is how many words before a date its event is looked for.
const cueWords = 6

// dateEvent returns the event of the date at sp in text, whose clause
// starts at clauseStart: the event word nearest before it in its clause,
// among at most cueWords words ("published in the BOE on 3 December
// 2025", "is due to report by 30 November 2027", "applies from 1 April
// 2025"), or a text's name with "of" ("decision of 17 February 2026").
// The words after it are read when none is before it ("1 January 2027 is
// the start date").
func dateEvent(text string, clauseStart int, sp span) eventKind {
	if datesAText(text, sp.start) {
		return eventText
	}
	before := text[clauseStart:sp.start]
	words := 0
	for end := len(before); end > 0 && words < cueWords; {
		r, size := utf8.DecodeLastRuneInString(before[:end])
		if !isWordRune(r) {
			end -= size
			continue
		}
		start := end
		for start > 0 {
			r, size := utf8.DecodeLastRuneInString(before[:start])
			if !isWordRune(r) && r != '-' {
				break
			}
			start -= size
		}
		w := strings.ToLower(before[start:end])
		if k := eventWords[w]; k != eventNone {
			return k
		}
		if w == "to" {
			switch prev := strings.ToLower(strings.TrimRight(before[:start], " ")); {
			case endsWithWord(prev, spanTo):
				return eventEnd // "a transition period to 31 December 2026"
			case endsWithWord(prev, changeWords):
				return eventBegin // "penalties deferred to 2027"
			}
		}
		end, words = start, words+1
	}
	if timetableEntry(text, sp) {
		return eventBegin
	}
	after := text[sp.end:]
	words = 0
	for _, w := range strings.FieldsFunc(after, func(r rune) bool { return !isWordRune(r) && r != '-' }) {
		if words == 3 {
			break
		}
		if k := eventWords[strings.ToLower(w)]; k != eventNone && k != eventEnd {
			// "by", "until" after a date belong to the next phrase.
			return k
		}
		words++
	}
	return eventNone
}

// spanTo are the words after which "to" introduces the end of a period.
var spanTo = []string{"transition", "period", "runs", "run", "ran", "extended", "extends", "lasts", "lasting"}

// endsWithWord reports whether s ends with one of words, as a whole word.
func endsWithWord(s string, words []string) bool {
	for _, w := range words {
		if strings.HasSuffix(s, w) && (len(s) == len(w) || !isWordRune(rune(s[len(s)-len(w)-1]))) {
			return true
		}
	}
	return false
}

// timetableEntry reports whether the date at sp is one side of a colon in
// text, a timetable's entry ("1 January 2028: the issuing obligation
// extends to all businesses", "All other relay companies: 1 October
// 2027."): the date things apply from, unless words before it say
// otherwise ("Until 30 June 2030: …").
func timetableEntry(text string, sp span) bool {
	before := strings.TrimSpace(text[:sp.start])
	after := strings.TrimSpace(text[sp.end:])
	return before == "" && strings.HasPrefix(after, ":") ||
		strings.HasSuffix(before, ":") && strings.Trim(after, ".;") == ""
}

// Factors of the event rule: a start or end of the asked kind counts
// eventBoost times; a text's date for a question about an obligation, or
// the reverse, eventMismatch times (as an aside does).
const (
	eventBoost    = 1.3
	eventMismatch = asideFactor
)

// eventFactor is how a date of event got counts for a question asking
// for event want. A text's date (a publication, a decision) answers only a
// question about a text, and such a question only by a text's date: each
// counts eventMismatch for the other. A start counts more for a question
// about a start, an end or deadline for one about an end; a start for a
// question about a deadline, or the reverse, counts as any date does,
// since a deadline is often the day an obligation starts ("ready by
// 24 August", "mandatory on 24 August"). A text's date of the asked kind
// is not preferred over undated words: an article names the day of its
// own sources ("published on GOV.UK on 26 November 2025") more often than
// the day of the text asked about.
func eventFactor(want, got eventKind) float64 {
	switch {
	case got == eventNone || want == eventNone && got != eventText:
		return 1
	case (got == eventText) != (want == eventText):
		return eventMismatch
	case want == got && want != eventText:
		return eventBoost
	}
	return 1
}

// headerEvent returns the event a table header's words name, its last:
// "Go live", "Appoint provider by", "From".
func headerEvent(header string) eventKind {
	ev := eventNone
	for _, w := range strings.FieldsFunc(strings.ToLower(header), func(r rune) bool { return !isWordRune(r) && r != '-' }) {
		if k := eventWords[w]; k != eventNone {
			ev = k
		}
	}
	return ev
}

// laterPhase matches the words that say a phase follows or extends an
// earlier one.
var laterPhase = regexp.MustCompile(`(?i)\b(?:follows?|followed|following|extends? to|extended to)\b`)

// changeWords say that a date was moved: "moved from 2 February to
// 2 March 2026".
var changeWords = []string{"moved", "moves", "move", "postponed", "postpones", "pushed", "pushes", "brought", "brings",
	"delayed", "delays", "deferred", "defers", "shifted", "shifts", "rescheduled", "put back", "pushed back", "back", "forward"}

// supersededFactor discounts a date that a change replaced.
const supersededFactor = 0.35

// superseded reports whether the date at sp is the one a change replaced:
// "from <date> to <date>" after a word of change in the same clause.
func superseded(text string, clauseStart int, sp span) bool {
	before := strings.ToLower(strings.TrimRight(text[clauseStart:sp.start], " "))
	if !strings.HasSuffix(before, " from") && before != "from" {
		return false
	}
	after := strings.TrimLeft(text[sp.end:], " ")
	if !strings.HasPrefix(after, "to ") {
		return false
	}
	if next := dateSpan.FindAllStringIndex(after[3:], 1); len(next) == 0 || next[0][0] != 0 {
		return false
	}
	for _, w := range changeWords {
		if containsWords(before, w) {
			return true
		}
	}
	return false
}

// Phases: the dimensions a mandate's phases are drawn along, and the
// phase of each a text names (0 for none, or for more than one).
const (
	phaseSize    = iota // sizeLarge or sizeSmall (question.go)
	phaseOrdinal        // 1 for the first wave or phase, 2 for the second…
	phaseScope          // scopeDomestic or scopeCrossBorder
	phaseSide           // sideIssue or sideReceive (summary.go)
	phaseDims
)

// phaseLast is the ordinal of the phase that brings in every party.
const phaseLast = 9

// phases are the phases a text names, by dimension.
type phases [phaseDims]int

// Scopes of an obligation: trade within the country, and trade across EU
// borders.
const (
	scopeDomestic    = 1
	scopeCrossBorder = 2
)

var (
	// ordinalWords name a numbered wave or phase: "the first wave",
	// "second-wave businesses", "phase 2"; a later or next one is not the
	// first, so it counts as the second. Every party ("all businesses",
	// "everyone") is the last phase's.
	ordinalWords = regexp.MustCompile(`(?i)\b(?:(first|initial|1st)|(second|2nd|later|next|subsequent)|(third|3rd)|(fourth|4th))[- ](?:[\w-]+ ){0,2}(?:wave|phase|stage|tranche|cohort)s?\b|\b(?:wave|phase|stage) (?:(1|one)|(2|two)|(3|three)|(4|four))\b|\b((?:all|every)(?: [\w-]+){0,2} (?:taxpayers?|businesses|business|companies|company|firms?|enterprises|entities|suppliers)|everyone)\b`)
	// scopeWords name domestic or cross-border trade.
	scopeWords = regexp.MustCompile(`(?i)\b(?:(domestic)|(intra-EU|cross-border|intra-community|between member states|other EU member states))\b`)
)

// phasesOf returns the phases text names.
func phasesOf(text string) phases {
	var ph phases
	for dim := range ph {
		ph[dim] = phaseOf(text, dim)
	}
	return ph
}

// phaseOf returns the phase of dimension dim that text names, 0 for none.
func phaseOf(text string, dim int) int {
	switch dim {
	case phaseSize:
		return sizeClass(text)
	case phaseOrdinal:
		n, last := 0, false
		for _, m := range ordinalWords.FindAllStringSubmatch(text, -1) {
			for i, g := range m[1:] {
				if g == "" {
					continue
				}
				if i == 8 {
					last = true
					continue
				}
				switch k := i%4 + 1; n {
				case 0:
					n = k
				case k:
				default:
					n = -1 // two phases: neither
				}
			}
		}
		switch {
		case n < 0:
			return 0
		case n == 0 && last:
			// A numbered phase is named more precisely than by whom it
			// reaches: "the first phase reaches every business".
			return phaseLast
		}
		return n
	case phaseScope:
		scope := 0
		for _, m := range scopeWords.FindAllStringSubmatch(text, -1) {
			if m[1] != "" {
				scope |= scopeDomestic
			} else {
				scope |= scopeCrossBorder
			}
		}
		if scope == scopeDomestic|scopeCrossBorder {
			return 0
		}
		return scope
	case phaseSide:
		return exchangeSide(text)
	}
	return 0
}

// only returns the phases of text in the dimensions asked names.
func (asked phases) only(text string) phases {
	var ph phases
	for dim, want := range asked {
		if want != 0 {
			ph[dim] = phaseOf(text, dim)
		}
	}
	return ph
}

// strongSeparators end the part of a sentence a phase named in it is read
// for: a semicolon, and a comma before a coordinating conjunction (", with"
// and ", which" add to the clause before them).
var strongSeparators = []string{";", ", and ", ", but ", ", while ", ", whereas ", ", so ", ", then ", ", or "}

// strongSegment returns the part of text around [start, end) between strong
// separators.
func strongSegment(text string, start, end int) string {
	from, to := 0, len(text)
	for _, sep := range strongSeparators {
		if i := strings.LastIndex(text[:start], sep); i >= 0 && i+1 > from {
			from = i + 1
		}
		if i := strings.Index(text[end:], sep); i >= 0 && end+i < to {
			to = end + i
		}
	}
	return text[from:to]
}

// Factors of the phase rule (the same as for the size classes and the
// sides of the exchange before it): a span of the phase asked about counts
// samePhaseBoost times, one of another phase of the same dimension
// otherPhaseFactor times. A side of the exchange is only discounted: most
// sentences about an obligation name the side it is on.
const (
	samePhaseBoost   = sameSizeBoost
	otherPhaseFactor = otherSideFactor
)

// factor is how a span counts for a question naming the phases asked,
// given its clause, the part of its sentence between strong separators
// (strongSegment) and the phases of its article's headline (asked.only):
// in each dimension the question names, the span is of the phase its
// clause names, else that part of the sentence, else the headline. The
// rest of the sentence is not read: "The date was confirmed when the first
// wave was postponed in February, and a transition period runs to
// 31 December 2026" names the first wave for another fact than its date.
func (asked phases) factor(clause, segment string, headline phases) float64 {
	f := 1.0
	for dim, want := range asked {
		if want == 0 {
			continue
		}
		got := phaseOf(clause, dim)
		if got == 0 && segment != clause {
			got = phaseOf(segment, dim)
		}
		if got == 0 {
			got = headline[dim]
		}
		switch {
		case got == 0:
		case got == want && dim != phaseSide:
			f *= samePhaseBoost
		case got != want:
			f *= otherPhaseFactor
		}
	}
	return f
}
