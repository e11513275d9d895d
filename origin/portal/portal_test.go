package portal_test

import (
	"html"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/origin/origintest"
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
