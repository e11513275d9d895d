package mandates

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-ical"
)

// CalendarType is the media type of the iCalendar feed (RFC 5545 §8.1).
const CalendarType = "text/calendar; charset=utf-8"

// Calendar describes one iCalendar feed.
type Calendar struct {
	// Name is the calendar's display name (RFC 7986 NAME, and the
	// X-WR-CALNAME that Outlook and Apple Calendar read).
	Name string
	// Description says what the calendar holds.
	Description string
	// SiteRoot is {site_root}: it makes the event and article URLs absolute
	// and its host is the domain part of every UID.
	SiteRoot string
	// PageURL is the /mandates page, the calendar's URL and, with the
	// milestone's anchor, every event's.
	PageURL string
}

// WriteICS writes entries as an iCalendar object: one all-day VEVENT per
// milestone. Every value is a function of the content, so the same corpus
// gives the same bytes and the feed's ETag only moves when a milestone
// does. DTSTAMP is the last change of the articles that report a milestone,
// which is when the editors last told readers about it (RFC 5545 §3.8.7.2
// makes DTSTAMP the information's last revision when there is no METHOD).
func WriteICS(cal Calendar, entries []Entry) ([]byte, error) {
	host := "invoicewire"
	if u, err := url.Parse(cal.SiteRoot); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	c := ical.NewCalendar()
	c.Props.SetText(ical.PropVersion, "2.0")
	c.Props.SetText(ical.PropProductID, "-//Invoicewire//Mandate calendar//EN")
	c.Props.SetText(ical.PropCalendarScale, "GREGORIAN")
	c.Props.SetText(ical.PropName, cal.Name)
	c.Props.SetText("X-WR-CALNAME", cal.Name)
	c.Props.SetText(ical.PropDescription, cal.Description)
	c.Props.SetText("X-WR-CALDESC", cal.Description)
	if u, err := url.Parse(cal.PageURL); err == nil {
		c.Props.SetURI(ical.PropURL, u)
	}
	// Subscribing clients re-read the feed once a day (RFC 7986 §5.7);
	// X-PUBLISHED-TTL is the older spelling Outlook reads.
	// RFC 7986 requires the VALUE=DURATION parameter, which the library
	// omits as the default type.
	refresh := ical.NewProp(ical.PropRefreshInterval)
	refresh.Params.Set(ical.ParamValue, string(ical.ValueDuration))
	refresh.Value = "P1D"
	c.Props.Set(refresh)
	c.Props.SetText("X-PUBLISHED-TTL", "P1D")

	for _, e := range entries {
		ev, err := event(cal, host, e)
		if err != nil {
			return nil, err
		}
		c.Children = append(c.Children, ev.Component)
	}
	var buf bytes.Buffer
	if err := ical.NewEncoder(&buf).Encode(c); err != nil {
		return nil, fmt.Errorf("mandates: encoding the calendar: %w", err)
	}
	return fold(buf.Bytes()), nil
}

func event(cal Calendar, host string, e Entry) (*ical.Event, error) {
	m := e.Milestone
	ev := ical.NewEvent()
	ev.Props.SetText(ical.PropUID, e.ID+"@"+host)
	var stamp time.Time
	for _, r := range m.Reports {
		if r.Updated.After(stamp) {
			stamp = r.Updated
		}
	}
	if stamp.IsZero() {
		// A milestone always has a report once loaded; this keeps DTSTAMP
		// valid and stable for one built by hand.
		stamp = e.Day()
	}
	ev.Props.SetDateTime(ical.PropDateTimeStamp, stamp.UTC().Truncate(time.Second))
	// An all-day event: DTSTART is a DATE and DTEND the next day (RFC 5545
	// §3.6.1), which every client shows as one day.
	ev.Props.SetDate(ical.PropDateTimeStart, e.Day())
	ev.Props.SetDate(ical.PropDateTimeEnd, e.Day().AddDate(0, 0, 1))
	summary := e.Country + ": " + m.Title
	switch m.Status {
	case "proposed", "postponed", "cancelled":
		summary += " (" + m.Status + ")"
	}
	ev.Props.SetText(ical.PropSummary, summary)
	ev.Props.SetText(ical.PropDescription, description(cal, e))
	if u, err := url.Parse(cal.PageURL + "#" + e.ID); err == nil {
		ev.Props.SetURI(ical.PropURL, u)
	}
	ev.Props.SetText(ical.PropStatus, eventStatus(m.Status))
	cats := ical.NewProp(ical.PropCategories)
	cats.SetTextList(m.Obligation)
	ev.Props.Set(cats)
	// A deadline does not make anyone busy.
	ev.Props.SetText(ical.PropTransparency, "TRANSPARENT")
	return ev, nil
}

// description is the event's text: scope, status, source and articles, one
// per line, so a reader has the facts and where they come from in the
// calendar itself.
func description(cal Calendar, e Entry) string {
	m := e.Milestone
	var b strings.Builder
	fmt.Fprintf(&b, "Scope: %s\n", m.Scope)
	fmt.Fprintf(&b, "Due: %s (%s).\n", strings.Join(m.Obligation, ", "), m.Status)
	switch m.Precision {
	case "month":
		fmt.Fprintf(&b, "Only the month is known: %s.\n", m.DateLabel())
	case "year":
		fmt.Fprintf(&b, "Only the year is known: %s.\n", m.DateLabel())
	}
	fmt.Fprintf(&b, "Source: %s, %s\n", m.SourceName, m.Source)
	for _, r := range m.Reports {
		fmt.Fprintf(&b, "Reported in: %s, %s%s/\n", r.Title, cal.SiteRoot, r.Path)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// eventStatus maps a milestone's status onto VEVENT STATUS (RFC 5545
// §3.8.1.11): a proposal is tentative, and a moved or dropped date is
// cancelled, which clients show struck through rather than hide.
func eventStatus(status string) string {
	switch status {
	case "proposed":
		return "TENTATIVE"
	case "postponed", "cancelled":
		return "CANCELLED"
	}
	return "CONFIRMED"
}

// maxLine is the longest content line RFC 5545 §3.1 allows, in octets,
// without its CRLF.
const maxLine = 75

// fold splits every content line of an encoded calendar longer than 75
// octets into a line and continuation lines that start with one space (RFC
// 5545 §3.1). The encoder writes each property on one line, whatever its
// length. A fold never falls inside a UTF-8 sequence, so every line stays
// valid UTF-8 for clients that read line by line.
func fold(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b) + len(b)/maxLine*3)
	for line := range bytes.SplitSeq(bytes.TrimSuffix(b, []byte("\r\n")), []byte("\r\n")) {
		limit := maxLine
		for len(line) > limit {
			cut := limit
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			out.Write(line[:cut])
			out.WriteString("\r\n ")
			line = line[cut:]
			// A continuation line's leading space counts against its 75.
			limit = maxLine - 1
		}
		out.Write(line)
		out.WriteString("\r\n")
	}
	return out.Bytes()
}
