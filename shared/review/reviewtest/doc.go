// Package reviewtest leaves reviews in a ledger table for tests, as the
// review functions would: an approved review of a call, and the envelope of
// that call carrying its approval.
package reviewtest
