package tokenverifier

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
)

func writeToken(t *testing.T, srv redistest.Backend, raw, client string, ttl time.Duration) {
	t.Helper()
	b, _ := json.Marshal(token.Record{ClientID: client, Scope: "webhooks:read webhooks:write", ExpiresAt: time.Now().Add(ttl).UTC()})
	if err := srv.Client().Set(context.Background(), token.Key(raw), b, ttl).Err(); err != nil {
		t.Fatal(err)
	}
}

func acquire(t *testing.T, url string) *Verifier {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	v, err := Acquire(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Release(url); cancel() })
	select {
	case <-v.Subscribed():
	case <-time.After(10 * time.Second):
		t.Fatal("revocation subscription not confirmed")
	}
	return v
}

func TestVerify(t *testing.T) {
	srv := redistest.New(t)
	v := acquire(t, srv.URL())
	ctx := context.Background()
	writeToken(t, srv, "good-token", "cli_1", time.Hour)
	writeToken(t, srv, "expired-token", "cli_2", time.Hour)
	// An expiry in the past with the key still present (clock skew, a
	// record written by hand) is invalid too.
	b, _ := json.Marshal(token.Record{ClientID: "cli_3", ExpiresAt: time.Now().Add(-time.Minute)})
	srv.Client().Set(ctx, token.Key("past-token"), b, time.Hour)
	srv.Client().Set(ctx, token.Key("garbage-record"), "{not json", time.Hour)

	testCases := []struct {
		desc    string
		raw     string
		client  string
		invalid bool
	}{
		{desc: "valid", raw: "good-token", client: "cli_1"},
		{desc: "unknown", raw: "nope", invalid: true},
		{desc: "expiry in the past", raw: "past-token", invalid: true},
		{desc: "record not JSON", raw: "garbage-record", invalid: true},
		{desc: "empty", raw: "", invalid: true},
		{desc: "oversized", raw: string(make([]byte, token.MaxLength+1)), invalid: true},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			for range 2 { // the second answer comes from the cache
				rec, err := v.Verify(ctx, test.raw)
				if test.invalid {
					if !errors.Is(err, ErrInvalid) {
						t.Fatalf("Verify = %v, %v; want ErrInvalid", rec, err)
					}
					continue
				}
				if err != nil || rec.ClientID != test.client {
					t.Fatalf("Verify = %+v, %v; want client %s", rec, err, test.client)
				}
				v.cache.Wait()
			}
		})
	}
}

func TestRevocationClearsCache(t *testing.T) {
	srv := redistest.New(t)
	v := acquire(t, srv.URL())
	ctx := context.Background()
	writeToken(t, srv, "tok", "cli_1", time.Hour)
	if _, err := v.Verify(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	v.cache.Wait()
	// Revoke the way agent auth does: delete the record, announce the hash.
	srv.Client().Del(ctx, token.Key("tok"))
	if _, err := v.Verify(ctx, "tok"); err != nil {
		t.Fatalf("cached answer expected before the announcement, got %v", err)
	}
	srv.Client().Publish(ctx, token.ChannelRevocations, token.Hash("tok"))
	waitRevoked(ctx, t, v, "tok")
}

// waitRevoked waits up to 5 s for v to refuse tok, as it must once the
// revocation's announcement has arrived, and fails t if it never does.
func waitRevoked(ctx context.Context, t *testing.T, v *Verifier, tok string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := v.Verify(ctx, tok)
		if errors.Is(err, ErrInvalid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked token is still valid at the edge after 5s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRedisDown(t *testing.T) {
	srv := redistest.New(t)
	v := acquire(t, srv.URL())
	srv.Stop()
	_, err := v.Verify(context.Background(), "some-token")
	if err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify with Redis down = %v; want a non-ErrInvalid error", err)
	}
}
