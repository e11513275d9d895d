package ask

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Choosing the answer: among the sentences of the best articles, the one
// whose span of the asked type (spans.go) the question's words surround most
// closely, next to the noun the question asks about and on the side of any
// bound it names, states the answer.

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

// unknownIDF is the idf of the question's words that no article contains
// and no synonym stands in for ("podcast", "football"): what the question
// is about when the corpus does not cover it.
func (q *query) unknownIDF() float64 {
	s := 0.0
	for _, t := range q.terms {
		if t.id < 0 && t.synonymOf == 0 && !t.replaced {
			s += t.idf
		}
	}
	return s
}

// commonIDF is the idf of a word half the articles say (BM25's idf is
// ln 2 at a document frequency of half the corpus). A word at least that
// common ("invoice", "e-invoicing", "business", "B2B") is what the whole
// site is about: whether an article says it tells nothing of whether the
// article is about the question.
const commonIDF = math.Ln2

// kindWords are the terms of the words that say what kind of answer a
// question wants ("how much", "what date", "which version", "what is it
// called") rather than what it is about. A question's threshold, fine or
// turnover is what it is about: a turnover is not a fine.
var kindWords = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range Terms(`much many long often big high low date day year month time deadline version
edition number amount value level share percentage proportion rate name named called kind type sort
exactly tell`) {
		m[t] = true
	}
	return m
}()

// subjectTerms returns the positions in q.terms of the question's subject
// words: what it asks about, which the sentence that answers it, or the
// article around that sentence, must say. They are its words that some
// article says, without the countries and specifications it names and the
// words that named them ("Spanish": the article is filed under its
// country), the words of the kind of answer it wants (kindWords), for a
// when-question the verb that names the event it asks the date of ("When
// do penalties apply…": clause.go reads which date a sentence's "applies"
// is of), and the words half the articles say (commonIDF). Words no article
// says are left out as well: with a country named they are the reader's
// own ("Kiwi"), which no sentence can say. aliases is aliasWords' map.
func (ix *Index) subjectTerms(q *query, asked question, aliases map[int][]int) []int {
	var event []string
	if asked.kind == askWhen {
		for _, w := range strings.FieldsFunc(strings.ToLower(asked.text), func(r rune) bool { return !unicode.IsLetter(r) }) {
			if eventVerbs[w] {
				event = append(event, Terms(w)...)
			}
		}
	}
	var out []int
	for p, t := range q.terms {
		if t.id < 0 || t.synonymOf != 0 || t.idf <= commonIDF || strings.Contains(t.text, ":") || kindWords[t.text] || slices.Contains(event, t.text) {
			continue
		}
		named := false
		for _, words := range aliases {
			named = named || containsInt(words, p)
		}
		if !named {
			out = append(out, p)
		}
	}
	return out
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

// articleTerms returns the positions of the question's terms (as the
// words they stand for) that article h contains anywhere.
func (ix *Index) articleTerms(q *query, h hit, dst []int) []int {
	dst = dst[:0]
	for p, t := range q.terms {
		if t.id < 0 || !ix.contains(t.id, h.doc) {
			continue
		}
		if p = q.standsFor(p); !containsInt(dst, p) {
			dst = append(dst, p)
		}
	}
	return dst
}

// Weights of the answer score.
const (
	// articleWeight is the weight of a question word that the sentence
	// does not say but its article does, in whether the sentence is about
	// the question (whether it may be quoted), not in whether it states
	// the answer: a reader's question is matched by the article as a
	// whole, and the sentence that states the fact often names only the
	// thing asked about ("The current version is 2.0.3").
	articleWeight = 0.4
	// farWordWeight is the least weight a question word of the sentence
	// (or of the article's filing) adds, however far from the span.
	farWordWeight = 0.5
	// contextWeight is the weight of a question word that only the
	// sentence before says, when this one refers back to it ("It becomes
	// mandatory on…"), in whether the sentence is about the question;
	// contextLeadWeight its weight in whether it states the answer.
	contextWeight     = 0.75
	contextLeadWeight = 0.4
	// laterPhaseFactor discounts a later start of a sentence, for a
	// question that names no phase.
	laterPhaseFactor = 0.85
	// proximityBytes is the distance at which a question word counts
	// half (about ten words).
	proximityBytes = 60
	// focusBoost is the most that the noun the question asks about,
	// right next to the span, raises its score ("the second is a new tax
	// regime code, RF20"); focusBytes is the distance at which it counts
	// half.
	focusBoost = 0.6
	focusBytes = 15
	// boundBoost rewards a span introduced the way the question bounds
	// it ("below RM1m" for "below what turnover").
	boundBoost = 1.3
	// obligationBoost rewards a date or amount next to a word of
	// obligation when the question asks what must be done, the most
	// when adjacent, nothing from obligationBytes away.
	obligationBoost = 1.3
	obligationBytes = 40
	// negationFactor discounts a span its clause denies, and
	// contradictionFactor a sentence about the other side of the
	// question's threshold.
	negationFactor      = 0.6
	contradictionFactor = 0.35
)

// sentenceWord is a question word in a sentence: the position of the
// question's term it counts as, and its byte offset.
type sentenceWord struct{ pos, at int }

// scanned is what answerSpan needs of a sentence's words beyond the spans:
// where the question's words are, and where words of obligation are.
type scanned struct {
	words   []sentenceWord
	obliges []int
}

// scan finds the question's words and the words of obligation in text.
func (ix *Index) scan(q *query, text string, dst scanned) scanned {
	dst.words, dst.obliges = dst.words[:0], dst.obliges[:0]
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		end := wordEnd(text, i)
		w := normalize(text[i:end])
		if obligationWords[w] {
			dst.obliges = append(dst.obliges, i)
		}
		if id, found := ix.surfaceID(w); found && id >= 0 {
			if p, asked := q.pos[id]; asked {
				dst.words = append(dst.words, sentenceWord{q.standsFor(p), i})
			}
		}
		i = end
	}
	return dst
}

