package ask

import (
	"regexp"
	"strings"
	"unicode"
)

// Summaries: 2–4 sentences quoted from the best results, the one that
// states the answer first (docs/decisions.md, ask). The lead is the sentence
// whose answer span scores best (answer.go); the others are chosen for how
// much of the question they cover, passing over near repeats.

// Summary selection parameters.
const (
	// summaryMinScore is the normalised score above which the best results
	// are quoted whatever the question asks. Between summaryFloorScore and
	// it, a summary needs a sentence that states an answer of the asked
	// kind and covers summaryWeakCoverage of the question's known words;
	// below the floor the results are a guess, and quoting them as an
	// answer would mislead.
	summaryMinScore     = 40
	summaryFloorScore   = 10
	summaryWeakCoverage = 0.3
	// summaryDocs is how many of the best results sentences are drawn from,
	// and summaryDocShare how close to the best result one must score.
	summaryDocs = 3
	// otherCountryFactor discounts a sentence as the answer to a question
	// about a country that neither it nor its article is about.
	otherCountryFactor = 0.5
	// otherSideFactor discounts a sentence about receiving as the answer
	// to a question about sending, or the reverse.
	otherSideFactor = 0.5
	// sameSizeBoost prefers, for a question about the large or the small
	// businesses, a sentence that names the same size class.
	sameSizeBoost = 1.25
	// summaryLeadDocs is how many of the best results the lead may come
	// from: the article that states the answer is not always among the
	// three that match the question's words best (a reader's "British
	// firms" finds the German rules first), and one that does is quoted
	// for its answer, the sentences after it still coming from the
	// summaryDocs best.
	summaryLeadDocs = 5
	summaryDocShare = 0.6
	// summaryNewer is the most a later report is preferred over an earlier
	// one.
	summaryNewer = 0.1
	// summaryMinCoverage is the share of the question a sentence must cover.
	summaryMinCoverage = 0.3
	// summaryMin and summaryMax bound the number of sentences (docs/decisions.md (ask): 2–4).
	summaryMin = 2
	summaryMax = 4
	// mmrLambda trades relevance against novelty (maximal marginal
	// relevance, Carbonell and Goldstein 1998): sentences that repeat one
	// already chosen are passed over.
	mmrLambda = 0.7
	// answerMix adds to a sentence's worth for the summary how well it
	// states an answer: the runner-up answers follow the lead, so a reader
	// whose answer is not the lead's finds it next.
	answerMix = 2.0
	// tieShare is how close to the lead's answer span the next best span
	// of its sentence may score for the span still to be given: closer,
	// the words do not settle which of the two answers, and a wrong span
	// is worse than none (the sentence is still quoted first).
	tieShare = 0.9
	// yesNoBoost prefers, among the sentences that restate a yes-no
	// question, one that says yes or no.
	yesNoBoost = 1.1
	// Quoted sentences are of readable length.
	quoteMinBytes = 40
	quoteMaxBytes = 400
	quoteMinWords = 6
)

// candidate is a sentence that may go into a summary.
type candidate struct {
	// rank is its article's rank among the results.
	rank int
	text string
	url  string
	// doc and sent locate the sentence in its article's text.
	doc  *doc
	sent int
	// score is the sentence's worth as a summary sentence: its coverage,
	// a little less for later results and later sentences.
	score float64
	// cov is the share of the question the sentence covers.
	cov   float64
	terms []int32
	// lead is how well the sentence states an answer of the asked type
	// (answerSpan's score, weighed by its article's rank and age); 0 when
	// it carries no such span. For a question that asks for no span, it is
	// how well the sentence covers the question and its focus.
	lead float64
	// span is the answer span, as byte offsets into text, when spanned;
	// margin is the score of the sentence's next best span as a share of
	// the span's (spanScore).
	span    span
	spanned bool
	margin  float64
	// header is, for a table row, its table's header row.
	header string
	// leadIn is, for a list item that continues the sentence before its
	// list, that sentence.
	leadIn string
	// onSubject is false when the question has subject words
	// (subjectTerms) and neither the sentence nor its article says any of
	// them, by itself or by a synonym: the article does not speak of what
	// was asked, and its span answers another question.
	onSubject bool
}

