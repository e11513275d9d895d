package ask

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Answer spans by type. They are found in sentence text, so they see the
// words as written ("1 January 2026", "€800,000", "PLN 200m", "95%",
// "130 characters", "D22B", "MikroeRačun").
var (
	month = `(?:January|February|March|April|May|June|July|August|September|October|November|December)`
	// dateSpan finds a day and month with or without a year, a month and
	// year, a qualified year ("mid-2028", "end of 2027"), or a year.
	dateSpan = digits(`\b(?:\d{1,2} `+month+`(?: \d{4})?|`+month+` \d{1,2}, \d{4}|`+month+` \d{4}|(?i:mid|early|late|end of|the end of)[- ]\d{4}|(?:19|20)\d{2}(?:/\d{2})?)\b`, func(t string) bool { return digitRun(t, 4) || containsAny(t, months) })
	// moneySpan finds an amount with its currency, before or after it.
	moneySpan = digits(`(?:[€$£]|\b(?:NZ|A|S|US|C)\$|\b(?:PLN|RM|SAR|AED|EUR|USD|GBP|NOK|SEK|DKK|CHF|HUF|RON|JPY|INR|MXN|BRL|SGD|NZD|AUD|MYR)\s?)\d+(?:[.,]\d+)*(?:\s?(?:m|bn|k|million|billion)\b)?|\b\d+(?:[.,]\d+)*\s?(?:million|billion)?\s?(?:euros?|EUR|dollars|pounds|kroner|zloty|ringgit|dirhams?|riyals?|francs)\b`, func(t string) bool { return strings.ContainsAny(t, "€$£") || containsAny(t, currencies) })
	// shareSpan finds a percentage.
	shareSpan = digits(`\b\d+(?:[.,]\d+)?\s?(?:%|per ?cent\b)`, func(t string) bool { return strings.IndexByte(t, '%') >= 0 || strings.Contains(t, "per") })
	// measureSpan finds a count or a duration with its unit: "130
	// characters", "five business days", "14 codes".
	measureSpan = regexp.MustCompile(`(?i)\b(?:\d+(?:[.,]\d+)*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty)[- ](?:(?:business|working|calendar)[- ])?(?:characters|days?|months?|years?|weeks?|hours?|minutes?|seconds?|bytes)\b`)
	// number finds a number, with its thousands separators or decimals and
	// a following "million" or "billion".
	number = digits(`\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+(?:\.\d+)?\b(?:\s(?:million|billion)\b)?`, nil)
	// versionSpan finds a version number ("3.0.2", "1.3.16").
	versionSpan = digits(`\b\d+\.\d+(?:\.\d+)*\b|\bport \d+\b`, func(t string) bool { return digitDotDigit(t) || strings.Contains(t, "port ") })
	// codeSpan finds a code of capitals and digits ("D22B", "RF20").
	codeSpan = digits(`\b[A-Z]{1,4}\d{1,4}[A-Z]?\b`, capitalDigit)
	// numericCode finds a code of three digits or more ("401").
	numericCode = digits(`\b\d{3,}\b`, func(t string) bool { return digitRun(t, 3) })
	// nameSpan finds proper names: runs of capitalised words or acronyms,
	// and mixed-case brand names ("eRačun", "myDATA").
	nameSpan = regexp.MustCompile(`(?:\p{Lu}[\p{L}\p{N}]*(?:[-/][\p{L}\p{N}]+)*(?:\s+(?:of|for|and|de|du|la|della|delle)?\s*\p{Lu}[\p{L}\p{N}]*(?:[-/][\p{L}\p{N}]+)*)*|\p{Ll}+\p{Lu}[\p{L}]+)(?:\s\d+(?:\.\d+)+)?`)
	// yesNoSpan finds the words that settle a yes-no question.
	yesNoSpan = regexp.MustCompile(`(?i)\b(?:no|not|never|none|nothing|only|yes|nearly identical|identical|separate|unclear|not yet|already|unconfirmed)\b`)
	// unknownSpan finds a negation that says what is not known ("is not
	// something our sources show", "not confirmed", "could not confirm"):
	// it answers neither yes nor no, so its "not" is no answer.
	unknownSpan = regexp.MustCompile(`(?i)\b(?:not (?:something|anything) (?:our|the) sources? (?:shows?|says?|confirms?)|not (?:been |yet )?(?:confirmed|known|clear|verified)|(?:cannot|can't|could not|couldn't|did not|have not been able to) (?:confirm|verify|say|tell))\b`)
	// modalSpan finds the words that settle a yes-no question about an
	// obligation ("Is Peppol mandatory in Japan?").
	modalSpan = regexp.MustCompile(`(?i)\b(?:optional|voluntary|mandatory|compulsory|required|exempt|allowed|permitted|free to|may)\b`)
)

