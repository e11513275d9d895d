package portal

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"strings"
	texttemplate "text/template"

	"go.yaml.in/yaml/v4"

	"github.com/invoicewire/invoicewire/origin/site"
)

//go:embed developers.html
var pageFiles embed.FS

// pageTemplate is the portal page in the site's layout.
var pageTemplate = template.Must(site.PageTemplate(pageFiles, "developers.html"))

// samples are what openapi.json cannot hold: the quick-start commands and
// the webhook signature verification code. They are files, not Go strings,
// so each is read, linted and run as what it is (the Go sample is even
// compiled by go build ./...; the tests run all three).
//
//go:embed samples/quickstart.yaml samples/webhook/verify.go samples/webhook/verify.py samples/webhook/verify.js
var samples embed.FS

// example is one titled block of code on the page.
type example struct {
	Title, Lang, Code string
	Note              template.HTML
}

// quickStart renders the quick-start commands for this instance: {{.Site}}
// is {site_root}, {{.Base}} is {base_url}.
func quickStart(siteRoot, base string) ([]example, error) {
	src, err := samples.ReadFile("samples/quickstart.yaml")
	if err != nil {
		return nil, fmt.Errorf("portal: reading the quick start: %w", err)
	}
	var steps []struct {
		Title string `yaml:"title"`
		Code  string `yaml:"code"`
		Note  string `yaml:"note"`
	}
	if err := yaml.Unmarshal(src, &steps); err != nil {
		return nil, fmt.Errorf("portal: parsing the quick start: %w", err)
	}
	data := struct{ Site, Base string }{siteRoot, base}
	out := make([]example, 0, len(steps))
	for _, st := range steps {
		t, err := texttemplate.New(st.Title).Option("missingkey=error").Parse(st.Code)
		if err != nil {
			return nil, fmt.Errorf("portal: quick start %q: %w", st.Title, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("portal: quick start %q: %w", st.Title, err)
		}
		// The notes are the portal's own HTML, written in the file.
		out = append(out, example{Title: st.Title, Lang: "sh", Code: b.String(), Note: template.HTML(st.Note)})
	}
	return out, nil
}

// verifyExamples check X-Invoicewire-Signature (the HMAC-SHA256 of the raw
// body keyed by the subscription's secret) in three languages, Python with
// the standard library only.
// Each compares in constant time and reads the raw body before any JSON
// parsing.
var verifyExamples = []example{
	{Title: "Go", Lang: "go", Code: sample("samples/webhook/verify.go")},
	{Title: "Python (standard library only)", Lang: "python", Code: sample("samples/webhook/verify.py")},
	{Title: "Node.js", Lang: "javascript", Code: sample("samples/webhook/verify.js")},
}

// sample is an embedded file without its final newline.
func sample(name string) string {
	b, err := samples.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("portal: %s is not embedded: %v", name, err))
	}
	return strings.TrimSuffix(string(b), "\n")
}