// obligationWords say that something must be done.
var obligationWords = map[string]bool{
	"must": true, "mandatory": true, "compulsory": true, "required": true, "obliged": true, "obligation": true,
	"deadline": true, "due": true, "requires": true, "obligatory": true,
}

// boundWords are the words that introduce a value from each side.
var boundWords = [...][]string{
	boundAbove: {"above", "over", "more than", "exceeding", "exceeds", "exceeded", "at least"},
	boundBelow: {"below", "under", "less than", "up to", "not exceeding"},
	boundStart: {"from", "since", "starting", "starting on", "as of", "from the", "with effect from"},
	boundEnd:   {"by", "until", "till", "before", "no later than", "to", "deadline of", "ends on"},
}

// bounded reports whether the words just before a span introduce it from
// side b.
func bounded(text string, start int, b boundKind) bool {
	if b == boundNone {
		return false
	}
	before := strings.ToLower(strings.TrimRight(text[:start], " "))
	for _, w := range boundWords[b] {
		if strings.HasSuffix(before, w) && (len(before) == len(w) || before[len(before)-len(w)-1] == ' ') {
			return true
		}
	}
	return false
}

// distance is the number of bytes between offset at and the span.
func (sp span) distance(at int) int {
	switch {
	case at < sp.start:
		return sp.start - at
	case at >= sp.end:
		return at - sp.end
	}
	return 0
}

// spanContext is what answerSpan reads of a sentence beyond its text.
type spanContext struct {
	// sentence is the whole sentence the text is of: the row, for a cell.
	sentence string
	// headPhases are the phases the title of the sentence's article
	// names, in the dimensions the question names.
	headPhases phases
	// phases are the phases the question names (phasesOf), for a when or
	// amount question.
	phases phases
	// row is set when text is a cell of a table row; cue is then its
	// column's header.
	row bool
	cue string
}

// spanScore is the best span of a sentence and how well it answers.
type spanScore struct {
	sp span
	// v is its score, second the score of the sentence's next best span.
	v, second float64
	ok        bool
}

