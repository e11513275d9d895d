package events

import (
	"fmt"
	"reflect"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
)

// Kind is one entry of the event catalog: an event kind, the Go type its
// data has, the OpenAPI schemas that document it, and how to build the
// synthetic data a test delivery carries (docs/architecture.md, adding an
// event kind).
type Kind struct {
	// Name is the kind as it travels in Event.Type and webhook-id headers.
	Name string
	// Summary is the one line the OpenAPI document shows for the delivery.
	Summary string
	// Envelope is the name of the OpenAPI schema (components/schemas) of a
	// whole delivery of this kind, and Data the schema of its data member.
	Envelope, Data string
	// Payload is the Go type of Event.Data once decoded; the OpenAPI Data
	// schema has exactly its JSON fields.
	Payload reflect.Type
	// sample builds synthetic data of type Payload for a test delivery.
	sample func(siteRoot string, now time.Time) any
}

// ArticleData is the data of the article.* events: the Article resource,
// and for a retracted article when and why (docs/decisions.md, retraction
// and correction).
type ArticleData struct {
	*content.PublicArticle
	RetractedAt      *time.Time `json:"retracted_at,omitempty"`
	RetractionReason string     `json:"retraction_reason,omitempty"`
}

// NewArticleData is the data of an article.* event about a: its Article
// resource under siteRoot, with retractedAt and reason when it is
// retracted. The store builds its events with it and Sample the test
// events, so a test event carries what a real one of its kind does
// (docs/decisions.md, delivery).
func NewArticleData(a *content.Article, siteRoot string, retractedAt *time.Time, reason string) ArticleData {
	return ArticleData{PublicArticle: a.Public(siteRoot), RetractedAt: retractedAt, RetractionReason: reason}
}

// Catalog lists every event kind, in the order the webhook catalog shows
// them. A new kind is added here (and emitted by the store); the OpenAPI
// document is checked against this table by origin/openapi's tests.
var Catalog = []Kind{
	{
		Name: ArticlePublished, Summary: "A new article was published",
		Envelope: "ArticleEvent", Data: "ArticleEventData", Payload: reflect.TypeFor[ArticleData](),
		sample: func(root string, now time.Time) any { return NewArticleData(sampleArticle(root, now), root, nil, "") },
	},
	{
		Name: ArticleCorrected, Summary: "A published article gained a correction",
		Envelope: "ArticleEvent", Data: "ArticleEventData", Payload: reflect.TypeFor[ArticleData](),
		sample: func(root string, now time.Time) any {
			// A correction is an update: the content loader sets updated_at
			// to the latest correction's date (docs/decisions.md, retraction
			// and correction), so the real event carries both.
			a, at := sampleArticle(root, now), now.UTC().Truncate(time.Second)
			a.Corrections = []content.Correction{{Date: at, Text: "A synthetic correction sent because the subscription was created with test=true."}}
			a.UpdatedAt = &at
			return NewArticleData(a, root, nil, "")
		},
	},
	{
		Name: ArticleRetracted, Summary: "An article was pulled",
		Envelope: "ArticleEvent", Data: "ArticleEventData", Payload: reflect.TypeFor[ArticleData](),
		sample: func(root string, now time.Time) any {
			at := now.UTC().Truncate(time.Second)
			return NewArticleData(sampleArticle(root, now), root, &at, "A synthetic retraction sent because the subscription was created with test=true.")
		},
	},
	{
		Name: NewsletterSent, Summary: "The weekly newsletter was sent",
		Envelope: "NewsletterEvent", Data: "Newsletter", Payload: reflect.TypeFor[content.PublicNewsletter](),
		sample: func(root string, now time.Time) any {
			return content.PublicNewsletter{
				SentAt: now.Truncate(time.Second), URL: content.NewsletterURL(root, content.ISOWeek(now)),
				Title: "Webhook test newsletter", Articles: []string{sampleSlug},
			}
		},
	},
	{
		Name: SpecUpdated, Summary: "A tracked specification changed",
		Envelope: "SpecEvent", Data: "Spec", Payload: reflect.TypeFor[content.PublicSpec](),
		sample: func(root string, now time.Time) any {
			version, changed := "3.0.0", now.Truncate(time.Second)
			return content.PublicSpec{Slug: "webhook-test-spec", Name: "Webhook test specification", Version: &version, LastChanged: &changed, URL: root + "/developers"}
		},
	},
}

// Kinds lists every event kind's name, in catalog order.
var Kinds = kindNames()

func kindNames() []string {
	names := make([]string, len(Catalog))
	for i, k := range Catalog {
		names[i] = k.Name
	}
	return names
}

// Lookup returns the catalog entry of the kind name.
func Lookup(name string) (Kind, bool) {
	for _, k := range Catalog {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// IsKind reports whether s names an event kind.
func IsKind(s string) bool {
	_, ok := Lookup(s)
	return ok
}

// Sample builds the synthetic event of kind name that POST /webhooks?test=true
// queues (docs/decisions.md, subscriptions): id evt_test_…, "test": true, and
// data of the kind's real payload type. An unknown kind is an error.
func Sample(name, siteRoot string, now time.Time) (Event, error) {
	k, ok := Lookup(name)
	if !ok {
		return Event{}, fmt.Errorf("events: no sample for the unknown kind %q", name)
	}
	e, err := New(k.Name, now, k.sample(siteRoot, now))
	if err != nil {
		return Event{}, err
	}
	e.ID, e.Test = NewID("evt_test_", now), true
	return e, nil
}

const sampleSlug = "webhook-test-article"

// sampleArticle is the article of the synthetic article.* events. Its url
// and markdown_url have the shape of a real article's but name no page
// (404): "test": true marks the event as synthetic (docs/decisions.md,
// subscriptions).
func sampleArticle(root string, now time.Time) *content.Article {
	return &content.Article{
		Slug: sampleSlug, Title: "Webhook test: a synthetic article", Kicker: "Webhook test",
		Dek:     "A synthetic article sent because the subscription was created with test=true.",
		Section: "network", Audience: []string{"vendor"}, Countries: []string{}, Tags: []string{"test"},
		Locale: "en", PublishedAt: now.UTC().Truncate(time.Second),
		Sources: []content.Citation{{Source: "invoicewire", Name: "Invoicewire", URL: root + "/developers"}},
	}
}
