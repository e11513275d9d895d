package content

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// hostOf returns the lowercased host of an absolute URL.
func hostOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("%q has no host", raw)
	}
	return strings.ToLower(u.Hostname()), nil
}

// registrable returns the registrable domain (eTLD+1) of host. A host that is
// itself a public suffix, as www.gov.uk's parent gov.uk is, stands for
// itself.
func registrable(host string) string {
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}

// citationMatchesHomepage reports whether a cited page belongs to the
// publisher whose homepage is given: both hosts must share the registrable
// domain (so kpmg.com never matches kpmg.com.evil.example), and the cited
// host, "www." aside, must be the homepage host or a subdomain of it, so that
// globaltaxnews.ey.com is not filed under a taxnews.ey.com entry.
func citationMatchesHomepage(cited, homepage string) (bool, string) {
	ch, err := hostOf(cited)
	if err != nil {
		return false, "cited URL: " + err.Error()
	}
	hh, err := hostOf(homepage)
	if err != nil {
		return false, "homepage: " + err.Error()
	}
	if cr, hr := registrable(ch), registrable(hh); cr != hr {
		return false, "registrable domain " + cr + " is not the homepage's " + hr
	}
	// www.example.org and example.org name the same site.
	ch, hh = strings.TrimPrefix(ch, "www."), strings.TrimPrefix(hh, "www.")
	if ch != hh && !strings.HasSuffix(ch, "."+hh) {
		return false, "host " + ch + " is not " + hh + " or a subdomain of it"
	}
	return true, ""
}