// answerSpan finds the answer span in text that best answers the question,
// and scores it: the share of the question's known idf that the sentence
// covers (matched and context, as positions of q.terms), each word of
// matched weighted by its closeness to the span within the span's clause
// (1 when adjacent, half at about ten words, never under farWordWeight,
// which words elsewhere in the sentence and words covered without a place
// in the text, the article's countries, get) and each of context at
// contextWeight; times how well the span's type fits the question, and
// raised when the question's focus (positions of q.terms) is next to it,
// when the words before it bound it as the question does, and when a word
// of obligation is near a question about an obligation. A date is then
// weighed by the event its words say happens on it (clause.go), discounted
// when a change replaced it, and a span of a when or amount question by
// the phase it is about. ok is false when text has no span of the asked
// kind.
func (ix *Index) answerSpan(q *query, asked question, text string, spans []span, sc scanned, matched, context, focus []int, known float64, sctx *spanContext) (best spanScore) {
	if len(spans) == 0 || known == 0 {
		return best
	}
	base := 0.0
	for _, p := range context {
		base += q.terms[p].idf * contextLeadWeight
	}
	against := 1.0
	if contradicts(asked, text) {
		against = contradictionFactor
	}
	cuts := clauseCuts(text, spans, nil)
	// A question that names no phase asks when the obligation first
	// applies: of the dates a sentence says something starts on, the later
	// ones are later phases' ("From 1 January 2027, businesses whose
	// turnover… must send…; from 1 January 2028, all businesses must"), and
	// so is a date its clause says follows or extends an earlier phase
	// ("1 January 2028: the issuing obligation extends to all businesses").
	var first calendarDate
	anyPhase := asked.kind == askWhen && sctx.phases[phaseSize] == 0 && sctx.phases[phaseOrdinal] == 0 && sctx.phases[phaseScope] == 0
	// The event of each date (clause.go); a table's date column says it
	// in its header ("From", "Go live", "Appoint provider by").
	var events []eventKind
	if asked.kind == askWhen {
		events = make([]eventKind, len(spans))
		for k, sp := range spans {
			cStart, _ := clauseAround(text, cuts, sp)
			events[k] = dateEvent(text, cStart, sp)
			if events[k] == eventNone && sctx.cue != "" {
				events[k] = headerEvent(sctx.cue)
			}
			if d, ok := parseDate(text[sp.start:sp.end]); ok && anyPhase && events[k] == eventBegin && (first.year == 0 || d.before(first)) {
				first = d
			}
		}
	}
	// lists[k] are the first and last index of the list spans[k] is in
	// (itself, when it is in none).
	lists := make([][2]int, len(spans))
	for k := range spans {
		lists[k] = [2]int{k, k}
		if k > 0 && listedWith(text, spans[k-1], spans[k]) {
			lists[k][0] = lists[k-1][0]
		}
	}
	for k := len(spans) - 2; k >= 0; k-- {
		if listedWith(text, spans[k], spans[k+1]) {
			lists[k][1] = lists[k+1][1]
		}
	}
	scores := make([]float64, len(spans))
	at := -1 // best's index in spans
	for k, sp := range spans {
		if ix.restates(q, asked, text[sp.start:sp.end], text[sp.end:]) {
			continue
		}
		if sp.name {
			sp.fit *= ix.salience(text[sp.start:sp.end])
		}
		cStart, cEnd := clauseAround(text, cuts, sp)
		// A row's words stand next to each of its cells (rowAnswer).
		inClause := func(at int) bool { return sctx.row || at >= cStart && at < cEnd }
		// The spans of a list ("€1,500, €3,000 and €5,000") are as
		// near the words as the list is.
		unit := span{start: spans[lists[k][0]].start, end: spans[lists[k][1]].end}
		sum := base
		for _, p := range matched {
			w := farWordWeight
			for _, sw := range sc.words {
				if sw.pos == p && inClause(sw.at) {
					w = max(w, 1/(1+float64(unit.distance(sw.at))/proximityBytes))
				}
			}
			sum += q.terms[p].idf * w
		}
		v := against * sp.fit * sum / known
		if negated(text, sp.start) {
			v *= negationFactor
		}
		if asked.kind == askWhen {
			if asked.obliged && attributive(text, sp) {
				v *= asideFactor
			}
			ev := events[k]
			v *= eventFactor(asked.event, ev)
			if d, ok := parseDate(text[sp.start:sp.end]); ok && ev == eventBegin && first.year > 0 && first.before(d) ||
				anyPhase && ev != eventEnd && laterPhase.MatchString(text[cStart:cEnd]) {
				v *= laterPhaseFactor
			}
			if superseded(text, cStart, sp) {
				v *= supersededFactor
			}
		}
		if asked.kind == askWhen || asked.kind == askAmount {
			segment := sctx.sentence // a row's cells are one record
			if !sctx.row {
				segment = strongSegment(text, sp.start, sp.end)
			}
			v *= sctx.phases.factor(text[cStart:cEnd], segment, sctx.headPhases)
		}
		near := 0.0
		for _, sw := range sc.words {
			if containsInt(focus, sw.pos) && inClause(sw.at) {
				near = max(near, 1/(1+float64(unit.distance(sw.at))/focusBytes))
			}
		}
		v *= 1 + focusBoost*near
		if bounded(text, sp.start, asked.bound) || asked.group && (bounded(text, sp.start, boundAbove) || bounded(text, sp.start, boundBelow)) {
			// "Which bodies…" is answered by the threshold that sets them
			// apart ("agencies that handle more than 2,000 invoices").
			v *= boundBoost
		}
		if asked.obliged && (asked.kind == askWhen || asked.kind == askAmount) {
			// The nearer the word of obligation, the more: "its
			// mandatory date of 7 September" states when the obligation
			// starts, a date further along the sentence may not.
			near := 0.0
			for _, at := range sc.obliges {
				if inClause(at) {
					near = max(near, 1-float64(unit.distance(at))/obligationBytes)
				}
			}
			v *= 1 + (obligationBoost-1)*near
		}
		scores[k] = v
		if v > best.v {
			best, at = spanScore{sp: sp, v: v, ok: true}, k
		}
	}
	if !best.ok {
		return best
	}
	// Spans listed together ("€1,500, €3,000 and €5,000", "from 1 April
	// 2028 to 1 April 2031") answer together: when the next best span of
	// the sentence is listed with the best, the answer is the list, and
	// what may rival it is a span outside it.
	lo, hi := at, at
	for lo > lists[at][0] && scores[lo-1] > 0 {
		lo--
	}
	for hi < lists[at][1] && scores[hi+1] > 0 {
		hi++
	}
	inList := 0.0
	for k := lo; k <= hi; k++ {
		if k != at {
			inList = max(inList, scores[k])
		}
	}
	if inList >= tieShare*best.v {
		best.sp.start, best.sp.end = spans[lo].start, spans[hi].end
	} else {
		lo, hi = -1, -1
	}
	for k, v := range scores {
		if (k < lo || k > hi) && k != at {
			best.second = max(best.second, v)
		}
	}
	return best
}

