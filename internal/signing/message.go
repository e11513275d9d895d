package signing

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Component is one covered component identifier (RFC 9421 §2): a derived
// component such as "@authority" or a lowercase header field name such as
// "content-digest". Req marks a request component covered by a response's
// signature (the ;req parameter, §2.4). Key, when set, covers one member of
// a Dictionary Structured Field rather than the whole field (the ;key
// parameter, §2.1.2), as Web Bot Auth signers cover their own member of
// Signature-Agent.
type Component struct {
	Name string
	Req  bool
	Key  string
}

// Components is a shorthand for request components without parameters.
func Components(names ...string) []Component {
	out := make([]Component, len(names))
	for i, n := range names {
		out[i] = Component{Name: strings.ToLower(n)}
	}
	return out
}

func (c Component) item() httpsfv.Item {
	it := httpsfv.NewItem(c.Name)
	if c.Key != "" {
		it.Params.Add("key", c.Key)
	}
	if c.Req {
		it.Params.Add("req", true)
	}
	return it
}

// Message is the HTTP message a signature covers: a request, or a response
// together with the request it answers (which ;req components and the
// request-derived components of a response read).
type Message struct {
	// Request is the request, or the request a response answers.
	Request *http.Request
	// Status is the response's status; 0 means the message is Request.
	Status int
	// Header holds the response's header fields; unused for a request.
	Header http.Header
	// Authority, when set, is used for @authority instead of the request's
	// Host: a server behind a proxy signs with its public name.
	Authority string
	// Scheme, when set, is used for @scheme and @target-uri, for the same
	// reason (TLS may end at the proxy).
	Scheme string
}

func (m Message) isResponse() bool { return m.Status != 0 }

// fields returns the header fields the component is read from.
func (m Message) fields(c Component) (http.Header, error) {
	if !m.isResponse() || c.Req {
		if m.Request == nil {
			return nil, errors.New("signing: the message has no request")
		}
		return m.Request.Header, nil
	}
	return m.Header, nil
}

// Value is the value of component c in m, as the signature base holds it
// (RFC 9421 §2.1, §2.2).
func (m Message) Value(c Component) (string, error) { return m.value(c) }

// value resolves one component (RFC 9421 §2.1, §2.2).
func (m Message) value(c Component) (string, error) {
	if !strings.HasPrefix(c.Name, "@") {
		h, err := m.fields(c)
		if err != nil {
			return "", err
		}
		vals := h.Values(c.Name)
		if len(vals) == 0 {
			return "", fmt.Errorf("signing: covered header field %q is absent", c.Name)
		}
		if c.Key != "" {
			return dictionaryMember(vals, c)
		}
		// §2.1: strip leading and trailing whitespace from each field
		// line, then join the lines with ", ".
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = strings.TrimSpace(v)
		}
		return strings.Join(parts, ", "), nil
	}
	if c.Name == "@status" {
		if !m.isResponse() || c.Req {
			return "", errors.New("signing: @status is a response component")
		}
		return fmt.Sprintf("%03d", m.Status), nil
	}
	if m.isResponse() && !c.Req {
		return "", fmt.Errorf("signing: %s of a response must carry ;req", c.Name)
	}
	r := m.Request
	if r == nil {
		return "", errors.New("signing: the message has no request")
	}
	switch c.Name {
	case "@method":
		return r.Method, nil
	case "@authority":
		return m.authority(), nil
	case "@scheme":
		return m.scheme(), nil
	case "@target-uri":
		return m.scheme() + "://" + m.authority() + requestTarget(r), nil
	case "@request-target":
		return requestTarget(r), nil
	case "@path":
		p := r.URL.EscapedPath()
		if p == "" {
			p = "/"
		}
		return p, nil
	case "@query":
		// §2.2.7: an absent query is "?".
		return "?" + r.URL.RawQuery, nil
	}
	return "", fmt.Errorf("signing: component %q is not supported", c.Name)
}

// dictionaryMember is the value of one member of a Dictionary field, in its
// serialized form (RFC 9421 §2.1.2): parsed, then serialized again, so
// whitespace and the other members do not matter.
func dictionaryMember(vals []string, c Component) (string, error) {
	d, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return "", fmt.Errorf("signing: covered field %q is not a dictionary: %w", c.Name, err)
	}
	m, ok := d.Get(c.Key)
	if !ok {
		return "", fmt.Errorf("signing: covered field %q has no member %q", c.Name, c.Key)
	}
	one := httpsfv.NewDictionary()
	one.Add(c.Key, m)
	s, err := httpsfv.Marshal(one)
	if err != nil {
		return "", fmt.Errorf("signing: serializing member %q of %q: %w", c.Key, c.Name, err)
	}
	// A Boolean true member serializes as the bare key; the member's value
	// is then "?1".
	if s == c.Key {
		return "?1", nil
	}
	return strings.TrimPrefix(s, c.Key+"="), nil
}

func requestTarget(r *http.Request) string {
	p := r.URL.EscapedPath()
	if p == "" {
		p = "/"
	}
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	return p
}

func (m Message) scheme() string {
	switch {
	case m.Scheme != "":
		return strings.ToLower(m.Scheme)
	case m.Request.URL.Scheme != "":
		return strings.ToLower(m.Request.URL.Scheme)
	case m.Request.TLS != nil:
		return "https"
	}
	return "http"
}

// authority is §2.2.3: the host, lowercase, without the scheme's default port.
func (m Message) authority() string {
	a := m.Authority
	if a == "" {
		a = m.Request.Host
	}
	if a == "" {
		a = m.Request.URL.Host
	}
	a = strings.ToLower(a)
	if host, port, err := net.SplitHostPort(a); err == nil {
		if (port == "443" && m.scheme() == "https") || (port == "80" && m.scheme() == "http") {
			if strings.Contains(host, ":") {
				return "[" + host + "]"
			}
			return host
		}
	}
	return a
}

// innerList is the signature's @signature-params value (§2.3).
