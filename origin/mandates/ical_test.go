package mandates

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	ics "github.com/arran4/golang-ical"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

const testSite = "https://news.example"

func testCalendar() Calendar {
	return Calendar{Name: "Invoicewire: mandate deadlines", Description: "Deadlines; with, escapes", SiteRoot: testSite, PageURL: testSite + "/mandates"}
}

// TestWriteICSParses reads the feed back with an independent iCalendar
// parser (arran4/golang-ical; the feed is written with emersion/go-ical) and
// checks each event against the milestone it was written from.
func TestWriteICSParses(t *testing.T) {
	entries := Entries(contenttest.Countries, Filter{})
	if len(entries) < 5 {
		t.Fatalf("fixture has %d milestones", len(entries))
	}
	body, err := WriteICS(testCalendar(), entries)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := ics.ParseCalendar(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the feed: %v\n%s", err, body)
	}
	if got := cal.CalendarProperties; len(got) == 0 {
		t.Fatal("no calendar properties")
	}
	for _, want := range []struct{ prop, value string }{
		{"VERSION", "2.0"}, {"X-WR-CALNAME", "Invoicewire: mandate deadlines"}, {"X-WR-CALDESC", "Deadlines; with, escapes"},
	} {
		found := false
		for _, p := range cal.CalendarProperties {
			if p.IANAToken == want.prop {
				found = true
				if v := ics.FromText(p.Value); v != want.value {
					t.Errorf("%s = %q, want %q", want.prop, v, want.value)
				}
			}
		}
		if !found {
			t.Errorf("no %s", want.prop)
		}
	}
	events := cal.Events()
	if len(events) != len(entries) {
		t.Fatalf("%d events for %d milestones", len(events), len(entries))
	}
	uids := map[string]bool{}
	for i, ev := range events {
		e := entries[i]
		m := e.Milestone
		t.Run(e.ID, func(t *testing.T) {
			if uid := ev.Id(); uid != e.ID+"@news.example" {
				t.Errorf("UID = %q, want %q", uid, e.ID+"@news.example")
			}
			uids[ev.Id()] = true
			start := ev.GetProperty(ics.ComponentPropertyDtStart)
			if start == nil || start.Value != e.Day().Format("20060102") || start.ICalParameters["VALUE"][0] != "DATE" {
				t.Errorf("DTSTART = %+v, want VALUE=DATE:%s", start, e.Day().Format("20060102"))
			}
			day, err := ev.GetAllDayStartAt()
			if err != nil || !day.Equal(e.Day()) {
				t.Errorf("all-day start = %v (%v), want %v", day, err, e.Day())
			}
			if stamp := ev.GetProperty(ics.ComponentPropertyDtstamp); stamp == nil || !strings.HasSuffix(stamp.Value, "Z") || len(stamp.Value) != len("20060102T150405Z") {
				t.Errorf("DTSTAMP = %+v, want a UTC date-time", stamp)
			}
			summary := ev.GetProperty(ics.ComponentPropertySummary).Value
			if !strings.HasPrefix(summary, e.Country+": "+m.Title) {
				t.Errorf("SUMMARY = %q, want it to start with %q", summary, e.Country+": "+m.Title)
			}
			desc := ev.GetProperty(ics.ComponentPropertyDescription).Value
			for _, want := range []string{"Scope: " + m.Scope, m.Source, m.SourceName, testSite + m.Reports[0].Path + "/"} {
				if !strings.Contains(desc, want) {
					t.Errorf("DESCRIPTION lacks %q:\n%s", want, desc)
				}
			}
			if u := ev.GetProperty(ics.ComponentPropertyUrl); u == nil || u.Value != testSite+"/mandates#"+e.ID {
				t.Errorf("URL = %+v, want the milestone's anchor on /mandates", u)
			}
		})
	}
	if len(uids) != len(entries) {
		t.Errorf("%d distinct UIDs for %d events", len(uids), len(entries))
	}

	again, _ := WriteICS(testCalendar(), Entries(contenttest.Countries, Filter{}))
	if !bytes.Equal(body, again) {
		t.Error("the same milestones wrote different bytes; the feed's ETag would never settle")
	}
}

// TestWriteICSLines checks RFC 5545 §3.1 on the raw bytes: CRLF line ends,
// no line over 75 octets, every line valid UTF-8, and a fixture value with
// every escaped character written escaped.
func TestWriteICSLines(t *testing.T) {
	body, err := WriteICS(testCalendar(), Entries(contenttest.Countries, Filter{}))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(body, []byte("END:VCALENDAR\r\n")) {
		t.Errorf("does not end with END:VCALENDAR and CRLF")
	}
	folded := 0
	for i, line := range strings.Split(strings.TrimSuffix(string(body), "\r\n"), "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Errorf("line %d has a bare CR or LF: %q", i, line)
		}
		if len(line) > 75 {
			t.Errorf("line %d has %d octets: %q", i, len(line), line)
		}
		if !utf8.ValidString(line) {
			t.Errorf("line %d splits a UTF-8 sequence: %q", i, line)
		}
		if strings.HasPrefix(line, " ") {
			folded++
		}
	}
	if folded == 0 {
		t.Error("no line was folded; the fixture has long descriptions")
	}
	unfolded := strings.ReplaceAll(string(body), "\r\n ", "")
	if want := `SUMMARY:Germany: Structured archive\; commas\, semicolons \\ and backslashes (proposed)`; !strings.Contains(unfolded, want) {
		t.Errorf("no %q in\n%s", want, unfolded)
	}
	if want := "REFRESH-INTERVAL;VALUE=DURATION:P1D\r\n"; !strings.Contains(unfolded, want) {
		t.Errorf("no %q (RFC 7986 §5.7)", want)
	}
	if want := `STATUS:CANCELLED`; !strings.Contains(unfolded, want) {
		t.Errorf("the postponed milestone is not %s", want)
	}
}

func TestFold(t *testing.T) {
	euro := strings.Repeat("€", 40) // 120 octets, 3 per rune
	testCases := []struct {
		desc string
		in   string
		want []string
	}{
		{desc: "short line unchanged", in: "SUMMARY:x", want: []string{"SUMMARY:x"}},
		{desc: "exactly 75 octets unchanged", in: strings.Repeat("a", 75), want: []string{strings.Repeat("a", 75)}},
		{desc: "76 octets folds once", in: strings.Repeat("a", 76), want: []string{strings.Repeat("a", 75), " a"}},
		{desc: "continuations hold 74 octets after the space", in: strings.Repeat("a", 75+74+1),
			want: []string{strings.Repeat("a", 75), " " + strings.Repeat("a", 74), " a"}},
		{desc: "multi-octet runes are not split", in: "X:" + euro,
			want: []string{"X:" + strings.Repeat("€", 24), " " + strings.Repeat("€", 16)}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			got := string(fold([]byte(tc.in + "\r\n")))
			want := strings.Join(tc.want, "\r\n") + "\r\n"
			if got != want {
				t.Errorf("fold(%q)\n got %q\nwant %q", tc.in, got, want)
			}
			if unfolded := strings.ReplaceAll(got, "\r\n ", ""); unfolded != tc.in+"\r\n" {
				t.Errorf("unfolding gives %q, want the input back", unfolded)
			}
		})
	}
}
