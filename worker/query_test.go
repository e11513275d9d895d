package worker_test

import (
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
)

// TestQueryEscapedOnDelivery: a subscription stored with a space, quotes
// and a non-ASCII character in its URL's query (as the origin accepted
// before it encoded them) is delivered to with them percent-encoded, a
// well-formed request line (RFC 9112 §3.2), not dead-lettered.
func TestQueryEscapedOnDelivery(t *testing.T) {
	h := newHarness(t)
	rc := newReceiver(t, nil)
	h.subscribe(t, rc.URL+`/raw?q=a b&x="y"&c=€`, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", events.SpecUpdated)
	h.start(t, h.config())
	h.publish(t, events.SpecUpdated, map[string]string{"slug": "peppol-bis-billing-3"})
	eventually(t, 10*time.Second, "one delivery and an empty queue", func() bool { return rc.count() == 1 && h.idle(t) })
	if got, want := rc.deliveries()[0].URL, rc.URL+"/raw?q=a%20b&x=%22y%22&c=%E2%82%AC"; got != want {
		t.Errorf("delivered to %s, want %s", got, want)
	}
}
