// Package logging builds the structured JSON logger every binary uses, and
// routes go-redis's own logger into it (README, "logs are JSON on stderr").
package logging

import (
	"io"
	"log/slog"
	"os"
)

// New returns a JSON logger on stderr at level ("debug", "info", "warn",
// "error") that names the process in every line.
func New(process, level string) *slog.Logger {
	return NewTo(os.Stderr, process, level)
}

// NewTo is New writing to w.
func NewTo(w io.Writer, process, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})
	return slog.New(h).With("process", process)
}