// digitPattern is an expression that matches only text with an ASCII digit
// in it: every alternative of it holds a \d, which in Go's syntax is
// [0-9]. Most sentences have no digit, and looking for one is far cheaper
// than running the expression (the span expressions were about a third of
// an answer's CPU time, docs/scale.md). may, when set, is a further cheap
// test that every match passes: a word or a pair of characters each
// alternative needs ("%" or "per" for a share).
type digitPattern struct {
	re  *regexp.Regexp
	may func(string) bool
}

// digits compiles expr, which must match only text holding a digit
// (TestDigitPatternsNeedADigit) and passing may, if may is not nil
// (TestDigitPatternsPrefilter).
func digits(expr string, may func(string) bool) digitPattern {
	return digitPattern{regexp.MustCompile(expr), may}
}

// possible reports whether the expression can match text.
func (p digitPattern) possible(text string) bool {
	return hasDigit(text) && (p.may == nil || p.may(text))
}

// FindAllStringIndex is regexp.Regexp's, nil at once for text the
// expression cannot match.
func (p digitPattern) FindAllStringIndex(text string, n int) [][]int {
	if !p.possible(text) {
		return nil
	}
	return p.re.FindAllStringIndex(text, n)
}

// FindAllString is regexp.Regexp's, nil at once for text the expression
// cannot match.
func (p digitPattern) FindAllString(text string, n int) []string {
	if !p.possible(text) {
		return nil
	}
	return p.re.FindAllString(text, n)
}

// months are the words of dateSpan's month; currencies the words one of
// moneySpan's alternatives needs when there is no currency sign.
var (
	months     = strings.Fields("January February March April May June July August September October November December")
	currencies = strings.Fields("PLN RM SAR AED EUR USD GBP NOK SEK DKK CHF HUF RON JPY INR MXN BRL SGD NZD AUD MYR euro dollars pounds kroner zloty ringgit dirham riyal francs")
)

// containsAny reports whether s contains one of words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// digitRun reports whether s holds n ASCII digits in a row.
func digitRun(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			if run++; run == n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// digitDotDigit reports whether s holds a digit, a dot and a digit in a
// row ("3.0").
func digitDotDigit(s string) bool {
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '.' && isASCIIDigit(s[i-1]) && isASCIIDigit(s[i+1]) {
			return true
		}
	}
	return false
}

// capitalDigit reports whether s holds a capital A-Z followed by a digit
// ("D22B").
func capitalDigit(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' && isASCIIDigit(s[i+1]) {
			return true
		}
	}
	return false
}

func isASCIIDigit(c byte) bool { return '0' <= c && c <= '9' }

// hasDigit reports whether s holds an ASCII digit.
func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			return true
		}
	}
	return false
}

// finder is what answerSpans needs of an expression.
type finder interface {
	FindAllStringIndex(text string, n int) [][]int
}

// calendarWords are capitalised words that name a time, not a party or a
// format: a name span made only of them is a date.
var calendarWords = map[string]bool{
	"January": true, "February": true, "March": true, "April": true, "May": true, "June": true, "July": true,
	"August": true, "September": true, "October": true, "November": true, "December": true,
	"Monday": true, "Tuesday": true, "Wednesday": true, "Thursday": true, "Friday": true, "Saturday": true, "Sunday": true,
}

// spanKind reports whether questions of kind k are answered by a span.
func spanKind(k questionKind) bool {
	return k == askWhen || k == askAmount || k == askName || k == askYesNo
}

// span is a candidate answer in a sentence: byte offsets, and how precisely
// it answers the question (1 for a span of exactly the asked type).
type span struct {
	start, end int
	fit        float64
	// name is true for a proper name, whose fit depends on how
	// particular it is (Index.salience).
	name bool
	// typ is what the span is: a date, an amount of money…
	typ uint8
}

// Types of span.
const (
	typeDate uint8 = iota + 1
	typeMoney
	typeShare
	typeMeasure
	typeVersion
	typeCode
	typeCount
	typeName
	typeWord
)

