package mandates

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

func articleURL(path string) string { return testSite + path + "/" }

// svgNode is enough of the drawing to walk it in document order.
type svgNode struct {
	name  string
	attrs map[string]string
	text  string
}

func parseSVG(t *testing.T, s string) []svgNode {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var nodes []svgNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nodes
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := svgNode{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			nodes = append(nodes, n)
		case xml.CharData:
			if len(nodes) > 0 {
				nodes[len(nodes)-1].text += string(tok)
			}
		}
	}
}

func TestTimelineSVG(t *testing.T) {
	entries := Entries(contenttest.Countries, Filter{})
	today := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	past, upcoming := Split(entries, today)
	if len(past) == 0 || len(upcoming) == 0 {
		t.Fatalf("fixture should have both past and upcoming milestones: %d, %d", len(past), len(upcoming))
	}
	nodes := parseSVG(t, string(TimelineSVG(entries, today, articleURL)))

	var order []string // "past", "today", "upcoming" in drawing order
	links := map[string]bool{}
	for _, n := range nodes {
		switch {
		case n.name == "g" && strings.HasPrefix(n.attrs["class"], "milestone "):
			order = append(order, strings.Fields(n.attrs["class"])[1])
		case n.name == "g" && n.attrs["class"] == "today-row":
			order = append(order, "today")
		case n.name == "a":
			links[n.attrs["href"]] = true
		}
	}
	want := append(append(repeat("past", len(past)), "today"), repeat("upcoming", len(upcoming))...)
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("rows in order %v, want %v", order, want)
	}
	for _, e := range entries {
		if !links[e.Milestone.Source] {
			t.Errorf("%s: no link to its source %s", e.ID, e.Milestone.Source)
		}
		if u := articleURL(e.Milestone.Reports[0].Path); !links[u] {
			t.Errorf("%s: no link to its article %s", e.ID, u)
		}
	}
	var texts []string
	for _, n := range nodes {
		texts = append(texts, n.text)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"Today, 23 November 2026", "2028", "Near-real-time e-reporting (proposed)", "Belgium: Domestic B2B invoice data; a commitment <without> a bill & no date.", "past", "upcoming"} {
		if !strings.Contains(all, want) {
			t.Errorf("the drawing's text lacks %q", want)
		}
	}
}

func TestTimelineSVGTodayAtEitherEnd(t *testing.T) {
	entries := Entries(contenttest.Countries, Filter{})
	for _, tc := range []struct {
		desc  string
		today time.Time
		first bool
	}{
		{desc: "before every milestone", today: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), first: true},
		{desc: "after every milestone", today: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var rows []string
			for _, n := range parseSVG(t, string(TimelineSVG(entries, tc.today, articleURL))) {
				if n.name == "g" && (n.attrs["class"] == "today-row" || strings.HasPrefix(n.attrs["class"], "milestone ")) {
					rows = append(rows, n.attrs["class"])
				}
			}
			at := len(rows) - 1
			if tc.first {
				at = 0
			}
			if rows[at] != "today-row" {
				t.Errorf("today is not drawn %s: %v", tc.desc, rows)
			}
		})
	}
}

func TestSplitAndFilter(t *testing.T) {
	entries := Entries(contenttest.Countries, Filter{})
	testCases := []struct {
		desc              string
		today             time.Time
		wantFirstUpcoming string // ID of the first upcoming entry
	}{
		{desc: "the day itself is upcoming", today: time.Date(2027, 1, 1, 23, 0, 0, 0, time.UTC), wantFirstUpcoming: "de-2027-01-01-issue"},
		{desc: "the day after is past", today: time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC), wantFirstUpcoming: "be-2028-01-01-report"},
		{desc: "a zone ahead of UTC is read in UTC", today: time.Date(2027, 1, 2, 0, 30, 0, 0, time.FixedZone("CET", 3600)), wantFirstUpcoming: "de-2027-01-01-issue"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			_, upcoming := Split(entries, tc.today)
			if len(upcoming) == 0 || upcoming[0].ID != tc.wantFirstUpcoming {
				t.Errorf("first upcoming = %v, want %s", upcoming, tc.wantFirstUpcoming)
			}
		})
	}
	for _, tc := range []struct {
		desc string
		f    Filter
		want int
	}{
		{desc: "everything", f: Filter{}, want: 6},
		{desc: "one country", f: Filter{Country: "be"}, want: 2},
		{desc: "one obligation", f: Filter{Obligation: "issue"}, want: 3},
		{desc: "region and obligation", f: Filter{Region: "eu", Obligation: "report"}, want: 1},
		{desc: "region without milestones", f: Filter{Region: "americas"}, want: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := len(Entries(contenttest.Countries, tc.f)); got != tc.want {
				t.Errorf("%d entries, want %d", got, tc.want)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
