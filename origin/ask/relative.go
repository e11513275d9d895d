package ask

import (
	"regexp"
	"strings"
	"time"
)

// Relative time. Articles say "next year", "last month", "in six weeks":
// true on the day they were written, misleading in a summary read months
// later without the article's date ("Poland's KSeF becomes mandatory in six
// weeks", from December 2025, read in November 2026). A quote that says
// such words carries its article's publication date (Quote.DatePublished,
// AnswerSpan.DatePublished; docs/decisions.md, Ask), so that a reader or a
// client can tell when "next year" is. The quote itself stays verbatim.

// relativeTime matches the words that place something in time from the
// day they were written: "in six weeks", "six weeks from now", "two months
// ago", "next year", "last month", "this summer", "today". A period
// followed by "of", "after", "from" or "before" is a rule's, not the
// writer's ("within six months of incorporation"): the match then ends
// with that word, and relativeToWriting passes over it.
var relativeTime = regexp.MustCompile(`(?i)\b(?:(?:in|within) (?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|\d+) (?:days?|weeks?|months?|years?)\b(?: (?:of|after|from|before)\b)?|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|\d+) (?:days?|weeks?|months?|years?) (?:from now|ago)|(?:next|last|this|coming|past) (?:week|month|year|spring|summer|autumn|fall|winter|quarter)|yesterday|today|tomorrow|tonight)\b`)

// relativeToWriting reports whether text places something in time from
// the day it was written.
func relativeToWriting(text string) bool {
	if !hasRelativeWord(text) {
		return false
	}
	for _, m := range relativeTime.FindAllString(text, -1) {
		if !strings.HasSuffix(m, " of") && !strings.HasSuffix(m, " after") && !strings.HasSuffix(m, " from") && !strings.HasSuffix(m, " before") {
			return true
		}
	}
	return false
}

// hasRelativeWord is a cheap test that relativeTime may match text: most
// sentences have none of these words, and the regexp is not cheap.
func hasRelativeWord(text string) bool {
	lower := strings.ToLower(text)
	for _, w := range []string{"day", "week", "month", "year", "spring", "summer", "autumn", "fall", "winter", "quarter", "tonight", "tomorrow"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// dateOf returns the publication time of d, for a quote of it.
func dateOf(d *doc) *time.Time {
	t := d.published
	return &t
}