// refersBack matches a sentence that opens by referring to the one before
// ("It becomes mandatory…", "Despite the similar name, it is…"): the
// question words of that one are its context.
var refersBack = regexp.MustCompile(`^(?:[^,;:]{0,60},\s+)?(?:[Ii]t|[Tt]his|[Tt]hese|[Tt]hose|[Tt]hey|[Ii]ts|[Tt]heir|[Bb]oth|[Ss]uch)\b`)

// summarize picks 2–4 sentences from the best results that together answer
// the question, the one that states an answer of the asked kind first, or
// returns nil when the results are not strong enough or too few sentences
// qualify.
func (ix *Index) summarize(q *query, asked question, hits []hit) *Summary {
	if len(hits) == 0 || hits[0].norm < summaryFloorScore {
		return nil
	}
	known := q.knownIDF()
	if known == 0 {
		return nil
	}
	cands := ix.candidates(q, asked, hits, known)
	var picked []candidate
	// The lead: the sentence that best states an answer of the asked kind.
	lead := -1
	for i, c := range cands {
		if c.lead > 0 && (lead < 0 || c.lead > cands[lead].lead) {
			lead = i
		}
	}
	if lead >= 0 {
		cands, lead = fullerDate(asked, cands, lead)
		picked = append(picked, cands[lead])
		cands = append(cands[:lead], cands[lead+1:]...)
	}
	// A question the articles match only weakly gets a summary only when
	// one sentence states an answer of the kind asked and covers most of
	// the question: otherwise the quotes would be a guess. A question
	// that names no country or specification and is more about words no
	// article contains than about words the articles use gets none:
	// "When will the cafeteria go live?" is not answered by a sentence
	// that says when something goes live, however well it covers "go
	// live". A question that names one is about the corpus, and its
	// unknown words are the reader's ("Kiwi", "settlement").
	if hits[0].norm < summaryMinScore && (len(picked) == 0 || picked[0].cov < summaryWeakCoverage || !q.entities && q.unknownIDF() > known) {
		return nil
	}
	for len(picked) < summaryMax {
		best, bestVal := -1, 0.0
		for i, c := range cands {
			if c.header != "" {
				continue // a table row is quoted only as the answer
			}
			if c.rank >= summaryDocs && (len(picked) == 0 || c.doc != picked[0].doc) {
				continue // beyond the best few, only the lead's article
			}
			sim := 0.0
			for _, p := range picked {
				sim = max(sim, jaccard(c.terms, p.terms))
			}
			if sim > 0.6 {
				continue // a near repeat of a sentence already chosen
			}
			if v := mmrLambda*(c.score+answerMix*c.lead) - (1-mmrLambda)*sim; best < 0 || v > bestVal {
				best, bestVal = i, v
			}
		}
		if best < 0 || bestVal <= 0 {
			break
		}
		picked = append(picked, cands[best])
		cands = append(cands[:best], cands[best+1:]...)
	}
	if len(picked) < summaryMin && len(picked) > 0 {
		// The answer stands alone: the sentence next to it in its article
		// is its context.
		if c, ok := ix.neighbour(picked[0], picked); ok {
			picked = append(picked, c)
		}
	}
	if len(picked) < summaryMin {
		return nil
	}
	s := &Summary{Type: "SearchSummary", Citations: []string{}, Sentences: make([]Quote, 0, len(picked))}
	texts := make([]string, 0, len(picked))
	for _, p := range picked {
		quote := Quote{Text: p.text, URL: p.url, Header: p.header, LeadIn: p.leadIn}
		if p.leadIn != "" {
			// The item reads as what it is only after its lead-in.
			texts = append(texts, p.leadIn)
		}
		texts = append(texts, p.text)
		if relativeToWriting(p.leadIn) || relativeToWriting(p.text) {
			quote.DatePublished = dateOf(p.doc)
		}
		s.Sentences = append(s.Sentences, quote)
		if !containsString(s.Citations, p.url) {
			s.Citations = append(s.Citations, p.url)
		}
	}
	s.Text = strings.Join(texts, " ")
	// The span is given only when its sentence is about what was asked: a
	// turnover threshold of a Spanish article does not answer "How much is
	// the fine in Spain?" when no Spanish article speaks of fines. The
	// sentence is still quoted: it is what the articles say.
	if p := picked[0]; p.spanned && p.margin < tieShare && p.onSubject {
		s.Answer = &AnswerSpan{Text: p.text[p.span.start:p.span.end], Sentence: p.text, URL: p.url, Kind: asked.kind.String(), DatePublished: s.Sentences[0].DatePublished}
	}
	return s
}

