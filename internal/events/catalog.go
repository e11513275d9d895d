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

// Catalog lists every event kind, in the order the webhook catalog shows
// them. A new kind is added here (and emitted by the store); the OpenAPI
// document is checked against this table by origin/openapi's tests.
var Catalog = []Kind{
	{
		Name: ArticlePublished, Summary: "A new article was published",
		Envelope: "ArticleEvent", Data: "ArticleEventData", Payload: reflect.TypeFor[ArticleData](),
		sample: func(root string, now time.Time) any { return ArticleData{PublicArticle: sampleArticle(root, now)} },
	},
	{
		Name: ArticleCorrected, Summary: "A published article gained a correction",
		Envelope: "ArticleEvent", Data: "ArticleEventData", Payload: reflect.TypeFor[ArticleData](),
		sample: func(root string, now time.Time) any { return ArticleData{PublicArticle: sampleArticle(root, now)} },
	},
	{
		Name: ArticleRetracted, Summary: "An article was pulled",
		Envelope: "ArticleEvent", Data: "ArticleEventData", Payload: reflect.TypeFor[ArticleData](),
		sample: func(root string, now time.Time) any { return ArticleData{PublicArticle: sampleArticle(root, now)} },
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

func sampleArticle(root string, now time.Time) *content.PublicArticle {
	dek := "A synthetic article sent because the subscription was created with test=true."
	page := root + "/" + now.Format("2006/01") + "/" + sampleSlug
	return &content.PublicArticle{
		Slug: sampleSlug, Title: "Webhook test: a synthetic article", Dek: &dek,
		Section: "network", Audience: []string{"vendor"}, Countries: []string{}, Tags: []string{"test"},
		Locale: "en", PublishedAt: now.Truncate(time.Second),
		Sources:     []content.PublicLink{{Name: "Invoicewire", URL: root + "/developers"}},
		URL:         page + "/",
		MarkdownURL: page + ".md",
	}
}
