package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/internal/events"
)

// BenchmarkNewFirstPublish renders the call of one run of new articles
// (firstPublishBatch of them, two audiences and two countries each, one
// every two hours, as in the generated archives of docs/scale.md): the Go
// side of a first publish beyond encoding records and events.
func BenchmarkNewFirstPublish(b *testing.B) {
	p := &Publisher{Store: &Store{}, SiteRoot: "https://invoicewire.example"}
	articles := make([]*content.Article, firstPublishBatch)
	docs := make([][]byte, len(articles))
	evs := make([]events.Event, len(articles))
	for i := range articles {
		a := contenttest.Article(i)
		a.Audience = []string{content.Audiences[i%len(content.Audiences)], content.Audiences[(i/3+1)%len(content.Audiences)]}
		a.Countries = append(a.Countries, contenttest.Countries[(i/7+1)%len(contenttest.Countries)].Code)
		a.PublishedAt = contenttest.Base.Add(time.Duration(i) * 2 * time.Hour)
		articles[i], docs[i] = a, []byte(fmt.Sprintf(`{"slug":%q}`, a.Slug))
		evs[i] = events.Event{ID: "ev", Type: events.ArticlePublished, CreatedAt: contenttest.Base, Data: []byte(`{}`)}
	}
	b.ReportAllocs()
	for b.Loop() {
		p.newFirstPublish(articles, docs, evs)
	}
}
