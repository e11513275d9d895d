package mandates

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"
)

// The timeline is drawn top to bottom, one row per milestone under a row
// per year, in fixed columns so that no text has to be measured on the
// server: the date right-aligned against the axis, the marker on the axis,
// then the country code, a "source" link and the title linking the article.
const (
	svgWidth   = 880
	rowHeight  = 26
	dateRight  = 150 // right edge of the date column
	axisX      = 166
	codeX      = 184
	sourceX    = 216
	titleX     = 270
	topPadding = 46 // room for the legend
)

// TimelineSVG draws entries, in date order, as an inline SVG document. Past
// and upcoming milestones differ in shape as well as in words, so the
// drawing reads without colour: a filled disc is past, a ring is to come,
// and a dashed rule marks today. Proposed, postponed and cancelled
// milestones say so after their title. Each row links its article and its
// source; the page carries the same facts as a list, the drawing's text
// equivalent. articleURL turns a site path into the link.
func TimelineSVG(entries []Entry, today time.Time, articleURL func(path string) string) template.HTML {
	type row struct {
		year   int
		entry  *Entry
		today  bool
		spacer bool // room under the today rule for its label
	}
	var rows []row
	lastYear, todayDrawn := 0, false
	for i := range entries {
		e := &entries[i]
		if !todayDrawn && !e.IsPast(today) {
			rows = append(rows, row{today: true}, row{spacer: true})
			todayDrawn = true
		}
		if y := e.Day().Year(); y != lastYear {
			rows = append(rows, row{year: y})
			lastYear = y
		}
		rows = append(rows, row{entry: e})
	}
	if !todayDrawn {
		rows = append(rows, row{today: true}, row{spacer: true})
	}
	height := topPadding + len(rows)*rowHeight + 10

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %d" width="100%%" role="group" aria-labelledby="timeline-title" font-family="system-ui, sans-serif" font-size="13">`, svgWidth, height)
	fmt.Fprintf(&b, `<title id="timeline-title">Timeline of %d e-invoicing milestones; the list after it gives the same facts as text</title>`, len(entries))
	// Legend: the two marker shapes and the today rule, in words.
	b.WriteString(`<g class="legend" aria-hidden="true">`)
	fmt.Fprintf(&b, `<circle cx="12" cy="16" r="6" class="past"/><text x="24" y="20">past</text>`)
	fmt.Fprintf(&b, `<circle cx="80" cy="16" r="6" class="upcoming"/><text x="92" y="20">upcoming</text>`)
	fmt.Fprintf(&b, `<line x1="170" y1="16" x2="200" y2="16" class="today"/><text x="206" y="20">today</text>`)
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, axisX, topPadding-6, axisX, height-10)

	for i, r := range rows {
		y := topPadding + i*rowHeight + rowHeight/2
		switch {
		case r.spacer:
		case r.today:
			label := "Today, " + today.UTC().Format("2 January 2006")
			fmt.Fprintf(&b, `<g class="today-row"><line x1="0" y1="%d" x2="%d" y2="%d" class="today"/><text x="%d" y="%d" font-weight="bold">%s</text></g>`,
				y, svgWidth, y, titleX, y+rowHeight-4, esc(label))
		case r.entry == nil:
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-weight="bold" font-size="15" class="year">%d</text>`, dateRight, y+5, r.year)
		default:
			writeRow(&b, *r.entry, y, today, articleURL)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func writeRow(b *strings.Builder, e Entry, y int, today time.Time, articleURL func(string) string) {
	m := e.Milestone
	when := "upcoming"
	if e.IsPast(today) {
		when = "past"
	}
	fmt.Fprintf(b, `<g class="milestone %s %s" id="svg-%s">`, when, m.Status, esc(e.ID))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, dateRight, y+4, esc(m.DateLabel()))
	fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="6" class="%s"><title>%s</title></circle>`, axisX, y, when, esc(when+", "+m.Status))
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`, codeX, y+4, esc(strings.ToUpper(e.Code)))
	fmt.Fprintf(b, `<a href="%s"><text x="%d" y="%d" text-decoration="underline">source<title>%s</title></text></a>`,
		esc(m.Source), sourceX, y+4, esc("Source: "+m.SourceName))
	title := m.Title
	switch m.Status {
	case "proposed", "postponed", "cancelled":
		title += " (" + m.Status + ")"
	}
	href := "#" + e.ID
	if len(m.Reports) > 0 {
		href = articleURL(m.Reports[0].Path)
	}
	fmt.Fprintf(b, `<a href="%s"><text x="%d" y="%d">%s<title>%s</title></text></a>`,
		esc(href), titleX, y+4, esc(title), esc(e.Country+": "+m.Scope))
	b.WriteString(`</g>`)
}

// esc escapes text and attribute values; HTML's escaping is XML's for the
// five characters that matter inside inline SVG.
func esc(s string) string { return html.EscapeString(s) }
