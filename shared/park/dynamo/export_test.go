package dynamo

// Item is the park item's Go type, for the test that checks it against
// its kind (table.Conform).
type Item = item
