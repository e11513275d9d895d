//go:build race

package edgecache

// raceEnabled: under the race detector sync.Pool drops some of what it is
// given, so tests of what is pooled are skipped.
const raceEnabled = true
