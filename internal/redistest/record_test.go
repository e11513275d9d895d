package redistest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRecordListsTopLevelTests: what the cluster pass of make test runs is
// one line per top-level test that started the suite's Redis, however many
// of its subtests did, with the package's directory.
func TestRecordListsTopLevelTests(t *testing.T) {
	file := filepath.Join(t.TempDir(), "redis-tests")
	oldFile := recordFile
	recordFile = file
	recorded = sync.Map{}
	t.Cleanup(func() { recordFile = oldFile; recorded = sync.Map{} })

	for _, sub := range []string{"a", "b", "c/d"} {
		t.Run(sub, func(t *testing.T) { record(t) })
	}
	record(t)

	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading the record: %v", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := dir + " " + t.Name() + "\n"; string(got) != want {
		t.Errorf("record = %q, want %q", got, want)
	}
	if strings.Count(string(got), "\n") != 1 {
		t.Errorf("record has %d lines, want 1", strings.Count(string(got), "\n"))
	}
}
