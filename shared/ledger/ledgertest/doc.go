// Package ledgertest reads a ledger table in tests, failing the test on any
// error a read returns rather than handing it an empty answer that hides
// it, and the ledger items testdata/ledger-items holds (Items).
package ledgertest
