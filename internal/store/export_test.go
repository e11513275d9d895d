package store

import "github.com/invoicewire/invoicewire/internal/content"

// RedactURL is redactURL, for the table of what it shows.
var RedactURL = redactURL

// SetWalkBudget sets walkBudget for a test and returns the function that
// restores it.
func SetWalkBudget(n int) (restore func()) {
	old := walkBudget
	walkBudget = n
	return func() { walkBudget = old }
}

// WeekCounters are the hashes of the week counters a listed article counts
// in, and its field in each.
func WeekCounters(a *content.Article) (keys []string, field string) {
	for _, wc := range articleWeeks(a) {
		keys = append(keys, wc.key)
		field = wc.field
	}
	return keys, field
}
