// Package mandates turns the countries' milestones into what readers see of
// them: one dated list across countries, filtered by region or obligation,
// drawn as the inline SVG timeline of /mandates and written as the
// iCalendar feed /calendar/mandates.ics (RFC 5545).
//
// Everything here is a pure function of the countries it is given, so the
// site's handlers decide what to read from the store and how to cache it.
package mandates

import (
	"cmp"
	"slices"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Region is a group of countries readers filter the timeline by.
type Region struct {
	Slug, Name string
}

// Regions are the filter values of ?region=, in the order pages list them.
var Regions = []Region{
	{"eu", "European Union"},
	{"europe-other", "Rest of Europe"},
	{"middle-east", "Middle East"},
	{"asia-pacific", "Asia-Pacific"},
	{"americas", "Americas"},
	{"other", "Other"},
}

// regionOf files each tracked country under a region. A country added to
// countries.yaml without an entry here is listed under "other" until it is
// given one; nothing breaks.
var regionOf = map[string]string{
	"at": "eu", "be": "eu", "bg": "eu", "cy": "eu", "cz": "eu", "de": "eu", "dk": "eu", "ee": "eu",
	"es": "eu", "fi": "eu", "fr": "eu", "gr": "eu", "hr": "eu", "hu": "eu", "ie": "eu", "it": "eu",
	"lt": "eu", "lu": "eu", "lv": "eu", "mt": "eu", "nl": "eu", "pl": "eu", "pt": "eu", "ro": "eu",
	"se": "eu", "si": "eu", "sk": "eu",
	"gb": "europe-other", "ch": "europe-other", "no": "europe-other", "is": "europe-other", "rs": "europe-other",
	"ae": "middle-east", "sa": "middle-east", "om": "middle-east", "bh": "middle-east", "jo": "middle-east", "eg": "middle-east",
	"sg": "asia-pacific", "my": "asia-pacific", "au": "asia-pacific", "nz": "asia-pacific", "jp": "asia-pacific",
	"in": "asia-pacific", "id": "asia-pacific", "kr": "asia-pacific", "ph": "asia-pacific",
	"us": "americas", "mx": "americas", "br": "americas", "ca": "americas", "co": "americas", "cl": "americas",
}

// RegionOf returns the slug of the region a country code belongs to.
func RegionOf(code string) string {
	if r, ok := regionOf[code]; ok {
		return r
	}
	return "other"
}

// RegionName returns a region's name for readers, "" for an unknown slug.
func RegionName(slug string) string {
	for _, r := range Regions {
		if r.Slug == slug {
			return r.Name
		}
	}
	return ""
}

// Entry is one milestone with the country it belongs to.
type Entry struct {
	// ID is the milestone's corpus-wide identifier (content.Milestone.ID):
	// the page anchor and the stem of the calendar UID.
	ID        string
	Code      string
	Country   string
	Region    string
	Milestone *content.Milestone
}

// Day is the milestone's date, midnight UTC.
func (e Entry) Day() time.Time { return e.Milestone.Day() }

// Filter selects entries; an empty field matches everything.
type Filter struct {
	Country    string
	Region     string
	Obligation string
}

// Match reports whether e passes every set field of f.
func (f Filter) Match(e Entry) bool {
	return (f.Country == "" || e.Code == f.Country) &&
		(f.Region == "" || e.Region == f.Region) &&
		(f.Obligation == "" || slices.Contains(e.Milestone.Obligation, f.Obligation))
}

// Entries lists the milestones of countries that pass f, by date, then
// country code, then ID, so every rendering is deterministic.
func Entries(countries []*content.Country, f Filter) []Entry {
	var out []Entry
	for _, c := range countries {
		for i := range c.Milestones {
			e := Entry{ID: c.Milestones[i].ID(c.Code), Code: c.Code, Country: c.Name, Region: RegionOf(c.Code), Milestone: &c.Milestones[i]}
			if f.Match(e) {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Milestone.Date, b.Milestone.Date), cmp.Compare(a.Code, b.Code), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// IsPast reports whether the milestone's date is before today's: a
// milestone dated today is still upcoming for the whole day. today is taken
// in UTC, the zone milestone dates are read in.
func (e Entry) IsPast(today time.Time) bool {
	y, m, d := today.UTC().Date()
	return e.Day().Before(time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
}

// Split cuts date-ordered entries into those already past and those still
// to come on the day of today.
func Split(entries []Entry, today time.Time) (past, upcoming []Entry) {
	i, _ := slices.BinarySearchFunc(entries, today, func(e Entry, t time.Time) int {
		if e.IsPast(t) {
			return -1
		}
		return 1
	})
	return entries[:i], entries[i:]
}
