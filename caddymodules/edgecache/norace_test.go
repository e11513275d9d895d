//go:build !race

package edgecache

const raceEnabled = false
