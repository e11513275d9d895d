//go:build race

package ask

// underRace is true when the tests run under the race detector, as make
// test runs them. The detector slows work of one goroutine 10–25 times and
// has nothing to watch in it, so the heaviest single-goroutine tests draw
// fewer samples from smaller corpora then; each still covers the cases it
// names (a plain go test runs them at full size).
const underRace = true
