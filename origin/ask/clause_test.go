package ask

import (
	"strings"
	"testing"
)

// spanIn returns the span of the first occurrence of s in text.
func spanIn(t *testing.T, text, s string) span {
	t.Helper()
	i := strings.Index(text, s)
	if i < 0 {
		t.Fatalf("%q is not in %q", s, text)
	}
	return span{start: i, end: i + len(s), fit: 1}
}

func TestClauseAround(t *testing.T) {
	testCases := []struct {
		desc, text, date, want string
	}{
		{desc: "two dates joined by and", text: "It was published on 31 January 2025 and applies from 1 April 2025, Pagero says.", date: "1 April 2025", want: "and applies from 1 April 2025, Pagero says."},
		{desc: "the first of them", text: "It was published on 31 January 2025 and applies from 1 April 2025, Pagero says.", date: "31 January 2025", want: "It was published on 31 January 2025"},
		{desc: "a semicolon", text: "From 1 January 2027, large firms must send them; from 1 January 2028, all firms must.", date: "1 January 2027", want: "From 1 January 2027, large firms must send them"},
		{desc: "a comma and a conjunction, with one date", text: "The first wave was postponed in February, and a transition runs to 31 December 2026.", date: "31 December 2026", want: " and a transition runs to 31 December 2026."},
		{desc: "a range shares its clause", text: "The start moved from 2 February to 2 March 2026 by decision.", date: "2 March 2026", want: "The start moved from 2 February to 2 March 2026 by decision."},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			spans := answerSpans(question{kind: askWhen}, tc.text)
			sp := spanIn(t, tc.text, tc.date)
			start, end := clauseAround(tc.text, clauseCuts(tc.text, spans, nil), sp)
			if got := tc.text[start:end]; got != tc.want {
				t.Errorf("clause %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDateEvent(t *testing.T) {
	testCases := []struct {
		text, date string
		want       eventKind
	}{
		{text: "Version 1.9 was published on 31 January 2025 and applies from 1 April 2025.", date: "31 January 2025", want: eventText},
		{text: "Version 1.9 was published on 31 January 2025 and applies from 1 April 2025.", date: "1 April 2025", want: eventBegin},
		{text: "An inquiry was launched on 5 February 2026 and is due to report by 30 November 2027.", date: "5 February 2026", want: eventNone},
		{text: "An inquiry was launched on 5 February 2026 and is due to report by 30 November 2027.", date: "30 November 2027", want: eventEnd},
		{text: "Joint decision A.1044/2026 of 17 February 2026 moves the start.", date: "17 February 2026", want: eventText},
		{text: "All other businesses are due on 1 October 2026, with a transition period to 31 December 2026.", date: "31 December 2026", want: eventEnd},
		{text: "Issuing follows in two waves, with penalties deferred to 2027.", date: "2027", want: eventBegin},
		{text: "Fiscalization 2.0 went live for VAT-registered businesses on 1 January 2026.", date: "1 January 2026", want: eventBegin},
		{text: "1 January 2028: the issuing obligation extends to all businesses.", date: "1 January 2028", want: eventBegin},
		{text: "Until 30 June 2030: foreign VAT payers are exempt.", date: "30 June 2030", want: eventEnd},
		{text: "The coalition agreement of 31 January 2025 promises e-reporting.", date: "31 January 2025", want: eventText},
	}
	for _, tc := range testCases {
		t.Run(tc.date+" in "+tc.text, func(t *testing.T) {
			spans := answerSpans(question{kind: askWhen}, tc.text)
			sp := spanIn(t, tc.text, tc.date)
			start, _ := clauseAround(tc.text, clauseCuts(tc.text, spans, nil), sp)
			if got := dateEvent(tc.text, start, sp); got != tc.want {
				t.Errorf("dateEvent = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAskedEvent(t *testing.T) {
	testCases := []struct {
		question string
		want     eventKind
	}{
		{question: "When did FatturaPA 1.9 apply?", want: eventBegin},
		{question: "When is the Swedish B2B inquiry report due?", want: eventEnd},
		{question: "When was Slovakia's e-invoicing law published?", want: eventText},
		{question: "When did the Norwegian government propose mandatory B2B e-invoicing?", want: eventText},
		{question: "When does the Peppol May 2026 release become mandatory?", want: eventBegin},
		{question: "When will Spain require B2B e-invoicing?", want: eventBegin},
		{question: "By when must UAE businesses appoint a provider?", want: eventEnd},
		{question: "Since when must French businesses receive e-invoices?", want: eventBegin},
		{question: "When must German companies issue e-invoices?", want: eventNone},
		{question: "When was the Swedish inquiry launched?", want: eventNone},
	}
	for _, tc := range testCases {
		t.Run(tc.question, func(t *testing.T) {
			if got := newQuestion(tc.question).event; got != tc.want {
				t.Errorf("event %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEventFactor(t *testing.T) {
	testCases := []struct {
		desc      string
		want, got eventKind
		factor    float64
	}{
		{desc: "a start for a start", want: eventBegin, got: eventBegin, factor: eventBoost},
		{desc: "a deadline for a deadline", want: eventEnd, got: eventEnd, factor: eventBoost},
		{desc: "a deadline for a start: often the same day", want: eventBegin, got: eventEnd, factor: 1},
		{desc: "a publication for a start", want: eventBegin, got: eventText, factor: eventMismatch},
		{desc: "a publication for a question naming no event", want: eventNone, got: eventText, factor: eventMismatch},
		{desc: "a start for a publication", want: eventText, got: eventBegin, factor: eventMismatch},
		{desc: "a publication for a publication", want: eventText, got: eventText, factor: 1},
		{desc: "a date of no event", want: eventBegin, got: eventNone, factor: 1},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if f := eventFactor(tc.want, tc.got); f != tc.factor {
				t.Errorf("eventFactor = %v, want %v", f, tc.factor)
			}
		})
	}
}

func TestSuperseded(t *testing.T) {
	const text = "The decision moves the start from 2 February to 2 March 2026; the consultation ran from 17 April to 8 May 2026."
	spans := answerSpans(question{kind: askWhen}, text)
	cuts := clauseCuts(text, spans, nil)
	for date, want := range map[string]bool{"2 February": true, "2 March 2026": false, "17 April": false} {
		sp := spanIn(t, text, date)
		start, _ := clauseAround(text, cuts, sp)
		if got := superseded(text, start, sp); got != want {
			t.Errorf("superseded(%q) = %v, want %v", date, got, want)
		}
	}
}

func TestPhaseOf(t *testing.T) {
	testCases := []struct {
		desc, text string
		dim, want  int
	}{
		{desc: "first wave", text: "Greece pushes its first B2B e-invoicing wave back by a month.", dim: phaseOrdinal, want: 1},
		{desc: "second-wave businesses", text: "Second-wave businesses: 1 October 2026 has not moved.", dim: phaseOrdinal, want: 2},
		{desc: "phase 2", text: "Phase 2 follows in November 2029.", dim: phaseOrdinal, want: 2},
		{desc: "a later cohort is not the first", text: "Until when does the transition for the later Greek cohort last?", dim: phaseOrdinal, want: 2},
		{desc: "every party, the last phase", text: "From 1 January 2028, all businesses must.", dim: phaseOrdinal, want: phaseLast},
		{desc: "a numbered phase before whom it reaches", text: "The first phase reaches every business.", dim: phaseOrdinal, want: 1},
		{desc: "first, not of a phase", text: "The first days of KSeF were bumpy.", dim: phaseOrdinal, want: 0},
		{desc: "two waves: neither", text: "The first wave moved; the second wave did not.", dim: phaseOrdinal, want: 0},
		{desc: "intra-EU", text: "When does intra-EU B2B e-invoicing start under ViDA?", dim: phaseScope, want: scopeCrossBorder},
		{desc: "domestic", text: "a domestic B2B start on 1 January 2030", dim: phaseScope, want: scopeDomestic},
		{desc: "other taxpayers are the rest", text: "When must other Polish taxpayers issue invoices?", dim: phaseSize, want: sizeSmall},
		{desc: "the self-employed", text: "and for the self-employed?", dim: phaseSize, want: sizeSmall},
		{desc: "above a threshold", text: "businesses with turnover above €8m, on 1 October 2027", dim: phaseSize, want: sizeLarge},
		{desc: "or more", text: "Businesses with revenue of AED 50m or more go live first.", dim: phaseSize, want: sizeLarge},
		{desc: "a small invoice is no small business", text: "issuing follows with a small-invoice allowance", dim: phaseSize, want: 0},
		{desc: "micro-businesses are", text: "SMEs and micro-businesses follow in 2027.", dim: phaseSize, want: sizeSmall},
		{desc: "receiving", text: "German businesses have been obliged to receive e-invoices since 2025.", dim: phaseSide, want: sideReceive},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := phaseOf(tc.text, tc.dim); got != tc.want {
				t.Errorf("phaseOf(%q, %d) = %d, want %d", tc.text, tc.dim, got, tc.want)
			}
		})
	}
}

func TestPhaseFactor(t *testing.T) {
	asked := phasesOf("When does Greece's second wave start?")
	testCases := []struct {
		desc, clause, segment, headline string
		want                            float64
	}{
		{desc: "the clause names it", clause: "the second wave stays on 1 October 2026", headline: "Greece's first wave moves to March", want: samePhaseBoost},
		{desc: "the clause names another", clause: "the first wave starts on 2 March 2026", headline: "Greece's second wave", want: otherPhaseFactor},
		{desc: "the headline says when the sentence does not", clause: "a transition period runs to 31 December 2026", segment: "and a transition period runs to 31 December 2026", headline: "Greece's second e-invoicing wave on 1 October", want: samePhaseBoost},
		{desc: "nothing says", clause: "the start is on 1 October 2026", headline: "Greece's e-invoicing", want: 1},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			segment := tc.segment
			if segment == "" {
				segment = tc.clause
			}
			if got := asked.factor(tc.clause, segment, asked.only(tc.headline)); got != tc.want {
				t.Errorf("factor = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStrongSegment(t *testing.T) {
	const text = "The date was confirmed when the first wave was postponed in February, and a transition period runs to 31 December 2026."
	sp := spanIn(t, text, "31 December 2026")
	if got, want := strongSegment(text, sp.start, sp.end), " and a transition period runs to 31 December 2026."; got != want {
		t.Errorf("segment %q, want %q", got, want)
	}
}

func TestQualifies(t *testing.T) {
	testCases := []struct {
		name, after string
		want        bool
	}{
		{name: "French", after: " model, approved platforms carry invoices", want: true},
		{name: "French", after: ".", want: false},
		{name: "KSeF", after: " is the platform", want: false},
		{name: "Chorus Pro", after: " handles public invoices", want: false},
		{name: "Verifactu", after: ", the software rules", want: false},
	}
	for _, tc := range testCases {
		t.Run(tc.name+tc.after, func(t *testing.T) {
			if got := qualifies(tc.name, tc.after); got != tc.want {
				t.Errorf("qualifies = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListed(t *testing.T) {
	for between, want := range map[string]bool{", ": true, " and ": true, ", and ": true, " to ": true, " – ": true, " and from ": false, ", with a transition to ": false} {
		if got := listed(between); got != want {
			t.Errorf("listed(%q) = %v, want %v", between, got, want)
		}
	}
}