// restates reports whether a span only repeats the question: its words
// are in the question ("…with revenue of AED 50m…" answers no "when"), or,
// for a name, every word of it is a term of the question or it names a
// country or specification the question names ("KSeF" for a question about
// Poland's clearance platform). after is the text after the span.
func (ix *Index) restates(q *query, asked question, s, after string) bool {
	if containsWords(asked.lower, strings.ToLower(s)) {
		return true
	}
	if asked.kind != askName && !asked.group {
		return false
	}
	all, known := true, 0
	scanWords(s, func(w word) {
		if w.joined {
			return
		}
		id, ok := ix.surfaceID(w.norm)
		if !ok || id < 0 {
			return
		}
		known++
		if _, asked := q.pos[id]; !asked {
			all = false
		}
	})
	if all && known > 0 {
		return true
	}
	// A name that is, or is qualified by, a country or specification the
	// question names ("New Zealand", "French-specific" for a question
	// about France) restates it; a name that is one of its other names
	// as a whole (a national platform such as "Chorus Pro") answers.
	var seq, raw []string
	scanWords(s, func(w word) {
		if !w.joined {
			seq, raw = append(seq, w.norm), append(raw, w.raw)
		}
	})
	for _, f := range ix.entities.matches(seq, raw) {
		id, ok := ix.termID(f.term)
		if !ok {
			continue
		}
		if _, asked := q.pos[id]; asked && (f.start > 0 || f.end < len(seq) || strings.EqualFold(ix.entities.names[f.term], s) || qualifies(s, after)) {
			return true
		}
	}
	return false
}

