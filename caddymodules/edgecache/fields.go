// A stored response's header fields, packed.

package edgecache

import (
	"net/http"
	"slices"
	"strings"
)

// fields is a stored response's header in three allocations: the names and
// values copied into one string, one array of value slices into it, and the
// list of fields. An http.Header kept per entry was a map, a []string per
// field and a string per value as net/textproto parsed them: 25 to 30
// objects a stored variant for the collector to mark in every cycle, which
// under make bench-traffic's full cache (tens of thousands of variants) made
// marking the largest part of the edge's CPU after the system calls
// (docs/edge-gateway.md, "Traffic"). A hit also walks a slice instead of a
// map.
//
// fields is immutable once packed: a hit hands its value slices to the
// response header as they are, each with its capacity clipped to its
// length, so that an Add further out (Vary) copies instead of writing into
// the entry.
type fields struct {
	list []field
}

// field is one header field: its canonical name and its values.
type field struct {
	name   string
	values []string
}

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
	for _, k := range names {
		b.WriteString(k)
		for _, v := range valuesOf(k) {
			b.WriteString(v)
		}
	}
	block := b.String()
	values := make([]string, nvalues)
	f := fields{list: make([]field, len(names))}
	at, vi := 0, 0
	for i, k := range names {
		f.list[i].name = block[at : at+len(k)]
		at += len(k)
		vs := valuesOf(k)
		for j, v := range vs {
			values[vi+j] = block[at : at+len(v)]
			at += len(v)
		}
		f.list[i].values = values[vi : vi+len(vs) : vi+len(vs)]
		vi += len(vs)
	}
	return f
}

// get returns the first value of the field named name (canonical), or "".
func (f fields) get(name string) string {
	for i := range f.list {
		if fd := &f.list[i]; fd.name == name && len(fd.values) > 0 {
			return fd.values[0]
		}
	}
	return ""
}

// header returns the fields as a new map, for the paths that change them
// (a revalidation, a coding made from the entry); the value slices are
// shared, clipped.
func (f fields) header(extra int) http.Header {
	h := make(http.Header, len(f.list)+extra)
	for i := range f.list {
		h[f.list[i].name] = f.list[i].values
	}
	return h
}

// cost is the memory the fields hold: the block, the value slices and the
// list, each rounded to its allocation.
func (f fields) cost() int64 {
	n := int64(len(f.list))*int64(fieldSize) + 3*allocSlack
	for i := range f.list {
		n += int64(len(f.list[i].name))
		for _, v := range f.list[i].values {
			n += int64(len(v)) + stringHeaderSize
		}
	}
	return n
}
