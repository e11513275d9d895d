package portal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"go.yaml.in/yaml/v4"

	"github.com/invoicewire/invoicewire/origin/site"
)

// portalGen turns parts of the document into views.
type portalGen struct {
	site, base string
}

// expand replaces the document's placeholders and its example server with
// this instance's addresses.
func (g *portalGen) expand(s string) string {
	return strings.NewReplacer("{site_root}", g.site, "{base_url}", g.base, docServer+"/api/v1", g.base, docServer, g.site).Replace(s)
}

func (g *portalGen) md(s string) template.HTML {
	h, err := site.RenderMarkdown(g.expand(s))
	if err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return h
}

func (g *portalGen) operation(method, path, server string, op *v3.Operation, shared []*v3.Parameter) *opView {
	ov := &opView{ID: op.OperationId, Method: method, Path: path, URL: server + path, Summary: op.Summary,
		Description: g.md(op.Description), Auth: len(op.Security) > 0}
	pathValues := map[string]string{}
	for _, p := range append(append([]*v3.Parameter{}, shared...), op.Parameters...) {
		if p == nil || p.Name == "If-None-Match" {
			// Every read takes it; the caching section explains it once.
			continue
		}
		req := "optional"
		if p.Required != nil && *p.Required {
			req = "required"
		}
		typ := ""
		if p.Schema != nil {
			typ = schemaType(p.Schema.Schema())
		}
		ov.Params = append(ov.Params, paramView{Name: p.Name, In: p.In, Type: typ, Required: req, Description: g.md(p.Description)})
		if p.In == "path" {
			// The parameter's example, else its schema's, else the first
			// of its listed values (one that answers, where a made-up
			// word would not).
			node := p.Example
			if node == nil && p.Schema != nil {
				if sc := p.Schema.Schema(); sc.Example != nil {
					node = sc.Example
				} else if len(sc.Enum) > 0 {
					node = sc.Enum[0]
				}
			}
			val := "example"
			var ex any
			if node != nil && node.Decode(&ex) == nil {
				val = fmt.Sprint(ex)
			}
			pathValues[p.Name] = val
		}
	}
	url := ov.URL
	for k, val := range pathValues {
		url = strings.ReplaceAll(url, "{"+k+"}", val)
	}
	curl := "curl -s"
	if method != http.MethodGet {
		curl += " -X " + method
	}
	if ov.Auth {
		curl += " \\\n  -H 'Authorization: Bearer <access_token>'"
	}
	if op.RequestBody != nil && op.RequestBody.Content != nil {
		for ct, mt := range op.RequestBody.Content.FromOldest() {
			ov.BodyType = ct
			ov.Body = g.mediaExample(mt)
			if ct == "application/json" && ov.Body != "" {
				compact := new(bytes.Buffer)
				if json.Compact(compact, []byte(ov.Body)) == nil {
					curl += " \\\n  -H 'Content-Type: application/json' \\\n  -d '" + strings.ReplaceAll(compact.String(), "'", "'\\''") + "'"
				}
			}
			break
		}
	}
	if path == "/mcp" {
		curl += " \\\n  -H 'Accept: application/json, text/event-stream'"
	}
	ov.Curl = curl + " \\\n  '" + url + "'"
	if op.Responses != nil {
		for code, r := range op.Responses.Codes.FromOldest() {
			rv := respView{Status: code, Description: g.md(r.Description)}
			if r.Content != nil {
				for ct, mt := range r.Content.FromOldest() {
					rv.MediaType = ct
					if strings.Contains(ct, "json") {
						rv.Example = g.mediaExample(mt)
					}
					break
				}
			}
			ov.Responses = append(ov.Responses, rv)
		}
	}
	return ov
}

func schemaType(s *base.Schema) string {
	if s == nil {
		return ""
	}
	t := strings.Join(s.Type, " or ")
	if len(s.Enum) > 0 {
		var vals []string
		for _, n := range s.Enum {
			vals = append(vals, n.Value)
		}
		return t + ": " + strings.Join(vals, ", ")
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	if s.Minimum != nil && s.Maximum != nil {
		t += fmt.Sprintf(", %g–%g", *s.Minimum, *s.Maximum)
	}
	if s.Pattern != "" {
		t += ", pattern " + s.Pattern
	}
	return t
}

// mediaExample is the example of a media type: its own, else one built
// from its schema.
func (g *portalGen) mediaExample(mt *v3.MediaType) string {
	return g.render(g.mediaValue(mt))
}

// deliveryExample is the example of a webhook delivery of kind: the body's
// example, with the envelope's type set to kind, since kinds share one
// envelope schema whose type lists them all (ArticleEvent).
func (g *portalGen) deliveryExample(kind string, mt *v3.MediaType) string {
	v := g.mediaValue(mt)
	if o, ok := v.(ordered); ok {
		v = merge(o, ordered{{"type", kind}})
	}
	return g.render(v)
}

func (g *portalGen) mediaValue(mt *v3.MediaType) any {
	switch {
	case mt.Example != nil:
		return decodeNode(mt.Example)
	case mt.Examples != nil && mt.Examples.Len() > 0:
		for _, ex := range mt.Examples.FromOldest() {
			return decodeNode(ex.Value)
		}
	case mt.Schema != nil:
		return g.exampleOf(mt.Schema, 0)
	}
	return nil
}

// render writes an example as indented JSON with this instance's
// addresses, "" for none.
func (g *portalGen) render(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return g.expand(string(b))
}

// ordered is a JSON object that keeps the schema's property order.
type ordered []orderedField

type orderedField struct {
	key   string
	value any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeNode is the value of a YAML (JSON) node, its objects as ordered so
// that an example keeps the order it was written in and can be merged.
func decodeNode(n *yaml.Node) any {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		return decodeNode(n.Alias)
	case yaml.DocumentNode:
		if len(n.Content) == 1 {
			return decodeNode(n.Content[0])
		}
		return nil
	case yaml.MappingNode:
		o := ordered{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			o = merge(o, ordered{{n.Content[i].Value, decodeNode(n.Content[i+1])}}).(ordered)
		}
		return o
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, decodeNode(c))
		}
		return out
	}
	var v any
	if n.Decode(&v) != nil {
		return nil
	}
	return v
}

