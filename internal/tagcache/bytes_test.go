package tagcache

import (
	"bytes"
	"fmt"
	"testing"
)

func TestBytesPurgeDropClear(t *testing.T) {
	testCases := []struct {
		desc  string
		purge func(c *Bytes)
		gone  []string
		kept  []string
	}{
		{desc: "purge drops the entries of its tags only", purge: func(c *Bytes) { c.Purge([]string{"article:a"}) }, gone: []string{"/a", "/list"}, kept: []string{"/b"}},
		{desc: "drop drops the same entries", purge: func(c *Bytes) { c.Drop([]string{"article:a"}) }, gone: []string{"/a", "/list"}, kept: []string{"/b"}},
		{desc: "clear drops everything", purge: func(c *Bytes) { c.Clear() }, gone: []string{"/a", "/b", "/list"}},
		{desc: "a purge of another tag drops nothing", purge: func(c *Bytes) { c.Purge([]string{"article:c"}) }, kept: []string{"/a", "/b", "/list"}},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			c := NewBytes(1 << 20)
			gen := c.Generation()
			for key, tags := range map[string][]string{"/a": {"article:a"}, "/b": {"article:b"}, "/list": {"list", "article:a", "article:b"}} {
				if !c.Set([]byte(key), []byte("value of "+key), tags, gen) {
					t.Fatalf("Set(%s) refused", key)
				}
			}
			test.purge(c)
			for _, k := range test.gone {
				if v, ok := c.Get([]byte(k)); ok {
					t.Errorf("Get(%s) = %q after the purge, want a miss", k, v)
				}
			}
			for _, k := range test.kept {
				if v, ok := c.Get([]byte(k)); !ok || string(v) != "value of "+k {
					t.Errorf("Get(%s) = %q, %v, want its value", k, v, ok)
				}
			}
		})
	}
}

// TestBytesFillsAcrossPurges: a fill that read its data before a purge of
// one of its tags is refused, whenever it is stored; a Drop lets it store.
func TestBytesFillsAcrossPurges(t *testing.T) {
	testCases := []struct {
		desc   string
		purge  func(c *Bytes)
		stored bool
	}{
		{desc: "purge of its tag", purge: func(c *Bytes) { c.Purge([]string{"article:a"}) }, stored: false},
		{desc: "clear", purge: func(c *Bytes) { c.Clear() }, stored: false},
		{desc: "drop of its tag", purge: func(c *Bytes) { c.Drop([]string{"article:a"}) }, stored: true},
		{desc: "purge of another tag", purge: func(c *Bytes) { c.Purge([]string{"article:b"}) }, stored: true},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			c := NewBytes(1 << 20)
			gen := c.Generation()
			test.purge(c)
			if got := c.Set([]byte("/a"), []byte("old"), []string{"article:a"}, gen); got != test.stored {
				t.Errorf("Set after the purge = %v, want %v", got, test.stored)
			}
			if _, ok := c.Get([]byte("/a")); ok != test.stored {
				t.Errorf("Get after the purge found it = %v, want %v", ok, test.stored)
			}
		})
	}
}

// TestBytesLongValues stores values longer than freecache takes as one
// entry (a 1,024th of the cache), in parts.
func TestBytesLongValues(t *testing.T) {
	c := NewBytes(1 << 20) // one entry: up to 1,000 bytes
	long := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	key := []byte("/feed.xml")
	v1 := long(10_000, 'a')
	if !c.Set(key, v1, []string{"feed"}, c.Generation()) {
		t.Fatal("Set of a long value refused")
	}
	if got, ok := c.Get(key); !ok || !bytes.Equal(got, v1) {
		t.Fatalf("Get = %d bytes, %v, want the %d stored", len(got), ok, len(v1))
	}
	// A newer version replaces every part.
	v2 := long(7_000, 'b')
	c.Set(key, v2, []string{"feed"}, c.Generation())
	if got, ok := c.Get(key); !ok || !bytes.Equal(got, v2) {
		t.Fatalf("after a new version: Get = %d bytes, %v, want the %d stored", len(got), ok, len(v2))
	}
	// A value stored whole over parts.
	c.Set(key, []byte("short"), []string{"feed"}, c.Generation())
	if got, ok := c.Get(key); !ok || string(got) != "short" {
		t.Fatalf("after a short version: Get = %q, %v", got, ok)
	}
	// A lost part is a miss, not a wrong answer.
	c.Set(key, v1, []string{"feed"}, c.Generation())
	c.fc.Del(partKey(nil, key, 3))
	if got, ok := c.Get(key); ok {
		t.Fatalf("with a part lost: Get = %d bytes, want a miss", len(got))
	}
	// A part of another version of the same length is a miss too.
	c.Set(key, v1, []string{"feed"}, c.Generation())
	other := []byte(nil)
	for i := 1; ; i++ {
		part, err := c.fc.Get(partKey(nil, key, i))
		if err != nil {
			break
		}
		other = bytes.Repeat([]byte{'c'}, len(part))
		if err := c.fc.Set(partKey(nil, key, i), other, 0); err != nil {
			t.Fatal(err)
		}
		break
	}
	if other == nil {
		t.Fatal("no part stored")
	}
	if got, ok := c.Get(key); ok {
		t.Fatalf("with a part of another version: Get = %d bytes, want a miss", len(got))
	}
	// Purges reach long values.
	c.Set(key, v1, []string{"feed"}, c.Generation())
	c.Purge([]string{"feed"})
	if _, ok := c.Get(key); ok {
		t.Fatal("a purged long value is still found")
	}
}

// TestBytesGetCopies: what Get returns is the caller's; changing it changes
// nothing stored.
func TestBytesGetCopies(t *testing.T) {
	c := NewBytes(1 << 20)
	for _, n := range []int{10, 5000} {
		key := []byte(fmt.Sprint("/", n))
		want := bytes.Repeat([]byte{'x'}, n)
		c.Set(key, want, nil, c.Generation())
		got, _ := c.Get(key)
		clear(got)
		if again, ok := c.Get(key); !ok || !bytes.Equal(again, want) {
			t.Errorf("%d bytes: changing what Get returned changed the entry", n)
		}
	}
}
