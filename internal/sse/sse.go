// Package sse reads server-sent event streams (WHATWG HTML §9.2, "Server-sent
// events") as a client does: incrementally, event by event, whatever the
// line endings (CRLF, LF or CR) and however the bytes are split into reads.
// Tests use it to read POST /ask streams through the origin and the edge.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
)

// Event is one dispatched event.
type Event struct {
	// Name is the event field, "message" when the event had none.
	Name string
	// Data is the event's data lines joined by "\n".
	Data string
	// ID is the last event ID seen so far in the stream.
	ID string
}

// Reader reads events from a stream.
type Reader struct {
	r *bufio.Reader
	// lastID persists across events (§9.2.6 "last event ID buffer").
	lastID string
	// pendingCR is set after a CR, so that an LF that follows it (possibly
	// in the next read) is not taken for a second, empty line.
	pendingCR bool
	started   bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReader(r)} }

// maxLine bounds one line, so a hostile stream cannot exhaust memory.
const maxLine = 1 << 20

// ErrLineTooLong is returned for a line longer than 1 MiB.
var ErrLineTooLong = errors.New("sse: line too long")

// line reads one line without its terminator.
func (rd *Reader) line() (string, error) {
	var b bytes.Buffer
	for {
		c, err := rd.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && b.Len() > 0 {
				// A last line without a terminator is discarded by the
				// spec's parser when the stream ends (an incomplete event).
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		if rd.pendingCR {
			rd.pendingCR = false
			if c == '\n' {
				continue
			}
		}
		if !rd.started {
			rd.started = true
			// A UTF-8 byte order mark at the very start is skipped.
			if c == 0xEF {
				bom, err := rd.r.Peek(2)
				if err == nil && bom[0] == 0xBB && bom[1] == 0xBF {
					rd.r.Discard(2)
					continue
				}
			}
		}
		switch c {
		case '\r':
			rd.pendingCR = true
			return b.String(), nil
		case '\n':
			return b.String(), nil
		}
		if b.Len() >= maxLine {
			return "", ErrLineTooLong
		}
		b.WriteByte(c)
	}
}

// Next returns the next event. It returns io.EOF at the end of the stream;
// an event cut off by the end of the stream is dropped, as browsers do.
func (rd *Reader) Next() (Event, error) {
	var name string
	var data []string
	hasData := false
	for {
		l, err := rd.line()
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			return Event{}, err
		}
		if l == "" {
			if !hasData {
				name = ""
				continue
			}
			if name == "" {
				name = "message"
			}
			return Event{Name: name, Data: strings.Join(data, "\n"), ID: rd.lastID}, nil
		}
		if l[0] == ':' {
			continue // a comment (keep-alives)
		}
		field, value, found := strings.Cut(l, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				rd.lastID = value
			}
		}
	}
}

// ReadAll reads every event until the end of the stream.
func ReadAll(r io.Reader) ([]Event, error) {
	rd := NewReader(r)
	var out []Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}