// candidates returns the sentences of the best results that cover enough
// of the question to be quoted, each scored as a summary sentence and as
// the answer.
func (ix *Index) candidates(q *query, asked question, hits []hit, known float64) []candidate {
	// Newer articles are preferred a little: where a fact changed (a date
	// moved, a threshold rose) the later report states it. The preference
	// grows with the time between the reports, up to summaryNewer after
	// half a year; reports a few days apart are the same news.
	docs := hits[:min(summaryLeadDocs, len(hits))]
	oldest := docs[0].text.published
	for _, h := range docs {
		if p := h.text.published; p.Before(oldest) {
			oldest = p
		}
	}
	focus := q.focusPositions(asked.focus)
	aliases := ix.aliasWords(q, asked.text)
	subject := ix.subjectTerms(q, asked, aliases)
	phrases := ix.phraseSynonyms(q)
	askedSide := exchangeSide(asked.text)
	var sctx spanContext
	if asked.kind == askWhen || asked.kind == askAmount {
		sctx.phases = phasesOf(asked.text)
	}
	var countries []int // the positions of the countries the question names
	for p, t := range q.terms {
		if strings.HasPrefix(t.text, countryTerm("")) && t.synonymOf == 0 {
			countries = append(countries, p)
		}
	}
	var (
		cands                    []candidate
		matched, before, context []int
		inDoc, framed            []int
		shorts                   []shortForm
		shortWords               []sentenceWord
		sc                       scanned
	)
	for rank, h := range docs {
		if float64(h.norm) < summaryDocShare*float64(hits[0].norm) {
			break
		}
		d := h.text
		// The countries and specs the article is filed under count for
		// every sentence of it: "The obligation starts on 1 January 2026"
		// answers a question about Belgium in an article about Belgium.
		filed := ix.filedUnder(q, h)
		// Earlier results and earlier sentences are preferred a little:
		// the best article leads, and articles put their news first.
		prior := 1 - 0.1*float64(rank)
		// The lead is chosen on what a sentence says, not where it sits:
		// a little for how well its article matches, a little for being the
		// newest report.
		leadPrior := 0.8 + 0.2*float64(h.norm)/float64(hits[0].norm)
		newer := 1 + summaryNewer*min(1, d.published.Sub(oldest).Hours()/(182*24))
		prior *= newer
		leadPrior *= newer
		// The headline says what the article's news is: an answer span it
		// repeats is the article's own answer.
		headline := d.title
		sctx.headPhases = sctx.phases.only(headline)
		before = before[:0]
		inDoc = ix.articleTerms(q, h, inDoc)
		// The article says the question's subject, or each of its
		// sentences must (through a phrase synonym, a short form or a
		// table's header, which the article's terms do not hold).
		docOnSubject := len(subject) == 0 || len(intersect(subject, inDoc)) > 0
		shorts = ix.abbreviations(q, d, shorts)
		for i := range d.sentenceCount() {
			s := d.sentence(i)
			row := s.kind == kindTable && s.head >= 0
			if !s.quotable() && !row {
				before = before[:0] // a heading starts a new passage
				continue
			}
			matched = q.sentenceTerms(d, i, matched)
			for _, ph := range phrases {
				if !containsInt(matched, ph.pos) && ph.in(d.termIDs(i)) {
					matched = append(matched, ph.pos)
				}
			}
			if row {
				// A row says what its header says of each cell: "Go
				// live" over "1 January 2027".
				for _, p := range q.sentenceTerms(d, int(s.head), nil) {
					if !containsInt(matched, p) {
						matched = append(matched, p)
					}
				}
				for _, ph := range phrases {
					if !containsInt(matched, ph.pos) && ph.in(d.termIDs(int(s.head))) {
						matched = append(matched, ph.pos)
					}
				}
			}
			// A short form the article defines says its long form's
			// words ("G3" for "the third-generation Peppol PKI").
			shortWords = shortFormsIn(shorts, s.text, shortWords[:0])
			for _, w := range shortWords {
				if !containsInt(matched, w.pos) {
					matched = append(matched, w.pos)
				}
			}
			for _, p := range filed {
				if !containsInt(matched, p) {
					matched = append(matched, p)
				}
			}
			for _, p := range matched {
				for _, w := range aliases[p] {
					if !containsInt(matched, w) {
						matched = append(matched, w)
					}
				}
			}
			context = context[:0]
			if !row && s.refersBack {
				for _, p := range before {
					if !containsInt(matched, p) {
						context = append(context, p)
					}
				}
			}
			if s.lead >= 0 {
				// An item that continues its list's lead-in says what the
				// lead-in says ("The draft order would: … bring all other
				// businesses in … on 1 October 2028"), as a sentence that
				// refers back does.
				for _, p := range q.sentenceTerms(d, int(s.lead), nil) {
					if !containsInt(matched, p) && !containsInt(context, p) {
						context = append(context, p)
					}
				}
			}
			if row {
				before = before[:0]
				if !readableRow(s.text) || !spanKind(asked.kind) || asked.kind == askYesNo {
					continue
				}
			} else {
				before = append(before[:0], matched...)
				if !readable(s.text, s.kind == kindItem) {
					continue
				}
			}
			framed = framed[:0]
			for _, p := range inDoc {
				if !containsInt(matched, p) && !containsInt(context, p) {
					framed = append(framed, p)
				}
			}
			own, inherited := q.coverageOf(matched, known), q.coverageOf(context, known)
			// The words of the sentence before make this one about the
			// question; they are not what it says.
			said := own + contextWeight*inherited
			cov := said + articleWeight*q.coverageOf(framed, known)
			if cov < summaryMinCoverage {
				continue
			}
			// A sentence quoted only for its article's words is worth
			// quoting only as the answer: it must say some of the
			// question itself and hold a span of the asked kind.
			framedOnly := said < summaryMinCoverage
			if framedOnly && (said == 0 || !spanKind(asked.kind) || asked.kind == askYesNo) {
				continue
			}
			c := candidate{rank: rank, text: s.text, url: d.url, doc: d, sent: i, score: said * prior / (1 + 0.02*float64(i)), cov: cov, terms: sentenceIDs(d, i)}
			if !spanKind(asked.kind) || asked.kind == askYesNo {
				// What, why and how ask for no span, and the answer to a
				// yes-no question restates it: the sentence that covers
				// the question, and the noun it asks about, best leads; a
				// yes-no answer that says yes or no a little more.
				c.lead = (own + contextLeadWeight*inherited + q.coverageOf(intersect(matched, focus), known)) * prior / (1 + 0.02*float64(i))
				if asked.kind == askYesNo {
					if spans := d.spansOf(i, asked); len(spans) > 0 {
						c.span, c.spanned = spans[0], true
						c.lead *= yesNoBoost
					}
				}
			} else {
				var got spanScore
				sctx.sentence = s.text
				if row {
					got = ix.rowAnswer(q, asked, phrases, d.sentence(int(s.head)).text, s.text, matched, focus, known, &sctx)
				} else {
					sc = ix.scan(q, s.text, sc)
					sc.words = append(sc.words, shortWords...)
					got = ix.answerSpan(q, asked, s.text, d.spansOf(i, asked), sc, matched, context, focus, known, &sctx)
				}
				if got.ok {
					c.span, c.spanned, c.margin = got.sp, true, got.second/got.v
					c.lead = got.v * leadPrior / (1 + 0.01*float64(i))
					if s.kind != kindDek && strings.Contains(headline, s.text[got.sp.start:got.sp.end]) {
						c.lead *= 1.2
					}
				}
			}
			if askedSide != 0 && c.lead > 0 && !(c.spanned && (asked.kind == askWhen || asked.kind == askAmount)) && exchangeSide(s.text) == sideBoth^askedSide {
				// "Must firms send…" is not answered by what they must
				// receive: the two obligations have their own dates and
				// rules. (A date or an amount is read by the side its
				// clause names, answerSpan.)
				c.lead *= otherSideFactor
			}
			if len(countries) > 0 && len(intersect(matched, countries)) == 0 {
				// The question names a country that neither the sentence
				// nor its article's filing does: its date or amount is
				// another country's.
				c.lead *= otherCountryFactor
			}
			if framedOnly && !c.spanned {
				continue
			}
			if row {
				if !c.spanned {
					continue // a row is quoted only for the answer it holds
				}
				c.header = d.sentence(int(s.head)).text
			}
			if s.lead >= 0 {
				c.leadIn = d.sentence(int(s.lead)).text
			}
			c.onSubject = docOnSubject || len(intersect(subject, matched)) > 0 || len(intersect(subject, context)) > 0
			cands = append(cands, c)
		}
	}
	return cands
}

