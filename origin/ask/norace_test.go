//go:build !race

package ask

// underRace: see race_test.go.
const underRace = false
