package logging_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/invoicewire/invoicewire/internal/logging"
)

// TestAtLeast: the restricted logger drops what is below its level, keeps
// the rest with the process's attributes, and so do loggers derived from it.
func TestAtLeast(t *testing.T) {
	var buf logging.Buffer
	log := logging.AtLeast(logging.NewTo(&buf, "origin", "debug"), slog.LevelWarn).With("component", "mcp")
	log.Info("server session connected")
	log.Debug("detail")
	log.Warn("client sent a bad message")
	got := buf.String()
	if strings.Contains(got, "connected") || strings.Contains(got, "detail") {
		t.Errorf("records below warn were written: %s", got)
	}
	if !strings.Contains(got, `"msg":"client sent a bad message"`) || !strings.Contains(got, `"process":"origin"`) || !strings.Contains(got, `"component":"mcp"`) {
		t.Errorf("the warning is missing or lost its attributes: %s", got)
	}
	if logging.AtLeast(nil, slog.LevelWarn) != nil {
		t.Error("AtLeast(nil) is not nil")
	}
}
