package webhooks_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/webhook"
	"github.com/invoicewire/invoicewire/origin"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// agent registers and claims a token, returning the client id too: the
// idempotency record's key is derived from it.
func agent(t *testing.T, inst *origintest.Instance) (clientID, tok string) {
	t.Helper()
	post := func(path, body string, v any) {
		resp, err := inst.Server.Client().Post(inst.SiteRoot+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
		}
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	post("/api/v1/agent-auth/register", `{"client_name":"idempotent"}`, &reg)
	var claimed struct {
		AccessToken string `json:"access_token"`
	}
	post("/api/v1/agent-auth/claim", `{"client_id":"`+reg.ClientID+`"}`, &claimed)
	return reg.ClientID, claimed.AccessToken
}

// idemRecord is the Redis key of a client's record for a key on
// POST /api/v1/webhooks (origin/idempotency).
func idemRecord(clientID, key string) string {
	sum := sha256.Sum256([]byte("client:" + clientID + "\x00webhooks\x00" + key))
	return "iw:idem:{" + hex.EncodeToString(sum[:16]) + "}"
}

type createdSub struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// TestCreateAppliedOnce: a subscription request retried under the same
// Idempotency-Key after a failure past the point where the subscription was
// stored finds that subscription and answers with it (and the secret
// generated for it); it never stores a second one (docs/decisions.md,
// "Idempotency-Key"). Real Redis; the failures are real ones.
func TestCreateAppliedOnce(t *testing.T) {
	inst := origintest.Start(t, func(c *origin.Config) {
		c.WebhookPolicy = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	rdb := inst.Redis.Client()
	ctx := context.Background()
	const body = `{"url":"http://127.0.0.1:9/hook","events":["spec.updated"]}`
	testCases := []struct {
		desc string
		key  string
		// fail breaks the first try after the subscription is stored and
		// returns what the first answer's status must be; heal undoes it.
		fail      func(t *testing.T, clientID string) int
		heal      func(t *testing.T, clientID string)
		wantSubs  int
		sameFirst bool // the retry answers with the first try's subscription
	}{
		{
			desc: "the test events fail to queue on the first try",
			key:  "enqueue-fails",
			fail: func(t *testing.T, _ string) int {
				// The queue's sorted set turned into a string: the test
				// event's script fails with WRONGTYPE after the
				// subscription is stored.
				if err := rdb.Set(ctx, webhook.KeyDue, "x", 0).Err(); err != nil {
					t.Fatal(err)
				}
				return http.StatusInternalServerError
			},
			heal: func(t *testing.T, _ string) {
				if err := rdb.Del(ctx, webhook.KeyDue).Err(); err != nil {
					t.Fatal(err)
				}
			},
			wantSubs: 1,
		},
		{
			desc: "the idempotency record is lost after a 201",
			key:  "record-lost",
			fail: func(t *testing.T, _ string) int { return http.StatusCreated },
			heal: func(t *testing.T, clientID string) {
				// As when storing the record failed: the answer went out,
				// the key was released.
				if n, err := rdb.Del(ctx, idemRecord(clientID, "record-lost")).Result(); err != nil || n != 1 {
					t.Fatalf("deleting the record: %d %v", n, err)
				}
			},
			wantSubs:  1,
			sameFirst: true,
		},
		{
			desc:     "no Idempotency-Key: two requests, two subscriptions",
			fail:     func(t *testing.T, _ string) int { return http.StatusCreated },
			heal:     func(t *testing.T, _ string) {},
			wantSubs: 2,
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			clientID, tok := agent(t, inst)
			post := func() (int, createdSub) {
				req, _ := http.NewRequest("POST", inst.SiteRoot+"/api/v1/webhooks?test=true", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tok)
				if tc.key != "" {
					req.Header.Set("Idempotency-Key", tc.key)
				}
				resp, err := inst.Server.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var c createdSub
				json.Unmarshal(b, &c)
				return resp.StatusCode, c
			}
			want := tc.fail(t, clientID)
			st, first := post()
			tc.heal(t, clientID)
			if st != want {
				t.Fatalf("first try: %d, want %d", st, want)
			}
			st, second := post()
			if st != http.StatusCreated || second.ID == "" {
				t.Fatalf("retry: %d %+v", st, second)
			}
			if second.Secret == "" {
				t.Error("the retry's answer lacks the generated secret")
			}
			if tc.sameFirst && (second.ID != first.ID || second.Secret != first.Secret) {
				t.Errorf("retry answered %+v, the first try %+v", second, first)
			}
			subs, err := webhook.NewStore(rdb).List(ctx, clientID)
			if err != nil {
				t.Fatal(err)
			}
			if len(subs) != tc.wantSubs {
				t.Fatalf("%d subscriptions stored, want %d", len(subs), tc.wantSubs)
			}
			if tc.wantSubs == 1 && (subs[0].ID != second.ID || subs[0].Secret != second.Secret) {
				t.Errorf("stored %s, answered %+v", subs[0].ID, second)
			}
		})
	}
}