// answerSpans returns the spans of sentence text that could answer asked,
// in order of their start; nil for kinds without a span type (what, why,
// how).
func answerSpans(asked question, text string) []span {
	var out []span
	add := func(re finder, fit func(string) float64, typ uint8) {
		for _, m := range re.FindAllStringIndex(text, -1) {
			if f := fit(text[m[0]:m[1]]); f > 0 {
				out = addSpan(out, span{start: m[0], end: m[1], fit: f, typ: typ})
			}
		}
	}
	switch asked.kind {
	case askWhen:
		add(dateSpan, dateFit, typeDate)
	case askAmount:
		// Dates are found first and left out: "20" of "20 January" and
		// the year 2027 are not amounts.
		for _, m := range dateSpan.FindAllStringIndex(text, -1) {
			out = append(out, span{start: m[0], end: m[1]})
		}
		fit := amountFits[asked.unit]
		add(moneySpan, fixed(fit.money), typeMoney)
		add(shareSpan, fixed(fit.share), typeShare)
		add(measureSpan, fixed(fit.measure), typeMeasure)
		// A version is not a count either, even when versions are not
		// asked for: "1.1" of "1.1.3" is no amount.
		for _, m := range versionSpan.FindAllStringIndex(text, -1) {
			out = addSpan(out, span{start: m[0], end: m[1], fit: fit.version, typ: typeVersion})
		}
		add(codeSpan, fixed(fit.code), typeCode)
		if asked.unit == unitCode {
			add(numericCode, fixed(1), typeCode)
		}
		if fit.count > 0 {
			for _, sp := range countSpans(text, fit.count, fit.bare) {
				out = addSpan(out, sp)
			}
		}
		if asked.unit == unitCode {
			for _, sp := range nameSpans(text) {
				sp.fit = 0.7
				out = addSpan(out, sp)
			}
		}
		if asked.group {
			// "Which bodies…": those that handle more than 2,000
			// invoices, or a named one.
			for _, sp := range countSpans(text, 0.9, 0) {
				out = addSpan(out, sp)
			}
			for _, sp := range nameSpans(text) {
				sp.fit = 0.6
				out = addSpan(out, sp)
			}
		}
		out = slices.DeleteFunc(out, func(sp span) bool { return sp.fit == 0 })
		slices.SortFunc(out, func(a, b span) int { return a.start - b.start })
	case askName:
		out = nameSpans(text)
	case askYesNo:
		// What is not known blocks the words inside it, as dates do for
		// amounts, and is then left out.
		for _, m := range unknownSpan.FindAllStringIndex(text, -1) {
			out = append(out, span{start: m[0], end: m[1]})
		}
		add(yesNoSpan, fixed(1), typeWord)
		if asked.obliged {
			add(modalSpan, fixed(1), typeWord)
		}
		out = slices.DeleteFunc(out, func(sp span) bool { return sp.fit == 0 })
		slices.SortFunc(out, func(a, b span) int { return a.start - b.start })
	}
	return out
}

func fixed(f float64) func(string) float64 { return func(string) float64 { return f } }

// addSpan adds sp to spans unless a span found earlier overlaps it: the
// expressions are tried from the most precise to the least, so "€1,500" is
// money, not a bare number.
func addSpan(spans []span, sp span) []span {
	for _, o := range spans {
		if sp.start < o.end && o.start < sp.end {
			return spans
		}
	}
	return append(spans, sp)
}

// amountFit is how well each type of number answers an amount question of
// one unit.
type amountFit struct {
	money, share, measure, count, bare, version, code float64
}

// amountFits is by unit: "how many" takes a counted noun or a bare number,
// "which version" a version, "what fine" an amount of money (or a share of
// the tax), and an amount question of no particular unit takes any amount
// with its unit.
var amountFits = [...]amountFit{
	unitAny:      {money: 1, share: 1, measure: 1, version: 0.7},
	unitMoney:    {money: 1, share: 0.7, measure: 0.3, version: 0.2},
	unitShare:    {money: 0.4, share: 1, measure: 0.3},
	unitCount:    {money: 0.4, share: 0.4, measure: 0.8, count: 1, bare: 0.9},
	unitDuration: {money: 0.3, share: 0.3, measure: 1, version: 0.2},
	unitVersion:  {money: 0.2, share: 0.2, measure: 0.2, version: 1, code: 0.9},
	unitCode:     {version: 1, code: 1},
}

