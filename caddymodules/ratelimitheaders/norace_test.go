//go:build !race

package ratelimitheaders

const raceEnabled = false
