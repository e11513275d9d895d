package site

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/api"
	"github.com/invoicewire/invoicewire/origin/mandates"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// CalendarPath is the iCalendar feed of every milestone.
const CalendarPath = "/calendar/mandates.ics"

// mandatesView is the data of /mandates and its markdown twin.
type mandatesView struct {
	Head
	Heading     string
	Today       string
	Filter      mandates.Filter
	FilterLabel string
	SVG         template.HTML
	Past        []milestoneView
	Upcoming    []milestoneView
	Regions     []filterLink
	Obligations []filterLink
	Calendar    string
	Webcal      template.URL
	Total       int
}

type filterLink struct {
	Label, Href string
	Current     bool
}

type milestoneView struct {
	ID, Code, Country, Date, DateISO, Title, Scope, Status, Obligation string
	Source                                                             Link
	Articles                                                           []Link
}

// queryValue reads an optional single-valued parameter: absent is "", a
// value from allowed is itself; the parameter twice, or a value not
// allowed, is a 400 in the API's words (docs/decisions.md, invalid query
// parameters), the latter listing what is allowed.
func queryValue(query url.Values, name string, allowed []string) (string, error) {
	v, ok, err := respond.Single(query, name)
	if err != nil || !ok {
		return "", err
	}
	if !slices.Contains(allowed, v) {
		return "", apierror.BadRequest("Unknown "+name+" "+strconv.Quote(truncate(v))+".",
			name+" must be one of: "+strings.Join(allowed, ", ")+". Follow the filter links on the page, or leave "+name+" out.")
	}
	return v, nil
}

func regionSlugs() []string {
	out := make([]string, len(mandates.Regions))
	for i, r := range mandates.Regions {
		out[i] = r.Slug
	}
	return out
}

// MandatesPage answers GET /mandates: every country's milestones on one
// timeline, past and upcoming told apart by today's date, filtered by
// ?region= and ?obligation=. The page changes by itself at midnight UTC,
// when a milestone may move from upcoming to past, so its cache entry
// expires then.
func (s *Site) MandatesPage(r *http.Request) (*respond.Response, error) {
	v, err := s.mandatesView(r)
	if err != nil {
		return nil, err
	}
	resp, err := render("mandates", v, store.TagCountries, store.TagMilestones, store.TagSite)
	if err != nil {
		return nil, err
	}
	resp.Expires = nextMidnight(s.now())
	return resp, nil
}

// MandatesMarkdown answers GET /mandates.md, the page's markdown twin.
func (s *Site) MandatesMarkdown(r *http.Request) (*respond.Response, error) {
	v, err := s.mandatesView(r)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", v.Heading)
	fmt.Fprintf(&b, "%d milestones%s, as of %s. Subscribe to the calendar: %s\n", v.Total, v.FilterLabel, v.Today, v.Calendar)
	section := func(title string, list []milestoneView) {
		fmt.Fprintf(&b, "\n## %s\n", title)
		if len(list) == 0 {
			b.WriteString("\nNone.\n")
		}
		for _, m := range list {
			fmt.Fprintf(&b, "\n- **%s, %s: %s** (%s; %s). %s Source: [%s](%s).", m.Date, m.Country, mdEscape(m.Title), m.Status, m.Obligation, mdEscape(m.Scope), mdEscape(m.Source.Title), m.Source.Href)
			for _, a := range m.Articles {
				fmt.Fprintf(&b, " Read: [%s](%s).", mdEscape(a.Title), s.SiteRoot+a.Href)
			}
			b.WriteString("\n")
		}
	}
	section("Coming up", v.Upcoming)
	section("Already due", v.Past)
	resp := respond.Bytes(MarkdownType, b.Bytes(), store.TagCountries, store.TagMilestones, store.TagSite)
	resp.Expires = nextMidnight(s.now())
	return resp, nil
}

// mdEscape keeps editorial text from turning into markdown links or
// emphasis in the twin.
var mdEscape = strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, `*`, `\*`, `_`, `\_`, "`", "\\`", "<", "&lt;").Replace

// webcalURL is the calendar's subscribe link, webcal://<host>/calendar/mandates.ics
// (docs/decisions.md, "Mandate milestones, timeline, calendar and search").
// html/template trusts only http, https and mailto in a URL attribute and
// writes any other scheme as "#ZgotmplZ", so the link is a template.URL;
// that is safe because it is built from the configured site root alone,
// never from anything in the request.
func (s *Site) webcalURL() template.URL {
	u, err := url.Parse(s.SiteRoot + CalendarPath)
	if err != nil || u.Host == "" {
		return ""
	}
	u.Scheme = "webcal"
	return template.URL(u.String())
}

