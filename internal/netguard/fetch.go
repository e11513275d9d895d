package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Fetcher GETs small documents from addresses that third parties name: a
// bot's key directory, an identity provider's JWKS. The same rules as for
// webhook deliveries apply, checked when the connection is dialled (after
// DNS resolution, so rebinding cannot slip through): https to public
// addresses, plain http only to addresses inside the policy's allow list.
// Redirects are never followed and only a 200 answer counts, so a document
// cannot send the fetcher on to another address; the body is bounded in
// size and the whole exchange in time.
type Fetcher struct {
	maxBytes int64
	timeout  time.Duration
	secure   *http.Client // https://: public addresses and the allow list
	plain    *http.Client // http://: the allow list only
}

// NewFetcher returns a Fetcher for policy p. timeout bounds one fetch
// (connect, headers and body); maxBytes bounds the body.
func NewFetcher(p Policy, timeout time.Duration, maxBytes int64) *Fetcher {
	client := func(httpOnlyAllowlisted bool) *http.Client {
		return &http.Client{
			Transport: &http.Transport{
				// No proxy from the environment: the dial checks must see
				// the real destination.
				Proxy:                 nil,
				DialContext:           p.Dialer(httpOnlyAllowlisted, timeout).DialContext,
				TLSHandshakeTimeout:   timeout,
				ResponseHeaderTimeout: timeout,
				MaxIdleConnsPerHost:   2,
				IdleConnTimeout:       30 * time.Second,
			},
			Timeout: timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return &Fetcher{maxBytes: maxBytes, timeout: timeout, secure: client(false), plain: client(true)}
}

// ErrTooLarge marks a document over the Fetcher's size bound.
var ErrTooLarge = errors.New("netguard: document too large")

// Document is a fetched document.
type Document struct {
	Body   []byte
	Header http.Header
}

// FreshFor is how long the document may be kept: its Cache-Control max-age
// (RFC 9111 §5.2.2.1) clamped to [minTTL, maxTTL]; no-store and no-cache
// give minTTL, no max-age gives fallback (also clamped).
func (d *Document) FreshFor(minTTL, maxTTL, fallback time.Duration) time.Duration {
	ttl := fallback
	for _, v := range d.Header.Values("Cache-Control") {
		for _, dir := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return minTTL
			case "max-age":
				if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
					ttl = time.Duration(min(n, int64(maxTTL/time.Second))) * time.Second
				}
			}
		}
	}
	return min(max(ttl, minTTL), maxTTL)
}

// Get fetches rawURL with the given Accept value. It returns the document
// of a 200 answer; any other status, a redirect included, is an error.
func (f *Fetcher) Get(ctx context.Context, rawURL, accept string) (*Document, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("netguard: %q is not an absolute URL without userinfo", rawURL)
	}
	c := f.secure
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		c = f.plain
	default:
		return nil, fmt.Errorf("netguard: %q is neither https nor http", rawURL)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("netguard: building the request for %s: %w", u.Redacted(), err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("netguard: fetching %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("netguard: fetching %s: status %d", u.Redacted(), resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("netguard: reading %s: %w", u.Redacted(), err)
	}
	if int64(len(body)) > f.maxBytes {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, u.Redacted(), f.maxBytes)
	}
	return &Document{Body: body, Header: resp.Header}, nil
}
