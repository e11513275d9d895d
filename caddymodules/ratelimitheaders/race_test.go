//go:build race

package ratelimitheaders

// raceEnabled: the race detector multiplies the cost of every access, so
// the million-client tests count fewer clients under it.
const raceEnabled = true
