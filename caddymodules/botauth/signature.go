package botauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/invoicewire/invoicewire/internal/signing"
)

// Tag is the signature tag of Web Bot Auth requests
// (draft-ietf-webbotauth-httpsig-protocol: tag="web-bot-auth").
const Tag = "web-bot-auth"

// DirectoryPath is where an agent's origin publishes its keys.
const DirectoryPath = "/.well-known/http-message-signatures-directory"

// maxValidity is the longest window between created and expires the edge
// accepts; the protocol draft recommends at most 24 hours.
const maxValidity = 24 * time.Hour

// maxAgentURL bounds the key-location URL a client may name.
const maxAgentURL = 2048

// candidate is the one Web Bot Auth signature of a request that the edge
// will try to verify, with where its key is found.
type candidate struct {
	sig *signing.Received
	// keysURL is the document holding the key: the agent's signatures
	// directory, or a JWKS named with type=jwks_uri.
	keysURL string
}

// errMalformed and errExpired classify why a request's signature is not
// even worth a key lookup.
var (
	errMalformed = errors.New("malformed")
	errExpired   = errors.New("outside its validity window")
)

// pick finds the request's Web Bot Auth signature and checks everything that
// needs no key (the protocol draft's requirements on a request signature):
// Signature-Agent as a Dictionary (label → URL, an optional type parameter)
// or, from older signers, a bare String; a signature tagged web-bot-auth
// whose label names a member of Signature-Agent; created and expires
// present, at most 24 h apart, and now within them give or take skew; a
// keyid; alg ed25519 when given; @authority or @target-uri covered, and
// Signature-Agent covered (whole, or the label's member with ;key). The
// error wraps errMalformed or errExpired.
func pick(h http.Header, now time.Time, skew time.Duration) (candidate, error) {
	agents, legacy, err := parseSignatureAgent(h.Values(signing.HeaderSignatureAgent))
	if err != nil {
		return candidate{}, err
	}
	sigs, err := signing.ReceivedSignatures(h)
	if err != nil {
		return candidate{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	for _, s := range sigs {
		if s.Params.Tag != Tag {
			continue
		}
		a, ok := agents[s.Label]
		if legacy != nil {
			a, ok = *legacy, true
		}
		if !ok {
			continue
		}
		if err := checkParams(s, legacy != nil, now, skew); err != nil {
			return candidate{}, err
		}
		return candidate{sig: s, keysURL: a}, nil
	}
	return candidate{}, fmt.Errorf("%w: no %q signature whose label is in Signature-Agent", errMalformed, Tag)
}

func checkParams(s *signing.Received, legacy bool, now time.Time, skew time.Duration) error {
	p := s.Params
	switch {
	case p.Created.IsZero() || p.Expires.IsZero():
		return fmt.Errorf("%w: created and expires are required", errMalformed)
	case !p.Expires.After(p.Created):
		return fmt.Errorf("%w: expires is not after created", errMalformed)
	case p.Expires.Sub(p.Created) > maxValidity:
		return fmt.Errorf("%w: valid for %s, more than %s", errExpired, p.Expires.Sub(p.Created), maxValidity)
	case now.Add(skew).Before(p.Created):
		return fmt.Errorf("%w: created %s is in the future", errExpired, p.Created.Format(time.RFC3339))
	case now.Add(-skew).After(p.Expires):
		return fmt.Errorf("%w: expired %s", errExpired, p.Expires.Format(time.RFC3339))
	case p.KeyID == "":
		return fmt.Errorf("%w: keyid is required", errMalformed)
	case p.Alg != "" && p.Alg != signing.Alg:
		return fmt.Errorf("%w: alg %q is not %q", errMalformed, p.Alg, signing.Alg)
	case !s.Covers(signing.Component{Name: "@authority"}) && !s.Covers(signing.Component{Name: "@target-uri"}):
		return fmt.Errorf("%w: neither @authority nor @target-uri is covered", errMalformed)
	}
	whole := signing.Component{Name: "signature-agent"}
	member := signing.Component{Name: "signature-agent", Key: s.Label}
	if !s.Covers(whole) && (legacy || !s.Covers(member)) {
		return fmt.Errorf("%w: Signature-Agent is not covered", errMalformed)
	}
	return nil
}

// parseSignatureAgent reads Signature-Agent: a Dictionary from label to the
// URL of the agent's key location, or the legacy bare String, told apart by
// the leading quote (the protocol draft's rule). For a dictionary it
// returns the keys URL per label; for the legacy form, legacy.
func parseSignatureAgent(values []string) (agents map[string]string, legacy *string, err error) {
	if len(values) == 0 {
		return nil, nil, fmt.Errorf("%w: no Signature-Agent", errMalformed)
	}
	if strings.HasPrefix(strings.TrimLeft(values[0], " \t"), `"`) {
		it, err := httpsfv.UnmarshalItem(values)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: Signature-Agent: %v", errMalformed, err)
		}
		s, ok := it.Value.(string)
		if !ok {
			return nil, nil, fmt.Errorf("%w: Signature-Agent is not a string", errMalformed)
		}
		u, err := keysURL(s, "directory")
		if err != nil {
			return nil, nil, err
		}
		return nil, &u, nil
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: Signature-Agent: %v", errMalformed, err)
	}
	agents = make(map[string]string, len(d.Names()))
	for _, label := range d.Names() {
		m, _ := d.Get(label)
		it, ok := m.(httpsfv.Item)
		s, isString := it.Value.(string)
		if !ok || !isString {
			continue
		}
		typ := "directory"
		if t, ok := it.Params.Get("type"); ok {
			tok, isToken := t.(httpsfv.Token)
			if !isToken {
				continue
			}
			typ = string(tok)
		}
		if u, err := keysURL(s, typ); err == nil {
			agents[label] = u
		}
	}
	return agents, nil, nil
}

// keysURL is the document to fetch for an agent URL of the given type: for
// a directory, which must be an origin, its well-known signatures
// directory; for jwks_uri, the URL itself. Other types (cimd) are not
// supported.
func keysURL(raw, typ string) (string, error) {
	if len(raw) > maxAgentURL {
		return "", fmt.Errorf("%w: Signature-Agent URL is longer than %d characters", errMalformed, maxAgentURL)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || u.Fragment != "" ||
		(u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("%w: Signature-Agent %q is not an absolute http(s) URL", errMalformed, raw)
	}
	switch typ {
	case "directory":
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return "", fmt.Errorf("%w: a directory Signature-Agent must be an origin, got %q", errMalformed, raw)
		}
		return u.Scheme + "://" + strings.ToLower(u.Host) + DirectoryPath, nil
	case "jwks_uri":
		return u.String(), nil
	}
	return "", fmt.Errorf("%w: Signature-Agent type %q is not supported", errMalformed, typ)
}