func nextMidnight(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

func (s *Site) mandatesView(r *http.Request) (*mandatesView, error) {
	query, err := respond.Query(r)
	if err != nil {
		return nil, err
	}
	region, err := queryValue(query, "region", regionSlugs())
	if err != nil {
		return nil, err
	}
	obligation, err := queryValue(query, "obligation", content.Obligations)
	if err != nil {
		return nil, err
	}
	countries, err := s.Store.Countries(r.Context())
	if err != nil {
		return nil, err
	}
	f := mandates.Filter{Region: region, Obligation: obligation}
	today := s.now()
	entries := mandates.Entries(countries, f)
	past, upcoming := mandates.Split(entries, today)

	h := s.NewHead("E-invoicing mandate timeline · Invoicewire",
		"Every tracked country's e-invoicing deadlines on one timeline, each with its source, and a calendar to subscribe to.", "/mandates")
	h.Alternates = append([]Link{
		{Rel: "alternate", Type: "text/markdown", Href: s.SiteRoot + "/mandates.md", Title: "This timeline as markdown"},
		{Rel: "alternate", Type: "text/calendar", Href: s.SiteRoot + CalendarPath, Title: "Invoicewire: mandate deadlines (iCalendar)"},
	}, h.Alternates...)
	v := &mandatesView{
		Head: h, Heading: "Mandate timeline", Today: longDate(today), Filter: f, Total: len(entries),
		Calendar: s.SiteRoot + CalendarPath,
		Webcal:   s.webcalURL(),
	}
	if region != "" {
		v.FilterLabel += " in " + mandates.RegionName(region)
	}
	if obligation != "" {
		v.FilterLabel += " about " + obligationLabel(obligation)
	}
	pageURL := func(region, obligation string) string {
		q := url.Values{}
		if region != "" {
			q.Set("region", region)
		}
		if obligation != "" {
			q.Set("obligation", obligation)
		}
		if len(q) == 0 {
			return "/mandates"
		}
		return "/mandates?" + q.Encode()
	}
	v.Regions = append(v.Regions, filterLink{Label: "All regions", Href: pageURL("", obligation), Current: region == ""})
	for _, rg := range mandates.Regions {
		v.Regions = append(v.Regions, filterLink{Label: rg.Name, Href: pageURL(rg.Slug, obligation), Current: region == rg.Slug})
	}
	v.Obligations = append(v.Obligations, filterLink{Label: "Every obligation", Href: pageURL(region, ""), Current: obligation == ""})
	for _, o := range content.Obligations {
		v.Obligations = append(v.Obligations, filterLink{Label: obligationLabel(o), Href: pageURL(region, o), Current: obligation == o})
	}
	articleURL := func(path string) string { return path + "/" }
	v.SVG = mandates.TimelineSVG(entries, today, articleURL)
	view := func(list []mandates.Entry) []milestoneView {
		out := make([]milestoneView, len(list))
		for i, e := range list {
			m := e.Milestone
			mv := milestoneView{
				ID: e.ID, Code: e.Code, Country: e.Country, Date: m.DateLabel(), DateISO: m.Date, Title: m.Title, Scope: m.Scope,
				Status: m.Status, Obligation: obligationList(m.Obligation),
				Source: Link{Href: m.Source, Title: m.SourceName},
			}
			for _, rep := range m.Reports {
				mv.Articles = append(mv.Articles, Link{Href: articleURL(rep.Path), Title: rep.Title})
			}
			out[i] = mv
		}
		return out
	}
	v.Past, v.Upcoming = view(past), view(upcoming)
	slices.Reverse(v.Past) // the most recent first
	return v, nil
}

var obligationLabels = map[string]string{
	"issue": "Issuing", "receive": "Receiving", "report": "Reporting", "archive": "Archiving and bookkeeping",
	"format": "Formats", "software": "Software", "provider": "Service providers", "penalties": "Penalties",
}

func obligationLabel(o string) string {
	if l, ok := obligationLabels[o]; ok {
		return l
	}
	return o
}

func obligationList(obl []string) string {
	out := make([]string, len(obl))
	for i, o := range obl {
		out[i] = strings.ToLower(obligationLabel(o))
	}
	return strings.Join(out, ", ")
}

// Calendar answers GET /calendar/mandates.ics: every milestone as an
// all-day event (RFC 5545), or one country's with ?country=xx. The country
// parameter follows the API's filters: two lowercase letters of a tracked
// country, else the JSON 400.
func (s *Site) Calendar(r *http.Request) (*respond.Response, error) {
	countries, err := s.Store.Countries(r.Context())
	if err != nil {
		return nil, err
	}
	keys := []string{store.TagCountries, store.TagMilestones, store.TagFeeds}
	cal := mandates.Calendar{
		Name:        "Invoicewire: e-invoicing mandate deadlines",
		Description: "Dated e-invoicing obligations of the countries Invoicewire tracks, each with its source.",
		SiteRoot:    s.SiteRoot,
		PageURL:     s.SiteRoot + "/mandates",
	}
	f := mandates.Filter{}
	query, err := respond.Query(r)
	if err != nil {
		return nil, err
	}
	code, ok, err := respond.Single(query, "country")
	if err != nil {
		return nil, err
	}
	if ok {
		bad := func(msg string) error {
			e := apierror.BadRequest(msg, "Use a lowercase two-letter code from "+s.SiteRoot+"/api/v1/countries, or leave country out for every country.")
			e.SurrogateKeys = keys
			return e
		}
		if !api.IsCountryCode(code) {
			return nil, bad("country must be a two-letter lowercase ISO 3166-1 alpha-2 code, got " + strconv.Quote(truncate(code)) + ".")
		}
		i := slices.IndexFunc(countries, func(c *content.Country) bool { return c.Code == code })
		if i < 0 {
			return nil, bad("Country " + strconv.Quote(code) + " is not tracked.")
		}
		f.Country = code
		cal.Name = "Invoicewire: e-invoicing deadlines in " + countries[i].Name
		cal.Description = "Dated e-invoicing obligations in " + countries[i].Name + ", each with its source."
		keys = append(keys, store.TagCountry(f.Country))
	}
	entries := mandates.Entries(countries, f)
	if len(entries) == 0 {
		// RFC 5545 §3.4 wants at least one component in a calendar; a
		// tracked country with no dated milestone yet has no calendar, and
		// gets one (the purge of its key) when its first milestone is
		// published.
		e := apierror.NotFound("No milestone is recorded for this country yet.", "The countries with milestones are on "+s.SiteRoot+"/mandates; the full calendar is "+s.SiteRoot+CalendarPath+".")
		e.SurrogateKeys = keys
		return nil, e
	}
	body, err := mandates.WriteICS(cal, entries)
	if err != nil {
		return nil, err
	}
	return respond.Bytes(mandates.CalendarType, body, keys...), nil
}
