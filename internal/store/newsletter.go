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

// ErrEmptyWeek is returned when a week has no published article to send.
var ErrEmptyWeek = fmt.Errorf("store: no article was published that week")

// SendNewsletter builds and publishes the issue for week from the articles
// published in it, newest first, with the editor's intro when there is one,
// and emits newsletter.sent. Sending a week twice changes nothing.
func (p *Publisher) SendNewsletter(ctx context.Context, week string, intro *content.NewsletterIntro) (Outcome, error) {
	start, err := content.WeekStart(week)
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
	ev, err := events.New(events.NewsletterSent, n.SentAt, content.PublicNewsletter{
		SentAt: n.SentAt, URL: content.NewsletterURL(p.SiteRoot, week), Title: n.Title, Articles: slugs,
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
