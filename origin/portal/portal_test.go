package portal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/invoicewire/invoicewire/origin/openapi"
	"github.com/invoicewire/invoicewire/origin/origintest"
	"github.com/invoicewire/invoicewire/origin/portal"
)

// TestPortalPage checks the developer portal shows this instance's
// addresses and every part a reader looks for.
func TestPortalPage(t *testing.T) {
	inst := origintest.Start(t)
	_, body := inst.Get(t, "/developers")
	for _, want := range []string{inst.BaseURL + "/articles?limit=2", `id="versioning"`, `id="sunset"`, `id="mcp"`, `id="ask"`, "X-Invoicewire-Signature", "hmac.compare_digest", "timingSafeEqual", "hmac.Equal", "RateLimit-Policy", "article.published", "search_articles"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the developer portal lacks %q", want)
		}
	}
	if strings.Contains(string(body), "http://localhost:8080") {
		t.Error("the developer portal shows the document's example server instead of this instance")
	}
}

// TestQuickStartCommandsWork runs the developer portal's quick start as a
// reader would: each command copied from the page, run with bash and curl
// against this instance, must succeed and show what its title promises.
func TestQuickStartCommandsWork(t *testing.T) {
	for _, bin := range []string{"bash", "curl", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed; make test installs it (deploy/local/deps.sh test)", bin)
		}
	}
	inst := origintest.Start(t)
	_, body := inst.Get(t, "/developers")
	page := string(body)
	start := strings.Index(page, `<section id="quick-start">`)
	end := strings.Index(page[start:], "</section>")
	if start < 0 || end < 0 {
		t.Fatal("no quick start section")
	}
	blocks := regexp.MustCompile(`(?s)<h3>(.*?)</h3>\s*<pre><code[^>]*>(.*?)</code></pre>`).FindAllStringSubmatch(page[start:start+end], -1)
	if len(blocks) < 8 {
		t.Fatalf("only %d commands", len(blocks))
	}
	// What each command's output must show, by a word of its title.
	expect := map[string]string{
		"service index": `"base_url"`, "two newest": `"items"`, "Germany": `"count"`, "Page through": "article-00029",
		"slug of the newest": `"slug"`, "markdown": "\ntitle: ", "mandate status": `"milestones"`, "calendar": "BEGIN:VCALENDAR",
		"Revalidate": "304", "feed": `"items"`, "Ask": `"results"`,
	}
	for _, b := range blocks {
		title, cmd := html.UnescapeString(b[1]), html.UnescapeString(b[2])
		t.Run(title, func(t *testing.T) {
			out, err := exec.Command("bash", "-o", "pipefail", "-c", cmd).CombinedOutput()
			if err != nil {
				t.Fatalf("%s\n%v\n%s", cmd, err, out)
			}
			matched := false
			for word, want := range expect {
				if strings.Contains(title, word) {
					matched = true
					if !strings.Contains(string(out), want) {
						t.Errorf("%s\noutput lacks %q:\n%.500s", cmd, want, out)
					}
				}
			}
			if !matched {
				t.Errorf("no expectation for %q", title)
			}
		})
	}
}

// TestExamplesAreJSON reads every JSON example the developer portal shows
// (request bodies, responses, errors, webhook payloads) as JSON, refusing
// a key written twice in one object; each webhook payload is a delivery of
// its own kind with a real event id, and validates against the document's
// schema of that delivery.
func TestExamplesAreJSON(t *testing.T) {
	inst := origintest.Start(t)
	_, body := inst.Get(t, "/developers")
	page := string(body)
	blocks := regexp.MustCompile(`(?s)<pre><code class="language-json">(.*?)</code></pre>`).FindAllStringSubmatch(page, -1)
	if len(blocks) < 20 {
		t.Fatalf("only %d JSON examples", len(blocks))
	}
	for _, b := range blocks {
		if err := noDuplicateKeys([]byte(html.UnescapeString(b[1]))); err != nil {
			t.Errorf("%v in\n%s", err, html.UnescapeString(b[1]))
		}
	}

	doc, err := libopenapi.NewDocument(openapi.For(inst.SiteRoot))
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	validator := schema_validation.NewSchemaValidator()
	payloads := regexp.MustCompile(`(?s)<h3><code>([a-z.]+)</code>:.*?<summary>Payload</summary><pre><code class="language-json">(.*?)</code></pre>`).FindAllStringSubmatch(page, -1)
	if len(payloads) != model.Model.Webhooks.Len() {
		t.Fatalf("%d payloads for %d webhooks", len(payloads), model.Model.Webhooks.Len())
	}
	for _, p := range payloads {
		kind, payload := p[1], html.UnescapeString(p[2])
		var env struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Test *bool  `json:"test"`
		}
		if err := json.Unmarshal([]byte(payload), &env); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if env.Type != kind || !regexp.MustCompile(`^evt_[0-9a-z]{26}$`).MatchString(env.ID) || env.Test != nil {
			t.Errorf("%s: the payload is %s", kind, payload)
		}
		schema := model.Model.Webhooks.GetOrZero(kind).Post.RequestBody.Content.GetOrZero("application/json").Schema.Schema()
		if ok, errs := validator.ValidateSchemaString(schema, payload); !ok {
			for _, ve := range errs {
				t.Errorf("%s: %s: %s\n%s", kind, ve.Message, ve.Reason, payload)
			}
		}
	}
}

// noDuplicateKeys reads b as one JSON value and fails on a key that an
// object holds twice (RFC 8259 §4: names SHOULD be unique; encoding/json
// would keep the last silently).
func noDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var value func() error
	value = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("the key %q is written twice", k)
				}
				seen[k.(string)] = true
				if err := value(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := value(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := value(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// TestFromPattern makes strings from the document's kinds of pattern.
func TestFromPattern(t *testing.T) {
	for _, p := range []string{`^evt_`, `^[0-9]{4}-w[0-9]{2}$`, `^[a-z0-9]+(-[a-z0-9]+)*$`, `^sha256=[0-9a-f]{64}$`, `^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$`, `^3\.1\.\d+$`} {
		s, ok := portal.FromPattern(p)
		if !ok || !regexp.MustCompile(p).MatchString(s) {
			t.Errorf("%s: %q %v", p, s, ok)
		}
	}
	if _, ok := portal.FromPattern(`(?<=x)`); ok {
		t.Error("an expression Go cannot parse made a string")
	}
}
