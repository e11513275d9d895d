package openapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/invoicewire/invoicewire/internal/events"
)

// TestEventCatalog checks the document's webhook deliveries against
// events.Catalog, the one table of event kinds: the EventKind enum, one
// webhook per kind with the catalog's summary and envelope schema, an
// envelope whose type and data match the kind, a data schema with exactly
// the JSON fields of the kind's Go payload type, and a synthetic delivery of
// each kind that validates against its envelope.
func TestEventCatalog(t *testing.T) {
	m := model(t)
	component := func(t *testing.T, name string) *base.Schema {
		t.Helper()
		sp := m.Components.Schemas.GetOrZero(name)
		if sp == nil {
			t.Fatalf("schema %s is missing", name)
		}
		return sp.Schema()
	}
	if got := enumOf(component(t, "EventKind")); !slices.Equal(got, events.Kinds) {
		t.Errorf("EventKind enum is %v, the catalog has %v", got, events.Kinds)
	}
	for name := range m.Webhooks.KeysFromOldest() {
		if !events.IsKind(name) {
			t.Errorf("webhooks.%s is not a kind of events.Catalog", name)
		}
	}
	validator := schema_validation.NewSchemaValidator()
	for _, k := range events.Catalog {
		t.Run(k.Name, func(t *testing.T) {
			item := m.Webhooks.GetOrZero(k.Name)
			if item == nil || item.Post == nil {
				t.Fatalf("webhooks.%s has no post operation", k.Name)
			}
			if item.Post.Summary != k.Summary {
				t.Errorf("summary %q, the catalog says %q", item.Post.Summary, k.Summary)
			}
			mt := item.Post.RequestBody.Content.GetOrZero("application/json")
			if mt == nil || componentName(mt.Schema) != k.Envelope {
				t.Fatalf("the request body is not application/json with schema %s", k.Envelope)
			}
			env := component(t, k.Envelope)
			if len(env.AllOf) != 2 || componentName(env.AllOf[0]) != "DeliveryEnvelope" {
				t.Fatalf("%s is not allOf [DeliveryEnvelope, {type, data}]", k.Envelope)
			}
			own := env.AllOf[1].Schema()
			typ := own.Properties.GetOrZero("type").Schema()
			kinds := enumOf(typ)
			if typ.Const != nil {
				kinds = append(kinds, typ.Const.Value)
			}
			if !slices.Contains(kinds, k.Name) {
				t.Errorf("%s allows the types %v, not %s", k.Envelope, kinds, k.Name)
			}
			if got := componentName(own.Properties.GetOrZero("data")); got != k.Data {
				t.Errorf("%s data is %q, the catalog says %s", k.Envelope, got, k.Data)
			}

			data := component(t, k.Data)
			props := slices.Sorted(data.Properties.KeysFromOldest())
			fields := jsonFields(k.Payload)
			slices.Sort(fields)
			if !slices.Equal(props, fields) {
				t.Errorf("%s has the properties %v, %s has the JSON fields %v", k.Data, props, k.Payload, fields)
			}
			for _, r := range data.Required {
				if !slices.Contains(fields, r) {
					t.Errorf("%s requires %s, which %s lacks", k.Data, r, k.Payload)
				}
			}

			e, err := events.Sample(k.Name, siteServer, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if ok, errs := validator.ValidateSchemaBytes(env, body); !ok {
				for _, ve := range errs {
					t.Errorf("the sample delivery %s: %s: %s", body, ve.Message, ve.Reason)
				}
			}
		})
	}
}

// TestArticleEventDataCarriesTheRetraction validates a retracted article's
// delivery data, with the fields only article.retracted carries, against
// the document.
func TestArticleEventDataCarriesTheRetraction(t *testing.T) {
	m := model(t)
	k, _ := events.Lookup(events.ArticleRetracted)
	e, err := events.Sample(k.Name, siteServer, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var data events.ArticleData
	if err := json.Unmarshal(e.Data, &data); err != nil {
		t.Fatal(err)
	}
	at := e.CreatedAt
	data.RetractedAt, data.RetractionReason = &at, "The source withdrew the report."
	body, _ := json.Marshal(data)
	schema := m.Components.Schemas.GetOrZero(k.Data).Schema()
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema, body); !ok {
		for _, ve := range errs {
			t.Errorf("%s: %s: %s", body, ve.Message, ve.Reason)
		}
	}
}

// componentName is the name of the component schema sp refers to, or "".
func componentName(sp *base.SchemaProxy) string {
	if sp == nil {
		return ""
	}
	name, ok := strings.CutPrefix(sp.GetReference(), "#/components/schemas/")
	if !ok {
		return ""
	}
	return name
}

// jsonFields lists the member names encoding/json gives a value of type t,
// following embedded structs as encoding/json does.
func jsonFields(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && tag == "":
			out = append(out, jsonFields(f.Type)...)
		case tag != "":
			out = append(out, tag)
		default:
			out = append(out, f.Name)
		}
	}
	return out
}
