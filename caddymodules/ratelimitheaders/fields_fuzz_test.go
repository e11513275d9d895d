package ratelimitheaders

import (
	"strconv"
	"testing"

	"github.com/dunglas/httpsfv"
)

// FuzzRateLimitFields builds the RateLimit field the way ServeHTTP does
// (a policy name serialised once by httpsfv, then r and t appended) for any
// policy name and values, and parses it back as a client would (RFC 9651):
// it must equal httpsfv's own serialisation and carry the same values.
func FuzzRateLimitFields(f *testing.F) {
	f.Add("default", int64(0), int64(1))
	f.Add("burst \"quoted\" \\", int64(999), int64(60))
	f.Add("", int64(1<<40), int64(86400))
	f.Add("ünïcode", int64(5), int64(5))
	f.Fuzz(func(t *testing.T, policy string, r, tt int64) {
		prefix, err := httpsfv.Marshal(httpsfv.NewItem(policy))
		if err != nil {
			return // Provision refuses such a policy name
		}
		if r < 0 || tt < 0 || r > 999_999_999_999_999 || tt > 999_999_999_999_999 {
			return // outside Integer's range (RFC 9651 §3.3.1); never produced
		}
		got := prefix + ";r=" + strconv.FormatInt(r, 10) + ";t=" + strconv.FormatInt(tt, 10)
		it := httpsfv.NewItem(policy)
		it.Params.Add("r", r)
		it.Params.Add("t", tt)
		want, err := httpsfv.Marshal(httpsfv.List{it})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("built %q; httpsfv %q", got, want)
		}
		l, err := httpsfv.UnmarshalList([]string{got})
		if err != nil || len(l) != 1 {
			t.Fatalf("%q does not parse back: %v", got, err)
		}
		back := l[0].(httpsfv.Item)
		br, _ := back.Params.Get("r")
		bt, _ := back.Params.Get("t")
		if back.Value != policy || br != r || bt != tt {
			t.Fatalf("%q parses to %v r=%v t=%v", got, back.Value, br, bt)
		}
	})
}
