package worker

import (
	"testing"
	"time"
)

// TestRetryDelayJitter: retryDelay spreads a step both below and above it,
// within ±jitter (docs/decisions.md, "Retries"), so that deliveries which
// failed together do not retry together and none waits far longer than
// its step. With 1,000 draws, the chance that none falls in the lower
// (or upper) quarter of the band is (3/4)^1000, about 1e-125.
func TestRetryDelayJitter(t *testing.T) {
	const step, draws = time.Second, 1000
	testCases := []struct {
		desc   string
		jitter float64
		spread bool // false: every draw is exactly the step
	}{
		{desc: "ten per cent", jitter: 0.1, spread: true},
		{desc: "half", jitter: 0.5, spread: true},
		{desc: "none", jitter: 0},
		{desc: "negative turns it off", jitter: -1},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			lo := time.Duration(float64(step) * (1 - tc.jitter))
			hi := time.Duration(float64(step) * (1 + tc.jitter))
			if !tc.spread {
				lo, hi = step, step
			}
			minD, maxD := time.Duration(1<<63-1), time.Duration(0)
			for range draws {
				d := retryDelay(step, tc.jitter)
				if d < lo || d > hi {
					t.Fatalf("retryDelay(%s, %g) = %s, outside [%s, %s]", step, tc.jitter, d, lo, hi)
				}
				minD, maxD = min(minD, d), max(maxD, d)
			}
			if !tc.spread {
				return
			}
			quarter := time.Duration(float64(step) * tc.jitter / 2)
			if minD >= step-quarter {
				t.Errorf("the shortest of %d delays is %s: never below %s", draws, minD, step-quarter)
			}
			if maxD <= step+quarter {
				t.Errorf("the longest of %d delays is %s: never above %s", draws, maxD, step+quarter)
			}
		})
	}
}
