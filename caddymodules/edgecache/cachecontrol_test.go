package edgecache

import (
	"net/http"
	"testing"
	"time"
)

func TestParseCacheControl(t *testing.T) {
	testCases := []struct {
		desc   string
		values []string
		check  func(cacheControl) bool
	}{
		{desc: "contract read", values: []string{"public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"}, check: func(c cacheControl) bool {
			return c.public && c.maxAge == 300*time.Second && c.sMaxAge == time.Hour && c.staleWhileRevalidate == 24*time.Hour && c.staleIfError == -1
		}},
		{desc: "case and spaces", values: []string{"  Max-Age = 10 ,NO-STORE"}, check: func(c cacheControl) bool { return c.maxAge == 10*time.Second && c.noStore }},
		{desc: "quoted value accepted", values: []string{`max-age="20"`}, check: func(c cacheControl) bool { return c.maxAge == 20*time.Second }},
		{desc: "malformed max-age is stale", values: []string{"max-age=abc"}, check: func(c cacheControl) bool { return c.maxAge == 0 }},
		{desc: "negative max-age is stale", values: []string{"max-age=-5"}, check: func(c cacheControl) bool { return c.maxAge == 0 }},
		{desc: "duplicates take the smaller", values: []string{"max-age=100", "max-age=10"}, check: func(c cacheControl) bool { return c.maxAge == 10*time.Second }},
		{desc: "overflow clamps", values: []string{"max-age=99999999999999999999999"}, check: func(c cacheControl) bool { return c.maxAge == maxDelta*time.Second }},
		{desc: "qualified no-cache with comma", values: []string{`no-cache="Set-Cookie, X-A", max-age=5`}, check: func(c cacheControl) bool { return c.noCache && c.maxAge == 5*time.Second }},
		{desc: "malformed stale window ignored", values: []string{"stale-while-revalidate=x"}, check: func(c cacheControl) bool { return c.staleWhileRevalidate == -1 }},
		{desc: "max-stale without value", values: []string{"max-stale"}, check: func(c cacheControl) bool { return c.maxStaleAny }},
		{desc: "garbage", values: []string{`,,,=,"",\,"unterminated`}, check: func(c cacheControl) bool { return c.maxAge == -1 && !c.noStore }},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			if cc := parseCacheControl(test.values); !test.check(cc) {
				t.Errorf("parseCacheControl(%q) = %+v", test.values, cc)
			}
		})
	}
}

func TestParseCacheControlNoAllocs(t *testing.T) {
	v := []string{"public, max-age=300, s-maxage=3600, stale-while-revalidate=86400"}
	if n := testing.AllocsPerRun(100, func() { parseCacheControl(v) }); n != 0 {
		t.Errorf("allocations %v; want 0", n)
	}
}

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	testCases := []struct {
		desc          string
		header        http.Header
		lifetime, age time.Duration
	}{
		{desc: "s-maxage wins", header: http.Header{"Cache-Control": {"max-age=10, s-maxage=20"}}, lifetime: 20 * time.Second},
		{desc: "max-age", header: http.Header{"Cache-Control": {"max-age=10"}}, lifetime: 10 * time.Second},
		{desc: "Expires minus Date", header: http.Header{"Date": {now.Add(-time.Minute).Format(http.TimeFormat)}, "Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, lifetime: time.Hour + time.Minute, age: time.Minute},
		{desc: "invalid Expires is in the past", header: http.Header{"Expires": {"0"}}, lifetime: 0},
		{desc: "upstream Age counts", header: http.Header{"Cache-Control": {"max-age=100"}, "Age": {"30"}}, lifetime: 100 * time.Second, age: 30 * time.Second},
		{desc: "bad Age is stale", header: http.Header{"Cache-Control": {"max-age=100"}, "Age": {"-3"}}, lifetime: 100 * time.Second, age: maxDelta * time.Second},
		{desc: "Age list is stale", header: http.Header{"Cache-Control": {"max-age=100"}, "Age": {"0, 0"}}, lifetime: 100 * time.Second, age: maxDelta * time.Second},
		{desc: "two Age lines are stale", header: http.Header{"Cache-Control": {"max-age=100"}, "Age": {"0", "7200"}}, lifetime: 100 * time.Second, age: maxDelta * time.Second},
	}
	for _, test := range testCases {
		t.Run(test.desc, func(t *testing.T) {
			lifetime, age := freshness(parseCacheControl(test.header["Cache-Control"]), test.header, now, now)
			if lifetime != test.lifetime || age != test.age {
				t.Errorf("lifetime %s age %s; want %s %s", lifetime, age, test.lifetime, test.age)
			}
		})
	}
}

func FuzzCacheControl(f *testing.F) {
	for _, s := range []string{"max-age=1", `no-cache="a,b", s-maxage=2`, "stale-while-revalidate=86400, stale-if-error=1", `"`, "max-age=99999999999999999999", "=,=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cc := parseCacheControl([]string{s})
		for _, d := range []time.Duration{cc.maxAge, cc.sMaxAge, cc.staleWhileRevalidate, cc.staleIfError, cc.maxStale, cc.minFresh} {
			if d < -1 || d > maxDelta*time.Second {
				t.Fatalf("parseCacheControl(%q) = %+v out of range", s, cc)
			}
		}
	})
}

func TestTargeted(t *testing.T) {
	got := targeted([]string{"max-age=10;invoicewire, no-store;othercdn", "stale-if-error=5"}, "Invoicewire")
	cc := parseCacheControl(got)
	if cc.maxAge != 10*time.Second || cc.noStore || cc.staleIfError != 5*time.Second {
		t.Errorf("targeted = %q → %+v", got, cc)
	}
}
