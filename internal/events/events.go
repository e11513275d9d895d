// Package events defines the content events Invoicewire publishes (the contract)
// and the envelope they travel in, from the events stream in Redis to the
// worker and on to subscribers (docs/decisions.md, delivery).
package events

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The event kinds; Catalog (catalog.go) says what each carries.
const (
	ArticlePublished = "article.published"
	ArticleCorrected = "article.corrected"
	ArticleRetracted = "article.retracted"
	NewsletterSent   = "newsletter.sent"
	SpecUpdated      = "spec.updated"
)

// Stream is the Redis stream every content change appends its event to. It
// shares the content hash tag so the change and its event are written in one
// atomic script, also on Redis Cluster (docs/decisions.md, retraction and correction).
const Stream = "iw:{content}:events"

// Event is one content event: the envelope body of a delivery (docs/decisions.md, delivery).
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
	// Test marks the synthetic events of POST /webhooks?test=true (docs/decisions.md, subscriptions).
	Test bool `json:"test,omitempty"`
}

// New builds an event of kind typ at time now, with data marshalled to JSON.
func New(typ string, now time.Time, data any) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("events: encoding %s data: %w", typ, err)
	}
	return Event{ID: NewID("evt_", now), Type: typ, CreatedAt: now.UTC(), Data: b}, nil
}

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns prefix followed by a 26-character identifier whose first part
// is the time in milliseconds, so identifiers sort by creation time, and whose
// rest is 80 random bits.
func NewID(prefix string, now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	rand.Read(b[6:])
	return prefix + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// DerivedID returns prefix followed by a 26-character identifier made of
// the first 16 bytes of seed, in NewID's alphabet: the same seed always
// gives the same identifier (an idempotent create, docs/decisions.md,
// "Idempotency-Key"). It does not sort by time.
func DerivedID(prefix string, seed []byte) string {
	var b [16]byte
	copy(b[:], seed)
	return prefix + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// Fields is the event as the flat field list of a stream entry.
func (e Event) Fields() map[string]any {
	return map[string]any{
		"id":         e.ID,
		"type":       e.Type,
		"created_at": e.CreatedAt.Format(time.RFC3339Nano),
		"data":       string(e.Data),
	}
}

// FromFields rebuilds an event from a stream entry's fields.
func FromFields(f map[string]any) (Event, error) {
	str := func(k string) string { s, _ := f[k].(string); return s }
	e := Event{ID: str("id"), Type: str("type"), Data: json.RawMessage(str("data"))}
	t, err := time.Parse(time.RFC3339Nano, str("created_at"))
	if err != nil {
		return Event{}, fmt.Errorf("events: entry %q has a bad created_at: %w", e.ID, err)
	}
	e.CreatedAt = t
	if e.ID == "" || !IsKind(e.Type) || !json.Valid(e.Data) {
		return Event{}, fmt.Errorf("events: malformed stream entry %q of type %q", e.ID, e.Type)
	}
	return e, nil
}
