package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

func httpJSON(t *testing.T, method, url, bearer, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	json.Unmarshal(b, &v)
	return resp.StatusCode, v
}

// TestPublishingToDelivery is the whole path through the real origin and
// the real publisher: an agent subscribes with test=true and receives one
// synthetic event per kind; then a new article, a correction, a retraction,
// a newsletter and a spec change each reach it, and nothing else does.
func TestPublishingToDelivery(t *testing.T) {
	inst := origintest.Start(t, func(c *origin.Config) {
		c.WebhookPolicy = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	rdb := inst.Store.Client()
	key, err := signing.NewSource(rdb, "").Key(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{rdb: rdb, store: webhook.NewStore(rdb), key: key}
	h.start(t, h.config())
	// The corpus's own events go first, to no subscriber.
	eventually(t, 20*time.Second, "the corpus events consumed", func() bool {
		n, _ := rdb.XLen(context.Background(), events.Stream).Result()
		return n == 0
	})

	rc := newReceiver(t, nil)
	_, reg := httpJSON(t, "POST", inst.BaseURL+"/agent-auth/register", "", `{"client_name":"e2e"}`)
	_, tok := httpJSON(t, "POST", inst.BaseURL+"/agent-auth/claim", "", `{"client_id":"`+reg["client_id"].(string)+`"}`)
	status, sub := httpJSON(t, "POST", inst.BaseURL+"/webhooks?test=true", tok["access_token"].(string),
		`{"url":"`+rc.URL+`/hook","events":["article.published","article.corrected","article.retracted","newsletter.sent","spec.updated"]}`)
	if status != 201 {
		t.Fatalf("subscribe: %d %v", status, sub)
	}
	eventually(t, 20*time.Second, "five test events", func() bool { return rc.count() == 5 })
	kinds := map[string]bool{}
	for _, d := range rc.deliveries() {
		e := envelope(t, d.Body)
		if !e.Test || !strings.HasPrefix(e.ID, "evt_test_") || d.Header.Get("webhook-id") != e.ID {
			t.Errorf("test delivery %s", d.Body)
		}
		kinds[e.Type] = true
	}
	if len(kinds) != 5 {
		t.Errorf("test events of kinds %v, want all five", kinds)
	}

	ctx := context.Background()
	pub := inst.Publisher
	fresh := contenttest.Article(origintest.Articles)
	fresh.PublishedAt = contenttest.Base.Add(time.Hour)
	fresh.Slug = "fresh-article"
	if _, err := pub.SyncArticle(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	corrected := *fresh
	corrected.Corrections = []content.Correction{{Date: contenttest.Base.Add(2 * time.Hour), Text: "An earlier version misnamed the authority."}}
	upd := contenttest.Base.Add(2 * time.Hour)
	corrected.UpdatedAt = &upd
	if _, err := pub.SyncArticle(ctx, &corrected); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Retract(ctx, contenttest.Article(1).Slug, "The source withdrew the report."); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.SendNewsletter(ctx, content.ISOWeek(contenttest.Base), nil); err != nil {
		t.Fatal(err)
	}
	spec := *inst.Corpus.Specs[0]
	spec.Version = "9.9.9"
	changed := contenttest.Base.Add(3 * time.Hour)
	spec.LastChanged = &changed
	if _, err := pub.SyncSpec(ctx, &spec); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{
		events.ArticlePublished: "fresh-article", events.ArticleCorrected: "fresh-article",
		events.ArticleRetracted: contenttest.Article(1).Slug, events.NewsletterSent: "", events.SpecUpdated: spec.Slug,
	}
	eventually(t, 20*time.Second, "five content events", func() bool { return rc.count() == 10 })
	for _, d := range rc.deliveries()[5:] {
		e := envelope(t, d.Body)
		slug, ok := want[e.Type]
		if !ok || e.Test || !strings.HasPrefix(e.ID, "evt_") {
			t.Errorf("unexpected delivery %s", d.Body)
			continue
		}
		delete(want, e.Type)
		var data map[string]any
		json.Unmarshal(e.Data, &data)
		if slug != "" && data["slug"] != slug {
			t.Errorf("%s carries %v, want slug %s", e.Type, data["slug"], slug)
		}
		if e.Type == events.NewsletterSent && (data["url"] == nil || data["articles"] == nil) {
			t.Errorf("newsletter.sent carries %v", data)
		}
	}
	if len(want) > 0 {
		t.Errorf("no delivery of %v", want)
	}
	// The owner reads the log through the API. The worker records an
	// attempt once the receiver has answered, so the last one may land a
	// moment after the receiver counted it.
	shown := 0
	eventually(t, 5*time.Second, "the subscription's log to show the 10 deliveries", func() bool {
		_, detail := httpJSON(t, "GET", inst.BaseURL+"/webhooks/subscriptions/"+sub["id"].(string), tok["access_token"].(string), "")
		ds, _ := detail["deliveries"].([]any)
		shown = len(ds)
		return shown >= 10
	})
	if shown != 10 {
		t.Errorf("the subscription shows %d deliveries, want 10", shown)
	}
}
