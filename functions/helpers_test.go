package functions_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// recordOrNil reads the record of key through ledger.Store.Record: nil
// when the key has none (ledger.ErrNotFound), failing t on any other error.
func recordOrNil(t *testing.T, s *ledger.Store, key string) *ledger.Record {
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

// mustRunRows reads the rows of runID through ledger.Store.RunRows,
// failing t with the error (never an empty listing that hides it).
func mustRunRows(t *testing.T, s *ledger.Store, runID string) []ledger.Row {
	t.Helper()
	rows, err := s.RunRows(context.Background(), runID)
	if err != nil {
		t.Fatalf("RunRows(%s): %v", runID, err)
	}
	return rows
}

// mustGet reads review id through dynamo.Store.Get, failing t with the
// error (never a nil review to dereference).
func mustGet(t *testing.T, s *dynamo.Store, id string) *review.Review {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}
