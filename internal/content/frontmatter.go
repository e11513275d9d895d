package content

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// This file holds the fast path of article front matter: a parser for
// exactly the small part of YAML that article front matter uses (a block
// mapping of the Article's keys, one line each; plain, single-quoted and
// escape-free double-quoted scalars; block and flow sequences of such
// scalars; block sequences of the one-line mappings of sources and
// corrections). It accepts a front matter only when it is sure of what
// gopkg.in/yaml.v3 would make of it, and declines everything else, which
// then goes to yaml.v3 as before: the library stays the authority, and
// FuzzFrontMatterFastPath checks that whatever the fast path accepts,
// yaml.v3 decodes to the very same Article (docs/decisions.md, "Article
// front matter has a fast path, checked against yaml.v3"). yaml.v3 cost most of a first publish's CPU.

// timestampLayout is the first layout yaml.v3 tries for a plain scalar
// that looks like a date (resolve.go, allowedTimestampFormats); a value
// it parses is the library's value.
const timestampLayout = "2006-1-2T15:4:5.999999999Z07:00"

// fmLine is one line of a front matter: its indentation and the rest.
type fmLine struct {
	indent int
	text   []byte
}

// fastFrontMatter decodes front (the YAML between the --- lines) into a
// when it is within the subset described above, and reports whether it
// was. When it reports false, a is untouched and the caller decodes front
// with yaml.v3.
func fastFrontMatter(front []byte, a *Article) bool {
	p := fmParser{src: front}
	var out Article
	if !p.document(&out) {
		return false
	}
	*a = out
	return true
}

type fmParser struct {
	src []byte
	// cur is the line at hand; ok is false past the end.
	cur fmLine
	ok  bool
}

