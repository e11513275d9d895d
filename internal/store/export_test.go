package store

// SetWalkBudget sets walkBudget for a test and returns the function that
// restores it.
func SetWalkBudget(n int) (restore func()) {
	old := walkBudget
	walkBudget = n
	return func() { walkBudget = old }
}
