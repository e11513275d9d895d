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
