package ledgertest

import (
	"context"
	"errors"
	"testing"

	"github.com/toolgate/toolgate/shared/ledger"
)

// RecordOrNil reads the record of key (ledger.Store.Record): nil when the
// key has none (ledger.ErrNotFound), failing t on any other error.
func RecordOrNil(t testing.TB, s *ledger.Store, key string) *ledger.Record {
	t.Helper()
	rec, err := s.Record(context.Background(), key)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("Record(%s): %v", key, err)
	}
	return rec
}

// RunRows reads the rows of runID (ledger.Store.RunRows), failing t with
// the error.
func RunRows(t testing.TB, s *ledger.Store, runID string) []ledger.Row {
	t.Helper()
	rows, err := s.RunRows(context.Background(), runID)
	if err != nil {
		t.Fatalf("RunRows(%s): %v", runID, err)
	}
	return rows
}
