package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/redis/go-redis/v9"
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
		return time.Time{}, fmt.Errorf("store: %q is not an ISO week such as 2026-w47", week)
	}
	// 4 January is always in week 1 (ISO 8601).
	jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	start := monday.AddDate(0, 0, 7*(w-1))
	if ISOWeek(start) != week {
		return time.Time{}, fmt.Errorf("store: %d has no ISO week %d", y, w)
	}
	return start, nil
}

// NewsletterURL is the page, {site_root}/newsletter/<yyyy>-w<ww>/.
func NewsletterURL(siteRoot, week string) string { return siteRoot + "/newsletter/" + week + "/" }

// NewsletterSent is the data of a newsletter.sent event (docs/decisions.md, newsletter).
type NewsletterSent struct {
	SentAt   time.Time `json:"sent_at"`
	URL      string    `json:"url"`
	Title    string    `json:"title"`
	Articles []string  `json:"articles"`
}

// ErrEmptyWeek is returned when a week has no published article to send.
var ErrEmptyWeek = fmt.Errorf("store: no article was published that week")

// SendNewsletter builds and publishes the issue for week from the articles
// published in it, newest first, with the editor's intro when there is one,
// and emits newsletter.sent. Sending a week twice changes nothing.
func (p *Publisher) SendNewsletter(ctx context.Context, week string, intro *content.NewsletterIntro) (Outcome, error) {
	start, err := WeekStart(week)
	if err != nil {
		return Outcome{}, err
	}
	end := start.AddDate(0, 0, 7)
	// Scores are negated publication times: (end, start] in time is
	// (-end, -start] in score.
	slugs, err := p.Store.rdb.ZRangeByScore(ctx, keyIndexAll, &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(score(end), 10),
		Max: strconv.FormatInt(score(start), 10),
	}).Result()
	if err != nil {
		return Outcome{}, fmt.Errorf("store: listing the week's articles: %w", err)
	}
	if len(slugs) == 0 {
		return Outcome{}, ErrEmptyWeek
	}
	y, w := start.ISOWeek()
	n := Newsletter{
		Week:     week,
		Title:    fmt.Sprintf("Invoicewire Weekly, %d week %d", y, w),
		SentAt:   p.Now().UTC().Truncate(time.Second),
		Articles: slugs,
	}
	if intro != nil {
		n.Intro = intro.Body
		if intro.Title != "" {
			n.Title = intro.Title
		}
	}
	doc, err := json.Marshal(&n)
	if err != nil {
		return Outcome{}, fmt.Errorf("store: encoding newsletter: %w", err)
	}
	c := NewChange()
	c.expectValue(keyNewsletter(week), nil)
	c.set(keyNewsletter(week), doc)
	c.zadd(keyNewsletters, start.Unix(), week)
	c.Invalidate(TagNewsletter, TagNewsletterWeek(week), TagFeeds, TagSite)
	ev, err := events.New(events.NewsletterSent, n.SentAt, NewsletterSent{
		SentAt: n.SentAt, URL: NewsletterURL(p.SiteRoot, week), Title: n.Title, Articles: slugs,
	})
	if err != nil {
		return Outcome{}, err
	}
	c.Emit(ev)
	v, err := p.Store.Apply(ctx, c)
	if err == ErrConflict {
		// Already sent: the promise is that a second send changes nothing.
		return Outcome{}, nil
	}
	return Outcome{Changed: true, Event: events.NewsletterSent, Version: v}, err
}
