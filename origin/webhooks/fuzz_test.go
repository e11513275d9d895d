package webhooks_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/origin/openapi/contract"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// claimedToken registers an anonymous agent and claims a bearer token for
// it, as a client does before subscribing.
func claimedToken(tb testing.TB, inst *origintest.Instance) string {
	tb.Helper()
	post := func(path, body string) []byte {
		resp, err := inst.Server.Client().Post(inst.SiteRoot+path, "application/json", strings.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		var b json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || resp.StatusCode >= 300 {
			tb.Fatalf("POST %s: %d %v %s", path, resp.StatusCode, err, b)
		}
		return b
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.Unmarshal(post("/api/v1/agent-auth/register", `{"client_name":"fuzz"}`), &reg)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.Unmarshal(post("/api/v1/agent-auth/claim", `{"client_id":"`+reg.ClientID+`"}`), &tok)
	if tok.AccessToken == "" {
		tb.Fatal("no access token claimed")
	}
	return tok.AccessToken
}

// FuzzCreateSubscription posts untrusted subscription bodies, with a valid
// token, to POST /api/v1/webhooks: every answer is a documented one — a
// created subscription or the JSON error — never a 5xx.
func FuzzCreateSubscription(f *testing.F) {
	inst := origintest.Start(f)
	checker := contract.New(f)
	tok := claimedToken(f, inst)
	for _, s := range []struct{ ct, body string }{
		{"application/json", `{"url":"https://hooks.example/in","events":["article.published"]}`},
		{"application/json", `{"url":"https://hooks.example/in","events":["article.published","newsletter.sent"],"secret":"0123456789abcdef-secret"}`},
		{"application/json", `{"url":"http://127.0.0.1:9/hook","events":["spec.updated"]}`},
		{"application/json", `{"url":"https://[::1]/x","events":[]}`},
		{"application/json", `{"url":"ftp://x","events":["nope"],"secret":"short"}`},
		{"application/json", `{"url":123,"events":"article.published"}`},
		{"application/json", `{"url":"https://hooks.example/in","events":["article.published"]} trailing`},
		{"application/json", `{"url":"https://hooks.example/a","url":"https://hooks.example/b","events":["spec.updated"]}`},
		{"application/json", `[]`},
		{"application/json", `null`},
		{"application/merge-patch+json", `{}`},
		{"text/plain", `url=https://hooks.example`},
		{"application/json", "{\"url\":\"https://8.8.8.8/in\xff\",\"events\":[\"spec.updated\"]}"},
		{"application/json; charset=utf-8", `{"url":"https://user:pass@hooks.example:99999/in","events":["article.published"]}`},
	} {
		f.Add(s.ct, s.body)
	}
	f.Fuzz(func(t *testing.T, contentType, body string) {
		st := inst.Untrusted(t, checker, "POST", "/api/v1/webhooks", http.Header{
			"Content-Type":  {contentType},
			"Authorization": {"Bearer " + tok},
		}, []byte(body))
		// JSON is UTF-8 (RFC 8259 §8.1): other bytes are refused, never
		// stored as U+FFFD.
		if st < 300 && st != 0 && !utf8.ValidString(body) {
			t.Errorf("a body that is not UTF-8 was accepted (%d): %q", st, body)
		}
	})
}

// FuzzSubscriptionRoutes sends untrusted Authorization values and
// subscription ids to the owner routes: 401, 404 or a documented answer.
func FuzzSubscriptionRoutes(f *testing.F) {
	inst := origintest.Start(f)
	checker := contract.New(f)
	tok := claimedToken(f, inst)
	f.Add("Bearer "+tok, "sub_0000")
	f.Add("Bearer "+tok, "")
	f.Add("bearer "+tok+" ", "../../agent-auth/register")
	f.Add("Basic dXNlcjpwYXNz", "sub_x")
	f.Add("Bearer", "%00")
	f.Add("Bearer "+strings.Repeat("x", 5000), "sub_x")
	f.Fuzz(func(t *testing.T, authorization, id string) {
		h := http.Header{"Authorization": {authorization}}
		inst.Untrusted(t, checker, "GET", "/api/v1/webhooks/subscriptions", h, nil)
		// Any id, a trailing slash, '?', '#', "/.." or "" included: the
		// contract checker reads paths as the router does.
		inst.Untrusted(t, checker, "GET", "/api/v1/webhooks/subscriptions/"+id, h, nil)
		inst.Untrusted(t, checker, "DELETE", "/api/v1/webhooks/subscriptions/"+id, h, nil)
	})
}
