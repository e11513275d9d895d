package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// checkCommand runs iwctl with args and fails t unless it ends as told:
// with a usage error (exit 2) mentioning wantErr, with a failure (exit 1)
// mentioning failErr, or else without error; and, when want is given, with
// one output line per entry, each containing its entry. Neither the output
// nor the error may show any of secrets. It returns the output.
func checkCommand(ctx context.Context, t *testing.T, args, want []string, wantErr, failErr string, secrets ...string) string {
	t.Helper()
	var out bytes.Buffer
	err := run(ctx, args, &out)
	var ue usageError
	switch {
	case wantErr != "":
		if err == nil || !strings.Contains(err.Error(), wantErr) || !errors.As(err, &ue) {
			t.Fatalf("err = %v; want a usage error mentioning %q", err, wantErr)
		}
	case failErr != "":
		if err == nil || !strings.Contains(err.Error(), failErr) || errors.As(err, &ue) {
			t.Fatalf("err = %v; want a failure (not a usage error) mentioning %q", err, failErr)
		}
	case err != nil:
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(want) > 0 && len(lines) != len(want) {
		t.Fatalf("output %q: %d lines; want %d", out.String(), len(lines), len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Fatalf("line %d %q does not contain %q", i+1, lines[i], w)
		}
	}
	shown := out.String()
	if err != nil {
		shown += err.Error()
	}
	for _, s := range secrets {
		if strings.Contains(shown, s) {
			t.Fatalf("output %q shows the secret %q", shown, s)
		}
	}
	return out.String()
}
