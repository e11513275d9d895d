package portal

// FromPattern is fromPattern, for the tests.
var FromPattern = fromPattern
