// Package observability checks deploy/prometheus and deploy/grafana: the
// alert rules pass promtool's check and their own unit tests, the dashboard
// is a well-formed Grafana dashboard covering what operators need, every
// PromQL query parses, and every series the rules and the dashboard query
// is really exported by the running processes (exported_test.go).
package observability

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// requiredAlerts are the alerts issue 9 and docs/operations.md promise.
var requiredAlerts = []string{
	"InvoicewireHighErrorRate", "InvoicewireEdgeDown", "InvoicewireOriginDown", "InvoicewireCacheHitRatioCollapse",
	"InvoicewireWebhookBacklog", "InvoicewireWebhookDeadLetters", "InvoicewireRedisUnreachable",
}

// requiredPanels are words that must each start a panel title, one per
// thing the dashboard must show.
var requiredPanels = []string{
	"Edge requests/s by status", "Edge cache: hit / stale / miss", "429", "Origin latency percentiles",
	"Redis errors", "Webhook deliveries by outcome", "Retry queue depth", "Dead letters", "Stream lag",
}

// query is one PromQL expression and where it comes from.
type query struct {
	where string
	expr  string
}

type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T, root string) rulesFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf rulesFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("rules.yml: %v", err)
	}
	return rf
}

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T, root string) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "invoicewire.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("invoicewire.json: %v", err)
	}
	return d
}

// queries returns every PromQL expression of the rules and the dashboard.
func queries(t *testing.T, root string) []query {
	var out []query
	for _, g := range readRules(t, root).Groups {
		for _, r := range g.Rules {
			out = append(out, query{"rules.yml " + r.Alert + r.Record, r.Expr})
		}
	}
	for _, p := range flatten(readDashboard(t, root).Panels) {
		for _, tg := range p.Targets {
			out = append(out, query{"dashboard panel " + p.Title, tg.Expr})
		}
	}
	return out
}

func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

// grafanaVars replaces Grafana's interval variables with a duration so the
// expression parses as Prometheus will see it.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// selector is one series selector of a query: a metric name and the label
// values it pins with `=`.
type selector struct {
	name   string
	labels map[string]string
}

func selectors(t *testing.T, q query) []selector {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(q.expr))
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", q.where, q.expr, err)
		return nil
	}
	var out []selector
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := selector{name: vs.Name, labels: map[string]string{}}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				if m.Type != labels.MatchEqual {
					t.Errorf("%s: selects metric names by pattern (%s); name them", q.where, m)
				}
				s.name = m.Value
				continue
			}
			if m.Type == labels.MatchEqual {
				s.labels[m.Name] = m.Value
			}
		}
		out = append(out, s)
		return nil
	})
	return out
}

func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: `make test` installs it (Debian package prometheus, deploy/local/deps.sh test)")
	}
	dir := filepath.Join(repo.Root(t), "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "rules.yml"}, {"test", "rules", "rules_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestRules(t *testing.T) {
	root := repo.Root(t)
	rf := readRules(t, root)
	ops, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if sev := r.Labels["severity"]; sev != "critical" && sev != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, sev)
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			// The runbook link points at a section of docs/operations.md.
			anchor, ok := strings.CutPrefix(r.Annotations["runbook"], "docs/operations.md#")
			if !ok {
				t.Errorf("%s: runbook %q is not a docs/operations.md anchor", r.Alert, r.Annotations["runbook"])
			} else if !strings.Contains(strings.ToLower(string(ops)), "### "+anchor) {
				t.Errorf("%s: docs/operations.md has no heading \"### %s\" for the runbook", r.Alert, anchor)
			}
		}
	}
	for _, want := range requiredAlerts {
		if !slices.Contains(alerts, want) {
			t.Errorf("rules.yml has no alert %s", want)
		}
	}
	for _, q := range queries(t, root) {
		selectors(t, q)
	}
}

func TestDashboard(t *testing.T) {
	root := repo.Root(t)
	d := readDashboard(t, root)
	if d.UID == "" || d.Title == "" {
		t.Errorf("the dashboard needs a uid and a title")
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}) bool {
		return v.Name == "datasource" && v.Type == "datasource"
	}) {
		t.Errorf("the dashboard needs a datasource variable, so it imports into any Grafana")
	}
	ids := map[int]bool{}
	var titles []string
	for _, p := range flatten(d.Panels) {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: bad gridPos", p.Title)
		}
		titles = append(titles, p.Title)
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be ${datasource}", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if refs[tg.RefID] || tg.RefID == "" {
				t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
	for _, want := range requiredPanels {
		if !slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no panel titled %q…", want)
		}
	}
}