// merge combines the examples of two parts of an allOf, the later more
// specific: objects key by key, each key in the place it first had, a key
// both have taking the later value (merged again when both are objects),
// so no key is written twice; any other pair is the later value, unless it
// has none.
func merge(a, b any) any {
	ao, aok := a.(ordered)
	bo, bok := b.(ordered)
	if !aok || !bok {
		if b == nil {
			return a
		}
		return b
	}
	out := slices.Clone(ao)
	for _, f := range bo {
		if i := slices.IndexFunc(out, func(o orderedField) bool { return o.key == f.key }); i >= 0 {
			out[i].value = merge(out[i].value, f.value)
		} else {
			out = append(out, f)
		}
	}
	return out
}

// fromPattern makes a string that matches pattern, for a string schema
// with a pattern but no example: each part of the expression at its
// shortest (the first character of a class, a repeat's minimum, an
// alternation's first branch). It reports false when the pattern does not
// parse as a Go regular expression or the string made does not match it.
func fromPattern(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	var gen func(re *syntax.Regexp)
	gen = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			b.WriteString(string(re.Rune))
		case syntax.OpCharClass:
			if len(re.Rune) > 0 {
				b.WriteRune(re.Rune[0])
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('x')
		case syntax.OpCapture:
			gen(re.Sub[0])
		case syntax.OpPlus:
			gen(re.Sub[0])
		case syntax.OpRepeat:
			for range re.Min {
				gen(re.Sub[0])
			}
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				gen(sub)
			}
		case syntax.OpAlternate:
			gen(re.Sub[0])
		}
	}
	gen(re)
	out := b.String()
	if ok, err := regexp.MatchString(pattern, out); err != nil || !ok {
		return "", false
	}
	return out, true
}

// exampleOf builds an example value from a schema: its example, const,
// first enum value or default, else one built from its type, properties and
// items. Depth bounds recursive schemas.
func (g *portalGen) exampleOf(sp *base.SchemaProxy, depth int) any {
	if sp == nil || depth > 8 {
		return nil
	}
	s := sp.Schema()
	if s == nil {
		return nil
	}
	switch {
	case s.Example != nil:
		return decodeNode(s.Example)
	case len(s.Examples) > 0:
		return decodeNode(s.Examples[0])
	case s.Const != nil:
		return decodeNode(s.Const)
	case len(s.Enum) > 0:
		return decodeNode(s.Enum[0])
	case s.Default != nil:
		return decodeNode(s.Default)
	}
	if len(s.AllOf) > 0 {
		var merged any
		for _, part := range s.AllOf {
			merged = merge(merged, g.exampleOf(part, depth+1))
		}
		return merged
	}
	for _, alts := range [][]*base.SchemaProxy{s.OneOf, s.AnyOf} {
		if len(alts) > 0 {
			return g.exampleOf(alts[0], depth+1)
		}
	}
	typ := ""
	for _, t := range s.Type {
		if t != "null" {
			typ = t
			break
		}
	}
	if typ == "" && s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		o := ordered{}
		if s.Properties != nil {
			for name, p := range s.Properties.FromOldest() {
				o = append(o, orderedField{name, g.exampleOf(p, depth+1)})
			}
		}
		return o
	case "array":
		if s.Items != nil && s.Items.IsA() {
			if it := g.exampleOf(s.Items.A, depth+1); it != nil {
				return []any{it}
			}
		}
		return []any{}
	case "integer":
		if s.Minimum != nil {
			return int64(*s.Minimum)
		}
		return 0
	case "number":
		return 0
	case "boolean":
		return true
	case "string":
		switch s.Format {
		case "date-time":
			return "2026-01-05T09:00:00Z"
		case "uri":
			return g.site + "/"
		case "email":
			return "ops@example.com"
		}
		if ex, ok := fromPattern(s.Pattern); s.Pattern != "" && ok {
			return ex
		}
		return "string"
	}
	return nil
}
