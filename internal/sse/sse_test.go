package sse

import (
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// chunks yields its input in reads of the given sizes, cycling, so that
// line terminators (including the two bytes of CRLF) fall across reads.
type chunks struct {
	s     string
	sizes []int
	i     int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.s))
	c.i++
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}

func TestReadAll(t *testing.T) {
	want := []Event{
		{Name: "start", Data: `{"a":1}`},
		{Name: "result", Data: "line one\nline two"},
		{Name: "message", Data: "plain", ID: "7"},
		{Name: "complete", Data: "", ID: "7"},
	}
	lf := "event: start\ndata: {\"a\":1}\n\n" +
		": keep-alive comment\n\n" +
		"event: result\ndata: line one\ndata:line two\n\n" +
		"id: 7\ndata: plain\n\n" +
		"event: ignored-without-data\n\n" +
		"event: complete\ndata\n\n"
	testCases := []struct {
		desc   string
		stream string
	}{
		{desc: "LF", stream: lf},
		{desc: "CRLF", stream: strings.ReplaceAll(lf, "\n", "\r\n")},
		{desc: "CR", stream: strings.ReplaceAll(lf, "\n", "\r")},
		{desc: "byte order mark", stream: "\xEF\xBB\xBF" + lf},
		{desc: "trailing incomplete event is dropped", stream: lf + "event: cut\ndata: off"},
	}
	for _, tc := range testCases {
		for _, sizes := range [][]int{{1 << 20}, {1}, {2}, {3, 1, 7}, {5, 2}} {
			t.Run(tc.desc, func(t *testing.T) {
				got, err := ReadAll(&chunks{s: tc.stream, sizes: sizes})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("reads of %v:\n got %q\nwant %q", sizes, got, want)
				}
			})
		}
	}
}

// TestRandomSplits cuts a CRLF stream at random points many times.
func TestRandomSplits(t *testing.T) {
	var b strings.Builder
	var want []Event
	for i := range 50 {
		d := strings.Repeat("x", i)
		b.WriteString("event: result\r\ndata: " + d + "\r\n\r\n")
		want = append(want, Event{Name: "result", Data: d})
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		sizes := []int{1 + r.IntN(9), 1 + r.IntN(3), 1 + r.IntN(30)}
		got, err := ReadAll(&chunks{s: b.String(), sizes: sizes})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("reads of %v: %v, %d events", sizes, err, len(got))
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := ReadAll(iotest.ErrReader(errors.New("boom"))); err == nil {
		t.Error("a read error was swallowed")
	}
	if _, err := ReadAll(strings.NewReader("data: " + strings.Repeat("x", maxLine+1) + "\n\n")); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("an overlong line gave %v", err)
	}
}