// dateFit rates how precisely a date answers "when": a day and month (with
// or without the year) fully, a month and year or a qualified year nearly,
// a bare year less. A year is the answer when nothing finer is decided
// ("around 2032"), so it is not ruled out.
func dateFit(s string) float64 {
	switch {
	case s[0] >= '0' && s[0] <= '9' && strings.Contains(s, " "):
		return 1 // 1 January 2026, 24 August
	case strings.Contains(s, ","):
		return 1 // January 1, 2026
	case strings.Contains(s, " ") && !strings.HasPrefix(s, "end") && !strings.HasPrefix(s, "the"):
		return 0.85 // April 2029
	case len(s) > 7:
		return 0.85 // mid-2028, end of 2027
	}
	return 0.8
}

// nameSpans finds proper names in text. The sentence's first word is
// capitalised anyway: it names something only if the word after it is
// capitalised too, or it is an acronym. Months and weekdays are dates.
func nameSpans(text string) []span {
	var out []span
	for _, m := range nameSpan.FindAllStringIndex(text, -1) {
		s := text[m[0]:m[1]]
		if m[0] > 0 {
			// A match inside a word ("Račun" of "eRačun" is found with
			// it; this skips a match that starts after a letter).
			r, _ := utf8.DecodeLastRuneInString(text[:m[0]])
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				continue
			}
		}
		start := m[0]
		words := strings.Fields(s)
		if start == 0 && strings.ToUpper(words[0]) != words[0] {
			if len(words) == 1 {
				continue
			}
			if stopWords[strings.ToLower(words[0])] {
				// "Since SML" at the start: the name is "SML". ("New
				// Zealand" keeps its first word.)
				start = strings.Index(text[:m[1]], words[1])
				words = words[1:]
			}
		}
		if len(words) == 1 {
			// "PINT-based", "French-specific": an adjective made from
			// a name, not a name.
			if i := strings.LastIndexAny(words[0], "-/"); i > 0 && strings.ToLower(words[0][i:]) == words[0][i:] && !strings.ContainsAny(words[0][i:], "0123456789") {
				continue
			}
		}
		dates := true
		for _, w := range words {
			dates = dates && calendarWords[w]
		}
		if dates {
			continue
		}
		out = append(out, span{start: start, end: m[1], fit: 1, name: true, typ: typeName})
	}
	return out
}

// countWordStop ends the words a count span takes after its number: "3,312,238
// e-invoices had been fiscalised" counts "e-invoices".
var countWordStop = func() map[string]bool {
	m := map[string]bool{}
	for w := range stopWords {
		m[w] = true
	}
	for _, w := range strings.Fields("million billion per a year month day week") {
		m[w] = true
	}
	return m
}()

// approximate are the words that make a count a round figure ("more than
// 3.3 million"), a less precise answer to "how many" than an exact count.
var approximate = []string{"more than", "over", "about", "around", "nearly", "almost", "roughly", "some", "up to", "at least"}

// countSpans finds the numbers of text that are not dates, each with up to
// three words after it that say what it counts. A number with a counted
// noun fits withNoun, a bare one bare; a round figure ("more than 3.3
// million") fits a little less.
func countSpans(text string, withNoun, bare float64) []span {
	var out []span
	for _, m := range number.FindAllStringIndex(text, -1) {
		sp := span{start: m[0], end: m[1], fit: bare, typ: typeCount}
		end, words := m[1], 0
		for words < 3 {
			rest := text[end:]
			if !strings.HasPrefix(rest, " ") {
				break
			}
			w := strings.Fields(rest)
			if len(w) == 0 {
				break
			}
			word := strings.TrimRight(w[0], ".,;:)")
			r, _ := utf8.DecodeRuneInString(word)
			if word == "" || !unicode.IsLower(r) || countWordStop[word] {
				break
			}
			end += 1 + len(word)
			words++
			if len(word) < len(w[0]) {
				break
			}
		}
		if words > 0 {
			sp.end, sp.fit = end, withNoun
		}
		if sp.fit == 0 {
			continue
		}
		before := strings.ToLower(strings.TrimRight(text[:m[0]], " "))
		for _, a := range approximate {
			if strings.HasSuffix(before, a) {
				sp.fit *= 0.85
				break
			}
		}
		out = append(out, sp)
	}
	return out
}
