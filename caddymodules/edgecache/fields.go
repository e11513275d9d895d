// A stored response's header fields, packed.

package edgecache

import (
	"net/http"
	"slices"
	"strings"
)

// fields is a stored response's header as one string holding every name
// and value, and two arrays of offsets into it, which is also how a record
// stores it (record.go). A hit makes the value strings from the offsets
// into one []string of its own (one allocation a response; substrings of
// block copy nothing).
//
// fields is immutable once packed.
type fields struct {
	block  string
	list   []fieldSpan
	values []span
	// shared, when not nil, are more fields of the response: a set many
	// responses have alike, held once by the cache's dictionary
	// (headerdict.go).
	shared *fields
}

// fieldSpan is one header field: where its canonical name is in block and
// which of values are its.
type fieldSpan struct {
	name         span
	first, count uint32
}

// span is a substring of block.
type span struct{ at, n uint32 }

func (f *fields) str(s span) string { return f.block[s.at : s.at+s.n] }

// packFields packs h's fields, except those skip reports. override, when
// not empty, is set in place of h's values of the same names (a nil value
// leaves the field out).
func packFields(h http.Header, skip func(name string) bool, override http.Header) fields {
	valuesOf := func(k string) []string {
		if vs, ok := override[k]; ok {
			return vs
		}
		return h[k]
	}
	names := make([]string, 0, len(h)+len(override))
	for k, vs := range h {
		if _, ok := override[k]; !ok && vs != nil && (skip == nil || !skip(k)) {
			names = append(names, k)
		}
	}
	for k, vs := range override {
		if vs != nil {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	size, nvalues := 0, 0
	for _, k := range names {
		size += len(k)
		for _, v := range valuesOf(k) {
			size += len(v)
		}
		nvalues += len(valuesOf(k))
	}
	var b strings.Builder
	b.Grow(size)
	f := fields{list: make([]fieldSpan, len(names)), values: make([]span, 0, nvalues)}
	for i, k := range names {
		f.list[i] = fieldSpan{name: span{uint32(b.Len()), uint32(len(k))}, first: uint32(len(f.values))}
		b.WriteString(k)
		for _, v := range valuesOf(k) {
			f.values = append(f.values, span{uint32(b.Len()), uint32(len(v))})
			b.WriteString(v)
		}
		f.list[i].count = uint32(len(f.values)) - f.list[i].first
	}
	f.block = b.String()
	return f
}

// setInto sets the fields in hdr, except those skip reports (nil: none).
// The value slices are the response's own, clipped to their length, so
// that an Add further out (Vary) copies instead of writing past them.
func (f *fields) setInto(hdr http.Header, skip func(name string) bool) {
	n := len(f.values)
	if f.shared != nil {
		n += len(f.shared.values)
	}
	values := make([]string, n)
	f.setPart(hdr, skip, values[:len(f.values)])
	if f.shared != nil {
		f.shared.setPart(hdr, skip, values[len(f.values):])
	}
}

// setPart is setInto for f's own fields, their values made in values.
func (f *fields) setPart(hdr http.Header, skip func(name string) bool, values []string) {
	for i, v := range f.values {
		values[i] = f.str(v)
	}
	for _, fd := range f.list {
		name := f.str(fd.name)
		if skip != nil && skip(name) {
			continue
		}
		end := fd.first + fd.count
		hdr[name] = values[fd.first:end:end]
	}
}

// header returns the fields as a new map, for the paths that change them
// (a revalidation, a coding made from the entry).
func (f *fields) header(extra int) http.Header {
	n := len(f.list) + extra
	if f.shared != nil {
		n += len(f.shared.list)
	}
	h := make(http.Header, n)
	f.setInto(h, nil)
	return h
}
