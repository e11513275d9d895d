package api

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// List bounds of GET /articles (the contract, docs/decisions.md (pagination)).
const (
	DefaultLimit = 25
	MaxLimit     = 100
	MaxOffset    = 10000
)

// ListQuery is a parsed and validated GET /articles query.
type ListQuery struct {
	Filter store.ArticleFilter
	Limit  int
	Offset int
	Cursor *store.Cursor
}

// ParseListQuery validates the query of GET /articles (docs/decisions.md, invalid query parameters): an unknown
// section or audience, a country that is not two lowercase letters, a limit
// outside 1..100 or an offset outside 0..10000 is a 400 whose hint names the
// allowed values. Unknown parameters are ignored. A parameter given twice is
// refused rather than guessed at.
func ParseListQuery(q url.Values) (ListQuery, error) {
	lq := ListQuery{Limit: DefaultLimit}
	one := func(name string) (string, bool, error) { return respond.Single(q, name) }
	enum := func(name string, allowed []string) (string, error) {
		v, ok, err := one(name)
		if err != nil || !ok {
			return "", err
		}
		if !slices.Contains(allowed, v) {
			return "", apierror.BadRequest("Unknown "+name+" "+strconv.Quote(truncate(v))+".", name+" must be one of: "+strings.Join(allowed, ", ")+".")
		}
		return v, nil
	}
	var err error
	if lq.Filter.Section, err = enum("section", content.Sections); err != nil {
		return lq, err
	}
	if lq.Filter.Audience, err = enum("audience", content.Audiences); err != nil {
		return lq, err
	}
	if v, ok, err := one("country"); err != nil {
		return lq, err
	} else if ok {
		if !IsCountryCode(v) {
			return lq, apierror.BadRequest("country must be a two-letter lowercase ISO 3166-1 alpha-2 code, got "+strconv.Quote(truncate(v))+".", "List the tracked countries at /api/v1/countries, e.g. country=de.")
		}
		lq.Filter.Country = v
	}
	if lq.Limit, err = intParam(one, "limit", 1, MaxLimit, DefaultLimit, ""); err != nil {
		return lq, err
	}
	// Deep pages are reached by cursor, which costs the same at any depth
	// (docs/decisions.md, pagination), so an offset past the bound says so.
	const deeper = " To page deeper, follow each page's next URL: it carries a cursor (cursor=...), which reaches any depth."
	if lq.Offset, err = intParam(one, "offset", 0, MaxOffset, 0, deeper); err != nil {
		return lq, err
	}
	if v, ok, err := one("cursor"); err != nil {
		return lq, err
	} else if ok {
		c, perr := store.ParseCursor(v)
		if perr != nil {
			return lq, apierror.BadRequest("The cursor is not one this service issued.", "Use the next URL of a previous page as it is, or start again without cursor.")
		}
		lq.Cursor = &c
	}
	return lq, nil
}

// intParam reads the integer parameter name, def when it is absent. The
// contract's integers are plain digits (docs/decisions.md, invalid query
// parameters): ParseInt would accept "+5". A value is judged by what it is,
// not by how it is written: leading zeros are digits like any other, and a
// value of any length past hi is out of range, with pastHi added to the hint.
func intParam(one func(string) (string, bool, error), name string, lo, hi, def int, pastHi string) (int, error) {
	v, ok, err := one(name)
	if err != nil || !ok {
		return def, err
	}
	hint := name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi) + "."
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, apierror.BadRequest(name+" is not a whole number in plain digits: "+strconv.Quote(truncate(v))+".", hint)
	}
	digits := strings.TrimLeft(v, "0")
	// More digits than hi has is past hi, whatever they are; the rest fit an int.
	if len(digits) > len(strconv.Itoa(hi)) {
		return 0, apierror.BadRequest(name+" "+truncate(v)+" is out of range.", hint+pastHi)
	}
	n, _ := strconv.Atoi("0" + digits)
	switch {
	case n > hi:
		return 0, apierror.BadRequest(name+" "+v+" is out of range.", hint+pastHi)
	case n < lo:
		return 0, apierror.BadRequest(name+" "+v+" is out of range.", hint)
	}
	return n, nil
}

// IsCountryCode reports whether s is two lowercase ASCII letters.
func IsCountryCode(s string) bool {
	return len(s) == 2 && s[0] >= 'a' && s[0] <= 'z' && s[1] >= 'a' && s[1] <= 'z'
}

// CountryCode is raw, a country code as a path gives it in either case, in
// lowercase, and whether it is one: two ASCII letters. strings.ToLower alone
// would also read the Kelvin sign (U+212A) as "k", a second spelling of a
// code that no redirect should lead from (docs/decisions.md, identifiers and
// links).
func CountryCode(raw string) (string, bool) {
	if len(raw) != 2 {
		return "", false
	}
	code := strings.ToLower(raw)
	return code, IsCountryCode(code)
}

// truncate keeps error messages short when a client sends a huge value.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
