package events_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
)

// TestSample checks that every catalog kind has a synthetic test event whose
// data decodes into the kind's payload type, and that an unknown kind is an
// error rather than some other kind's payload.
func TestSample(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, k := range events.Catalog {
		t.Run(k.Name, func(t *testing.T) {
			e, err := events.Sample(k.Name, "https://invoicewire.example", now)
			if err != nil {
				t.Fatal(err)
			}
			if e.Type != k.Name || !e.Test || len(e.ID) != len("evt_test_")+26 || e.ID[:9] != "evt_test_" {
				t.Errorf("sample envelope %+v", e)
			}
			v := reflect.New(k.Payload).Interface()
			dec := json.NewDecoder(bytes.NewReader(e.Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Errorf("data %s is not a %s: %v", e.Data, k.Payload, err)
			}
		})
	}
	for _, desc := range []string{"article.liked", "", "Article.Published"} {
		if e, err := events.Sample(desc, "https://invoicewire.example", now); err == nil {
			t.Errorf("Sample(%q) = %+v, want an error", desc, e)
		}
	}
}

// TestKindsFollowTheCatalog checks that IsKind and Kinds are the catalog's.
func TestKindsFollowTheCatalog(t *testing.T) {
	if len(events.Kinds) != len(events.Catalog) {
		t.Fatalf("Kinds has %d names, the catalog %d kinds", len(events.Kinds), len(events.Catalog))
	}
	for i, k := range events.Catalog {
		if events.Kinds[i] != k.Name || !events.IsKind(k.Name) {
			t.Errorf("kind %d: %s", i, k.Name)
		}
	}
	if events.IsKind("article.liked") {
		t.Error("article.liked is a kind")
	}
}
