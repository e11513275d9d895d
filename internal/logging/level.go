package logging

import (
	"context"
	"log/slog"
)

// AtLeast returns log restricted to records of level min and above, for a
// library that logs routine events at info: the MCP SDK writes three info
// lines for every stateless request (connecting, connected, disconnected),
// which at agent traffic would drown the process's own log. A nil log
// stays nil.
func AtLeast(log *slog.Logger, min slog.Level) *slog.Logger {
	if log == nil {
		return nil
	}
	return slog.New(minLevel{Handler: log.Handler(), min: min})
}

// minLevel is a handler that passes on records of level min and above.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
