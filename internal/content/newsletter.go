package content

import (
	"fmt"
	"time"
)

// ISOWeek names the ISO week of t as newsletters are keyed: "2026-w47".
func ISOWeek(t time.Time) string {
	y, w := t.UTC().ISOWeek()
	return fmt.Sprintf("%04d-w%02d", y, w)
}

// WeekStart returns Monday 00:00 UTC of the ISO week named like "2026-w47".
func WeekStart(week string) (time.Time, error) {
	var y, w int
	if _, err := fmt.Sscanf(week, "%04d-w%02d", &y, &w); err != nil || w < 1 || w > 53 || len(week) != 8 {
		return time.Time{}, fmt.Errorf("content: %q is not an ISO week such as 2026-w47", week)
	}
	// 4 January is always in week 1 (ISO 8601).
	jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	start := monday.AddDate(0, 0, 7*(w-1))
	if ISOWeek(start) != week {
		return time.Time{}, fmt.Errorf("content: %d has no ISO week %d", y, w)
	}
	return start, nil
}

// NewsletterURL is the page, {site_root}/newsletter/<yyyy>-w<ww>/.
func NewsletterURL(siteRoot, week string) string { return siteRoot + "/newsletter/" + week + "/" }

// PublicNewsletter is the Newsletter resource: one sent weekly issue, the
// data of a newsletter.sent event (docs/decisions.md, newsletter).
type PublicNewsletter struct {
	SentAt   time.Time `json:"sent_at"`
	URL      string    `json:"url"`
	Title    string    `json:"title"`
	Articles []string  `json:"articles"`
}
