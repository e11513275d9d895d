package ask

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode"

	"github.com/invoicewire/invoicewire/internal/content"
)

// TestDigitPatternsNeedADigit: the expressions that are skipped for text
// without a digit (digitPattern) cannot match such text, so skipping them
// changes no span. The check works on the parsed expression: with the
// digits taken out of every character class and literal, no alternative
// can match anything. It ignores word boundaries and other assertions, so
// it may only call an expression able to match when it is not.
func TestDigitPatternsNeedADigit(t *testing.T) {
	for name, p := range digitPatterns {
		re, err := syntax.Parse(p.re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if matchesWithoutDigit(re.Simplify()) {
			t.Errorf("%s can match text with no digit: %s", name, p.re)
		}
	}
	// The check itself: expressions that match words without digits are
	// told apart.
	for _, expr := range []string{measureSpan.String(), nameSpan.String(), `\d*`, `\d+|x`, `[0-9a]`, `(?i)\d{1,2}(?:st|nd)?|one`} {
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if !matchesWithoutDigit(re.Simplify()) {
			t.Errorf("%s is said to need a digit; it does not", expr)
		}
	}
}

// matchesWithoutDigit reports whether re can match some text with no ASCII
// digit, assertions taken as always true.
func matchesWithoutDigit(re *syntax.Regexp) bool {
	isDigit := func(r rune) bool { return '0' <= r && r <= '9' }
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if isDigit(r) && (re.Flags&syntax.FoldCase == 0 || unicode.SimpleFold(r) == r) {
				return false
			}
		}
		return true
	case syntax.OpCharClass:
		// Pairs of ranges: a range holds a rune other than a digit
		// unless it lies within 0-9.
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if !(isDigit(re.Rune[i]) && isDigit(re.Rune[i+1])) {
				return true
			}
		}
		return false
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !matchesWithoutDigit(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if matchesWithoutDigit(sub) {
				return true
			}
		}
		return false
	case syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpPlus, syntax.OpCapture:
		return matchesWithoutDigit(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || matchesWithoutDigit(re.Sub[0])
	}
	// Empty match, any character, begin/end of line or text, word
	// boundaries.
	return true
}

// digitPatterns are the expressions answerSpans skips when their test
// says they cannot match, by name.
var digitPatterns = map[string]digitPattern{
	"dateSpan": dateSpan, "moneySpan": moneySpan, "shareSpan": shareSpan, "number": number,
	"versionSpan": versionSpan, "codeSpan": codeSpan, "numericCode": numericCode,
}

// TestDigitPatternsPrefilter: the cheap test of each expression passes
// every text the expression matches, so skipping the expression when it
// fails changes no span: texts made of pieces of the expressions and of
// the sentences they are for, and every sentence of the corpus.
func TestDigitPatternsPrefilter(t *testing.T) {
	check := func(text string) {
		t.Helper()
		for name, p := range digitPatterns {
			if p.re.MatchString(text) && !p.possible(text) {
				t.Fatalf("%s matches %q, but its prefilter says it cannot", name, text)
			}
		}
	}
	pieces := append(strings.Fields("0 1 2 9 19 20 200 2027 2,000 3.0 . , / - % per cent percent port "+
		"mid early late end of the PLN EUR USD NZ A US C euro euros dollars francs m bn k million billion "+
		"D R F X a x eRačun ſ K é"), months...)
	pieces = append(pieces, " ", " ", " ", "€", "$", "£", "\u00a0", "\t")
	rng := rand.New(rand.NewPCG(15, 7))
	matched := 0
	samples := 50_000
	if underRace {
		samples = 10_000
	}
	for range samples {
		var sb strings.Builder
		for range 1 + rng.IntN(8) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		check(sb.String())
		if moneySpan.re.MatchString(sb.String()) {
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("no generated text has an amount of money: the check tests nothing")
	}
	base, err := content.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range base.Articles {
		for _, line := range strings.Split(a.Title+"\n"+a.Dek+"\n"+a.Body, "\n") {
			check(line)
			for _, part := range strings.Split(line, ". ") {
				check(part)
			}
		}
	}
}