// qualifies reports whether s, one capitalised word ("French"), is used
// as an adjective: a lowercase word follows it ("the French model"). A
// country's demonym so used restates the country; a platform's name is
// written as a name ("Chorus Pro", "KSeF", "myDATA").
func qualifies(s, after string) bool {
	if strings.ContainsAny(s, " -/") || strings.ToLower(s[1:]) != s[1:] {
		return false
	}
	rest, ok := strings.CutPrefix(after, " ")
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsLower(r)
}

// salience rates a name span by its rarest word: "MikroeRačun" or
// "Chorus Pro" names something in particular; "Peppol" or "B2B", which
// most articles say, hardly answers "which".
func (ix *Index) salience(s string) float64 {
	best := 0.0
	scanWords(s, func(w word) {
		if id, ok := ix.surfaceID(w.norm); ok && id >= 0 {
			best = max(best, ix.idfOf(id))
		} else if !ok {
			best = ix.maxIDF()
		}
	})
	return 0.4 + 0.6*min(1, best/salientIDF)
}

// salientIDF is the idf from which a name counts as fully particular.
const salientIDF = 3

// negated reports whether the clause before a span denies it: "does not
// start on 1 January 2026", "instead of 1 January 2026".
func negated(text string, start int) bool {
	before := strings.ToLower(text[max(0, start-negationBytes):start])
	if i := strings.LastIndexAny(before, ",;:("); i >= 0 {
		before = before[i+1:]
	}
	for _, w := range []string{" not ", "n't ", "instead of ", "rather than ", "no longer ", "never "} {
		if strings.Contains(" "+before, w) {
			return true
		}
	}
	return false
}

// negationBytes is how far before a span a denial is looked for.
const negationBytes = 40

// asideFactor discounts a date that, for a question about when something
// must be done, is an aside: the day a text was published ("Published on
// 20 May, the release … becomes mandatory on 24 August") or a date that
// names an edition ("the May 2026 release").
const asideFactor = 0.6

// datesAText reports whether the words just before a span say it is when
// something was published, released, announced or dated.
func datesAText(text string, start int) bool {
	before := strings.ToLower(strings.TrimRight(text[max(0, start-24):start], " "))
	for _, w := range []string{"published on", "published", "released on", "released", "announced on", "dated", "issued on", "of"} {
		if w == "of" {
			// "its notice of 2 July" dates a text; "a pilot in July" does
			// not: only "… of" after a word for a text.
			for _, doc := range []string{"notice of", "letter of", "decision of", "release of", "notes of", "draft of", "report of"} {
				if strings.HasSuffix(before, doc) {
					return true
				}
			}
			continue
		}
		if strings.HasSuffix(before, w) {
			return true
		}
	}
	return false
}

// attributive reports whether a month or a year, not a full date, is
// used as an adjective after "the" or "its": "the May 2026 release" names
// the release, it does not say when anything applies.
func attributive(text string, sp span) bool {
	if d, ok := parseDate(text[sp.start:sp.end]); !ok || d.day > 0 {
		return false
	}
	before := strings.ToLower(strings.TrimRight(text[:sp.start], " "))
	for _, w := range []string{"the", "its", "their", "this", "a"} {
		if strings.HasSuffix(before, " "+w) || before == w {
			after := strings.TrimLeft(text[sp.end:], " ")
			r, _ := utf8.DecodeRuneInString(after)
			return unicode.IsLower(r)
		}
	}
	return false
}

// contradicts reports whether text states one of the question's bounded
// amounts on the other side ("AED 50m or more" for a question about firms
// "under AED 50m"): it is about the other group.
func contradicts(asked question, text string) bool {
	if len(asked.amounts) == 0 {
		return false
	}
	lower := strings.ToLower(text)
	other, same := false, false
	for _, a := range asked.amounts {
		for i := 0; ; {
			j := strings.Index(lower[i:], a.text)
			if j < 0 {
				break
			}
			at := i + j
			switch side := sideOf(lower, at, at+len(a.text)); {
			case side == a.side:
				same = true
			case side != boundNone:
				other = true
			}
			i = at + len(a.text)
		}
	}
	return other && !same
}

