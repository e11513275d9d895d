package respond

import (
	"net/http"
	"net/url"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// Query is r's query parameters, or a 400 when the query does not parse:
// a "%" not followed by two hex digits, or ";" between parameters (which
// RFC 3986 §3.4 leaves to the application and this service does not
// use). Go's URL.Query drops such a parameter silently, so
// ?section=%zz would list every section: an answer to another question
// than the one asked (docs/decisions.md, invalid query parameters).
func Query(r *http.Request) (url.Values, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, apierror.BadRequest("The query string is malformed: "+err.Error()+".",
			"Percent-encode each name and value (%25 for a literal %) and separate parameters with &.")
	}
	return v, nil
}

// Single is the value of the query parameter name, given at most once: ok
// is false when it is absent, and a parameter given more than once is a
// 400 rather than a guess at which value was meant (docs/decisions.md,
// invalid query parameters). The API's parameters and the pages' alike
// answer with these words.
func Single(q url.Values, name string) (v string, ok bool, err error) {
	vs, ok := q[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", false, apierror.BadRequest("Parameter "+name+" is given more than once.", "Give "+name+" at most once.")
	}
	return vs[0], true, nil
}
