// Package logging builds the structured JSON logger every binary uses.
package logging

import (
	"log/slog"
	"os"
)

// New returns a JSON logger at level ("debug", "info", "warn", "error") that
// names the process in every line.
func New(process, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	h := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})
	return slog.New(h).With("process", process)
}