// neighbour returns the quotable sentence next to c in its article (the
// one after, else the one before) that is not already picked.
func (ix *Index) neighbour(c candidate, picked []candidate) (candidate, bool) {
	d := c.doc
	for _, i := range []int{c.sent + 1, c.sent - 1} {
		if i < 0 || i >= d.sentenceCount() {
			continue
		}
		s := d.sentence(i)
		if !s.whole() || !readable(s.text, s.kind == kindItem) {
			continue
		}
		dup := false
		for _, p := range picked {
			dup = dup || p.text == s.text
		}
		if !dup {
			return candidate{text: s.text, url: d.url, doc: c.doc, sent: i, terms: sentenceIDs(d, i)}, true
		}
	}
	return candidate{}, false
}

// intersect returns the elements of a that are in b.
func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if containsInt(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// fullerDateShare is how well, against the lead, a sentence must state an
// answer for its fuller form of the lead's date to lead instead.
const fullerDateShare = 0.5

// fullerDate returns the candidate that states the lead's date in full,
// when the lead gives it only in part ("from April 2028", "on 24 August")
// and another quotable sentence or row of the answer gives the same date
// with its day or year ("1 April 2028", "24 August 2026") and states an
// answer at least fullerDateShare as well; else lead. The reader asked
// when: the full date answers, and it is the same fact.
func fullerDate(asked question, cands []candidate, lead int) ([]candidate, int) {
	if asked.kind != askWhen || !cands[lead].spanned {
		return cands, lead
	}
	l := cands[lead]
	want, ok := parseDate(l.text[l.span.start:l.span.end])
	if !ok || want.full() || want.month == 0 {
		// A bare year is not upgraded: "2026" and "January 2026" may
		// be different facts of the same year.
		return cands, lead
	}
	best := lead
	// The same article's other sentences first: its text gives the date
	// in full where its standfirst shortens it, whatever else they say.
	d := l.doc
	for i := range d.sentenceCount() {
		s := d.sentence(i)
		if i == l.sent || !s.whole() || !readable(s.text, s.kind == kindItem) {
			continue
		}
		for _, m := range dateSpan.FindAllString(s.text, -1) {
			if got, ok := parseDate(m); ok && got.completes(want) && !negated(s.text, strings.Index(s.text, m)) {
				c := candidate{text: s.text, url: l.url, doc: d, sent: i, score: l.score, cov: l.cov, terms: sentenceIDs(d, i), lead: l.lead, span: spanOf(s.text, m), spanned: true, margin: l.margin, onSubject: l.onSubject}
				return append(cands, c), len(cands)
			}
		}
	}
	for i, c := range cands {
		if i == lead || !c.spanned || c.lead < fullerDateShare*l.lead {
			continue
		}
		for _, m := range dateSpan.FindAllString(c.text, -1) {
			got, ok := parseDate(m)
			if ok && got.completes(want) && (best == lead || c.lead > cands[best].lead) {
				best = i
				cands[i].span = spanOf(c.text, m)
			}
		}
	}
	return cands, best
}

// calendarDate is a date as an article writes it, with the parts it
// gives (0 for a missing part).
type calendarDate struct{ day, month, year int }

var datePattern = regexp.MustCompile(`^(?:(\d{1,2}) )?(` + month + `)(?: (\d{1,2}),)?(?: (\d{4}))?$|^((?:19|20)\d{2})$`)

func parseDate(s string) (calendarDate, bool) {
	m := datePattern.FindStringSubmatch(s)
	if m == nil {
		return calendarDate{}, false
	}
	atoi := func(s string) int {
		n := 0
		for _, r := range s {
			n = n*10 + int(r-'0')
		}
		return n
	}
	if m[5] != "" {
		return calendarDate{year: atoi(m[5])}, true
	}
	d := calendarDate{day: atoi(m[1] + m[3]), year: atoi(m[4])}
	for i, name := range monthNames {
		if name == m[2] {
			d.month = i + 1
		}
	}
	return d, true
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// before reports whether d is an earlier date than e, a missing part
// counting as the earliest ("2027" before "1 January 2027").
func (d calendarDate) before(e calendarDate) bool {
	if d.year != e.year {
		return d.year < e.year
	}
	if d.month != e.month {
		return d.month < e.month
	}
	return d.day < e.day
}

// full reports whether d has its day, month and year.
func (d calendarDate) full() bool { return d.day > 0 && d.month > 0 && d.year > 0 }

// completes reports whether d is the date partial gives, with more of its
// parts: every part partial has is the same in d.
func (d calendarDate) completes(partial calendarDate) bool {
	same := func(a, b int) bool { return b == 0 || a == b }
	more := (d.day > 0 && partial.day == 0) || (d.month > 0 && partial.month == 0) || (d.year > 0 && partial.year == 0)
	return more && same(d.day, partial.day) && same(d.month, partial.month) && same(d.year, partial.year) && d.year > 0
}

// spanOf returns the span of the first occurrence of m in text.
func spanOf(text, m string) span {
	i := strings.Index(text, m)
	return span{start: i, end: i + len(m), fit: 1, typ: typeDate}
}

// The two sides of an e-invoicing obligation, which take effect on their
// own dates: issuing (sending) and receiving (accepting).
const (
	sideIssue   = 1
	sideReceive = 2
	sideBoth    = sideIssue | sideReceive
)

// exchangeSide tells which side of the exchange text speaks of: sideIssue,
// sideReceive, 0 for neither and sideBoth for both (which contradicts
// neither).
func exchangeSide(text string) int {
	side := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		switch {
		case strings.HasPrefix(w, "issu") || strings.HasPrefix(w, "send") || w == "sent":
			side |= sideIssue
		case strings.HasPrefix(w, "receiv") || strings.HasPrefix(w, "accept") || w == "reception":
			side |= sideReceive
		}
	}
	if side == sideBoth {
		return 0
	}
	return side
}