// focusPositions returns the positions of q.terms that the question's
// focus terms are, with the synonyms that stand for them.
func (q *query) focusPositions(focus []string) []int {
	var out []int
	for p, t := range q.terms {
		if slices.Contains(focus, t.text) && !containsInt(out, q.standsFor(p)) {
			out = append(out, q.standsFor(p))
		}
	}
	return out
}

// containsWords reports whether s occurs in text as whole words: "no" is
// not in "not".
func containsWords(text, s string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(text) || !isWordRune(after)) {
			return true
		}
		i = start + 1
	}
}

// rowAnswer finds the answer span of a table row. A row is a record, not
// prose: the question's words anywhere in it, the key cell's "Revenue of
// AED 50m or more" too, are next to each of its cells, and the header says
// which cell is which ("Go live" over "1 January 2027", "Appoint provider
// by" over "31 July 2026"). So each cell is scored as a sentence of its
// own, with the row's question words and its column's header words beside
// it; the span returned is in row's offsets.
func (ix *Index) rowAnswer(q *query, asked question, phrases []synPhrase, header, row string, matched, focus []int, known float64, sctx *spanContext) (best spanScore) {
	cellCtx := *sctx
	cellCtx.sentence, cellCtx.row = row, true
	var rs, hs scanned
	rs = ix.scan(q, row, rs)
	hs = ix.scan(q, header, hs)
	cells, heads := cellStarts(row), cellStarts(header)
	against := contradicts(asked, row)
	var sc scanned
	for k, start := range cells {
		end := len(row)
		if k+1 < len(cells) {
			end = cells[k+1] - len(cellSeparator)
		}
		sc.words, sc.obliges = sc.words[:0], sc.obliges[:0]
		for _, w := range rs.words {
			sc.words = append(sc.words, sentenceWord{pos: w.pos})
		}
		if k < len(heads) {
			hEnd := len(header)
			if k+1 < len(heads) {
				hEnd = heads[k+1]
			}
			for _, w := range hs.words {
				if w.at >= heads[k] && w.at < hEnd {
					sc.words = append(sc.words, sentenceWord{pos: w.pos})
				}
			}
			var ids []int32
			scanWords(header[heads[k]:hEnd], func(w word) {
				if id, ok := ix.surfaceID(w.norm); ok && id >= 0 {
					ids = append(ids, id)
				}
			})
			for _, ph := range phrases {
				if ph.in(ids) {
					sc.words = append(sc.words, sentenceWord{pos: ph.pos})
				}
			}
		}
		cell := row[start:end]
		cellCtx.cue = ""
		if k < len(heads) {
			hEnd := len(header)
			if k+1 < len(heads) {
				hEnd = heads[k+1] - len(cellSeparator)
			}
			cellCtx.cue = header[heads[k]:hEnd]
		}
		got := ix.answerSpan(q, asked, cell, answerSpans(asked, cell), sc, matched, nil, focus, known, &cellCtx)
		if !got.ok {
			continue
		}
		if against && !contradicts(asked, cell) {
			got.v *= contradictionFactor
		}
		if got.v > best.v {
			got.sp.start, got.sp.end = got.sp.start+start, got.sp.end+start
			best = got
		}
	}
	return best
}

// cellSeparator joins the cells of a table row's text (text.go).
const cellSeparator = " | "

// cellStarts returns the byte offsets at which the cells of a row's text
// start.
func cellStarts(row string) []int {
	out := []int{0}
	for i := 0; ; {
		j := strings.Index(row[i:], cellSeparator)
		if j < 0 {
			return out
		}
		i += j + len(cellSeparator)
		out = append(out, i)
	}
}

// readableRow reports whether a table row can be quoted as an answer: a
// few words across two cells or more, of readable length.
func readableRow(s string) bool {
	return strings.Contains(s, cellSeparator) && len(s) >= 20 && len(s) <= quoteMaxBytes && len(strings.Fields(s)) >= 4
}