// next moves to the following non-empty line; it fails (returns false
// with p.ok true) on a line with anything but spaces for indentation.
func (p *fmParser) next() bool {
	for len(p.src) > 0 {
		var line []byte
		if i := bytes.IndexByte(p.src, '\n'); i >= 0 {
			line, p.src = p.src[:i], p.src[i+1:]
		} else {
			line, p.src = p.src, nil
		}
		if len(line) == 0 {
			continue // a blank line separates nothing in a block mapping
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n == len(line) {
			p.ok = true
			p.cur = fmLine{}
			return false // a line of spaces only: let the library judge
		}
		p.cur, p.ok = fmLine{indent: n, text: line[n:]}, true
		return true
	}
	p.ok = false
	return true
}

// document parses the whole front matter: keys at indentation 0.
func (p *fmParser) document(a *Article) bool {
	var seen uint32
	if !p.next() {
		return false
	}
	for p.ok {
		if p.cur.indent != 0 {
			return false
		}
		key, val, ok := splitKey(p.cur.text)
		if !ok {
			return false
		}
		bit, known := articleKeys[string(key)]
		if !known || seen&bit != 0 {
			return false // unknown or repeated keys are the library's errors to word
		}
		seen |= bit
		if !p.field(a, bit, val) {
			return false
		}
	}
	return seen != 0 // an empty document is io.EOF to the library
}

// The bits that number Article's YAML keys, one each: document marks
// the keys seen with them, and field picks the value's parser by them.
const (
	keySlug uint32 = 1 << iota
	keyTitle
	keyKicker
	keyDek
	keySection
	keyAudience
	keyCountries
	keyTags
	keySpecs
	keyLocale
	keyPublishedAt
	keyUpdatedAt
	keyImage
	keySources
	keyCorrections
)

// articleKeys numbers Article's YAML keys.
var articleKeys = map[string]uint32{
	"slug":         keySlug,
	"title":        keyTitle,
	"kicker":       keyKicker,
	"dek":          keyDek,
	"section":      keySection,
	"audience":     keyAudience,
	"countries":    keyCountries,
	"tags":         keyTags,
	"specs":        keySpecs,
	"locale":       keyLocale,
	"published_at": keyPublishedAt,
	"updated_at":   keyUpdatedAt,
	"image":        keyImage,
	"sources":      keySources,
	"corrections":  keyCorrections,
}

// field parses the value of the key numbered bit, whose text on the key's
// line is val, and moves past it.
func (p *fmParser) field(a *Article, bit uint32, val []byte) bool {
	var s *string
	var list *[]string
	switch bit {
	case keySlug:
		s = &a.Slug
	case keyTitle:
		s = &a.Title
	case keyKicker:
		s = &a.Kicker
	case keyDek:
		s = &a.Dek
	case keySection:
		s = &a.Section
	case keyLocale:
		s = &a.Locale
	case keyImage:
		s = &a.Image
	case keyAudience:
		list = &a.Audience
	case keyCountries:
		list = &a.Countries
	case keyTags:
		list = &a.Tags
	case keySpecs:
		list = &a.Specs
	case keyPublishedAt:
		t, ok := timestamp(val)
		a.PublishedAt = t
		return ok && p.next()
	case keyUpdatedAt:
		t, ok := timestamp(val)
		a.UpdatedAt = &t
		return ok && p.next()
	case keySources:
		return len(val) == 0 && p.items(func(k, v []byte, seen uint32) (uint32, bool) {
			if len(a.Sources) == 0 || seen == 0 {
				a.Sources = append(a.Sources, Citation{})
			}
			c := &a.Sources[len(a.Sources)-1]
			switch {
			case string(k) == "source" && seen&1 == 0:
				return seen | 1, scalarInto(&c.Source, v)
			case string(k) == "url" && seen&2 == 0:
				return seen | 2, scalarInto(&c.URL, v)
			}
			return seen, false
		})
	case keyCorrections:
		return len(val) == 0 && p.items(func(k, v []byte, seen uint32) (uint32, bool) {
			if len(a.Corrections) == 0 || seen == 0 {
				a.Corrections = append(a.Corrections, Correction{})
			}
			c := &a.Corrections[len(a.Corrections)-1]
			switch {
			case string(k) == "date" && seen&1 == 0:
				t, ok := timestamp(v)
				c.Date = t
				return seen | 1, ok
			case string(k) == "text" && seen&2 == 0:
				return seen | 2, scalarInto(&c.Text, v)
			case string(k) == "withdraws" && seen&4 == 0:
				return seen | 4, flowList(&c.Withdraws, v)
			}
			return seen, false
		})
	}
	if s != nil {
		return scalarInto(s, val) && p.next()
	}
	if len(val) > 0 {
		if !flowList(list, val) {
			return false
		}
		return p.next()
	}
	return p.stringItems(list)
}

// splitKey splits "key: value" or "key:" into the key and the value's
// text, trailing spaces dropped. A key is lowercase letters and
// underscores.
func splitKey(text []byte) (key, val []byte, ok bool) {
	i := 0
	for i < len(text) && (text[i] >= 'a' && text[i] <= 'z' || text[i] == '_') {
		i++
	}
	if i == 0 || i == len(text) || text[i] != ':' {
		return nil, nil, false
	}
	key, val = text[:i], text[i+1:]
	if len(val) > 0 && val[0] != ' ' {
		return nil, nil, false
	}
	return key, bytes.Trim(val, " "), true
}

// stringItems parses a block sequence of scalars under a key whose line
// ended at its colon.
func (p *fmParser) stringItems(list *[]string) bool {
	if !p.next() || !p.ok || !isItem(p.cur.text) {
		return false // a key with no value is null: the library's to decode
	}
	indent := p.cur.indent
	var out []string
	for p.ok && p.cur.indent == indent && isItem(p.cur.text) {
		var s string
		if !scalarInto(&s, bytes.Trim(p.cur.text[1:], " ")) {
			return false
		}
		out = append(out, s)
		if !p.next() {
			return false
		}
	}
	*list = out
	return !p.ok || p.cur.indent == 0
}

// isItem reports a block sequence entry: "- " and a value.
func isItem(text []byte) bool {
	return len(text) > 2 && text[0] == '-' && text[1] == ' '
}

// items parses a block sequence of one-line-per-key mappings under a key
// whose line ended at its colon: "- k: v" and then "  k: v" lines
// indented two more than the dash. set is told of each key and value with
// the keys seen so far in the entry (0 for an entry's first key) and
// returns them with its own added.
func (p *fmParser) items(set func(k, v []byte, seen uint32) (uint32, bool)) bool {
	if !p.next() || !p.ok || !isItem(p.cur.text) {
		return false
	}
	indent := p.cur.indent
	for p.ok && p.cur.indent == indent && isItem(p.cur.text) {
		text := p.cur.text[2:]
		if len(text) == 0 || text[0] == ' ' {
			return false // "-   k: v" sets the entry's indentation elsewhere
		}
		var seen uint32
		for {
			k, v, ok := splitKey(text)
			if !ok || len(v) == 0 {
				return false
			}
			if seen, ok = set(k, v, seen); !ok {
				return false
			}
			if !p.next() {
				return false
			}
			if !p.ok || p.cur.indent != indent+2 {
				break
			}
			text = p.cur.text
		}
	}
	return !p.ok || p.cur.indent == 0
}

// scalarInto sets *s to the string scalar val (a whole line's value):
// plain, single-quoted, or double-quoted without escapes.
func scalarInto(s *string, val []byte) bool {
	if len(val) == 0 || !printable(val) {
		return false
	}
	switch val[0] {
	case '\'':
		v, rest, ok := singleQuoted(val)
		if !ok || len(rest) != 0 {
			return false
		}
		*s = v
		return true
	case '"':
		v, rest, ok := doubleQuoted(val)
		if !ok || len(rest) != 0 {
			return false
		}
		*s = v
		return true
	}
	if !plainBlock(val) {
		return false
	}
	*s = string(val)
	return true
}

// plainBlock reports a value that yaml.v3 reads as a one-line plain
// scalar in block context, and as a string (not null) when decoded into
// one: it starts with no indicator, holds no ": " or " #", does not end in
// a colon and is not one of the spellings of null.
func plainBlock(v []byte) bool {
	switch v[0] {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	if bytes.Contains(v, []byte(": ")) || bytes.Contains(v, []byte(" #")) || v[len(v)-1] == ':' {
		return false
	}
	return !isNull(v)
}

// isNull reports yaml.v3's spellings of null (resolve.go).
func isNull(v []byte) bool {
	switch string(v) {
	case "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// printable reports text yaml.v3 takes as it is in a scalar: printable
// ASCII and UTF-8 characters that are neither control characters, nor
// line breaks (U+0085, U+2028, U+2029), nor the byte order mark.
func printable(v []byte) bool {
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(v[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return false
		case r < 0xa0, r == 0x2028, r == 0x2029, r == 0xfeff, r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff:
			return false
		}
		i += n
	}
	return true
}

// singleQuoted reads a single-quoted scalar at the start of v (two quotes
// stand for one) and returns it and what follows it.
func singleQuoted(v []byte) (string, []byte, bool) {
	var b []byte
	start := 1
	for i := 1; i < len(v); i++ {
		if v[i] != '\'' {
			continue
		}
		if i+1 < len(v) && v[i+1] == '\'' {
			b = append(b, v[start:i+1]...)
			start = i + 2
			i++
			continue
		}
		if b == nil {
			return string(v[1:i]), v[i+1:], true
		}
		return string(append(b, v[start:i]...)), v[i+1:], true
	}
	return "", nil, false
}

// doubleQuoted reads a double-quoted scalar without escapes at the start
// of v and returns it and what follows it.
func doubleQuoted(v []byte) (string, []byte, bool) {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			return "", nil, false
		case '"':
			return string(v[1:i]), v[i+1:], true
		}
	}
	return "", nil, false
}

// flowList parses "[a, b]" of plain or quoted scalars on one line.
func flowList(list *[]string, v []byte) bool {
	if v[0] != '[' || !printable(v) {
		return false
	}
	v = v[1:]
	out := []string{}
	for {
		v = bytes.TrimLeft(v, " ")
		if len(v) == 0 {
			return false
		}
		if v[0] == ']' && len(out) == 0 {
			v = v[1:]
			break
		}
		var s string
		switch v[0] {
		case '\'':
			q, rest, ok := singleQuoted(v)
			if !ok {
				return false
			}
			s, v = q, rest
		case '"':
			q, rest, ok := doubleQuoted(v)
			if !ok {
				return false
			}
			s, v = q, rest
		default:
			end := bytes.IndexAny(v, ",]")
			if end < 0 {
				return false
			}
			item := bytes.TrimRight(v[:end], " ")
			if !plainFlow(item) {
				return false
			}
			s, v = string(item), v[end:]
		}
		out = append(out, s)
		v = bytes.TrimLeft(v, " ")
		if len(v) == 0 {
			return false
		}
		if v[0] == ']' {
			v = v[1:]
			break
		}
		if v[0] != ',' {
			return false
		}
		v = v[1:]
	}
	if len(v) != 0 {
		return false
	}
	*list = out
	return true
}

// plainFlow reports an item of a flow sequence that yaml.v3 reads as a
// plain string: letters, digits, '.', '_', '-' and spaces inside, not
// starting with '-' and not null.
func plainFlow(v []byte) bool {
	if len(v) == 0 || v[0] == '-' || v[0] == ' ' {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ' ') {
			return false
		}
	}
	return !isNull(v)
}

// timestamp parses a plain scalar as yaml.v3 does a timestamp into a
// time.Time field, when its first layout takes it.
func timestamp(v []byte) (time.Time, bool) {
	// yaml.v3 tries a timestamp only for four digits and a dash.
	if len(v) < 5 || v[4] != '-' {
		return time.Time{}, false
	}
	for _, c := range v[:4] {
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(timestampLayout, string(v))
	return t, err == nil
}
