package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// adaptedHandlers are the handlers of a golden adapt file
// (cmd/edge/testdata), in the order Caddy runs them: each route's handlers,
// subroutes walked in place.
func adaptedHandlers(t *testing.T, root, golden string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "cmd", "edge", "testdata", golden))
	if err != nil {
		t.Fatal(err)
	}
	type route struct {
		Handle []struct {
			Handler string  `json:"handler"`
			Routes  []route `json:"routes"`
		} `json:"handle"`
	}
	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []route `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	var out []string
	var walk func([]route)
	walk = func(routes []route) {
		for _, r := range routes {
			for _, h := range r.Handle {
				if h.Handler == "subroute" {
					walk(h.Routes)
					continue
				}
				out = append(out, h.Handler)
			}
		}
	}
	for _, srv := range cfg.Apps.HTTP.Servers {
		walk(srv.Routes)
	}
	return out
}

// ownModule is the ID a module of caddymodules/ registers as an HTTP handler.
var ownModule = regexp.MustCompile(`ID: +"http\.handlers\.([a-z_]+)"`)

// ownHandlers are the HTTP handlers the repository's Caddy modules provide.
func ownHandlers(t *testing.T, root string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "caddymodules", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ownModule.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
	}
	if len(out) < 7 {
		t.Fatalf("caddymodules/: found only the handlers %v", out)
	}
	return out
}

// handlerName is a handler's name in docs/architecture.md: a snake_case
// word, in the picture's chain of arrows or leading a bullet of "A read".
var (
	chainName  = regexp.MustCompile(`[a-z]+(?:_[a-z]+)*`)
	bulletName = regexp.MustCompile("(?m)^   - `([a-z_]+)`")
)

// inOrder keeps the names of list that are in keep, each once, in order.
func inOrder(list []string, keep func(string) bool) []string {
	var out []string
	for _, n := range list {
		if keep(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// TestHandlerOrder: docs/architecture.md gives the edge's handlers in the
// order Caddy runs them, in the picture and in "A read", as the golden
// adapt file of the production example (which configures every module)
// has them, and names each of the repository's own handlers there. A
// module's place comes from the directive order it registers,
// which is easy to misjudge by reading the Caddyfile.
func TestHandlerOrder(t *testing.T) {
	root := repo.Root(t)
	adapted := adaptedHandlers(t, root, "Caddyfile.production.json")
	ours := ownHandlers(t, root)
	picture := section(t, root, "docs/architecture.md", "## The picture")
	start := strings.Index(picture, "edge (cmd/edge")
	end := strings.Index(picture, "json_errors")
	if start < 0 || end < start {
		t.Fatal("docs/architecture.md: no edge box with its handler chain in The picture")
	}
	var chain []string
	for _, line := range strings.Split(picture[start:end], "\n")[1:] {
		chain = append(chain, chainName.FindAllString(line, -1)...)
	}
	var bullets []string
	for _, m := range bulletName.FindAllStringSubmatch(section(t, root, "docs/architecture.md", "## A read: edge → origin → store"), -1) {
		bullets = append(bullets, m[1])
	}
	for _, doc := range []struct {
		where string
		names []string
	}{
		{"The picture", chain},
		{`"A read"`, bullets},
	} {
		named := func(n string) bool { return slices.Contains(doc.names, n) }
		want := inOrder(adapted, named)
		got := inOrder(doc.names, func(n string) bool { return slices.Contains(adapted, n) })
		if !slices.Equal(got, want) || len(want) < 8 {
			t.Errorf("docs/architecture.md, %s: handlers in the order %v; cmd/edge/testdata/Caddyfile.production.json runs them %v", doc.where, got, want)
		}
		for _, h := range adapted {
			if ours[h] && !named(h) {
				t.Errorf("docs/architecture.md, %s: no %s, which the production example runs", doc.where, h)
			}
		}
	}
}
