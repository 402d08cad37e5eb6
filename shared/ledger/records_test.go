package ledger

import (
	"context"
	"encoding/json"
	"github.com/toolgate/toolgate/shared/tool"
	"sync"
	"testing"
	"time"
)

func claimOf(key string, lease time.Time) *Record {
	_, seq, _ := splitKey(key)
	return &Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: "ts_00000000000000000000000000000000",
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: lease, ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/" + string(seq)}
}

// Of two claims of one key, exactly one takes it; the other reads the
// record the first wrote (IN_PROGRESS, its token), and both count as
// invocations of the call.
func TestClaimIsTakenOnce(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	key := "run-claim-once/1"
	lease := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	results := make([]bool, 2)
	claims := []*Record{claimOf(key, lease), claimOf(key, lease)}
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := s.Claim(ctx, claims[i])
			if err != nil {
				t.Error(err)
			}
			results[i] = ok
		}()
	}
	wg.Wait()
	if results[0] == results[1] {
		t.Fatalf("claims taken: %v, want exactly one", results)
	}
	winner := claims[0]
	if results[1] {
		winner = claims[1]
	}
	rec, err := s.Record(ctx, key)
	if err != nil || rec.State != StateInProgress || rec.Token != winner.Token || rec.Attempts != 1 {
		t.Fatalf("record %+v %v: want IN_PROGRESS with the winner's token", rec, err)
	}
}

// A finish must hold the current claim: the finish of an attempt that a
// later one took over (its lease ran out) changes nothing of the record,
// and records its row on its own attempt only; the current one's completes
// the record.
func TestFinishNeedsTheCurrentClaim(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	key := "run-finish-token/1"
	c := claimOf(key, time.Now().Add(-time.Second)) // its lease ran out
	if ok, _, err := s.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	old := mustRecord(t, s, key)
	if ok, err := s.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	row := func(n int) *Row {
		return &Row{Attempt: n, Status: StatusSucceeded, StartedAt: now, EndedAt: now, ExternalKey: c.ExternalKey}
	}
	if ok, err := s.Finish(ctx, key, c.Token, StateCompleted, json.RawMessage(`{"n":"stale"}`), row(1)); ok || err != nil {
		t.Fatalf("a stale attempt's finish: %v %v, want false", ok, err)
	}
	if rec := mustRecord(t, s, key); rec.State != StateInProgress || rec.Result != nil || rec.Attempts != 2 {
		t.Fatalf("after a stale finish: %+v", rec)
	}
	if rows := mustKeyRowsOf(t, s, "run-finish-token", "1"); len(rows) != 2 || rows[0].Status != StatusSucceeded || rows[1].Status != StatusInProgress {
		t.Fatalf("rows after a stale finish: %+v", rows)
	}
	if ok, err := s.Finish(ctx, key, old.Token, StateCompleted, json.RawMessage(`{"n":1}`), row(2)); err != nil || !ok {
		t.Fatalf("the current claim's finish: %v %v", ok, err)
	}
	if rec := mustRecord(t, s, key); rec.State != StateCompleted || string(rec.Result) != `{"n":1}` {
		t.Fatalf("after the finish: %+v", rec)
	}
}

func mustKeyRowsOf(t *testing.T, s *Store, run string, seq tool.Seq) []Row {
	t.Helper()
	rows, err := s.KeyRows(context.Background(), run, seq)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// After a lease expired, of two attempts that re-claim the record read as
// it was, exactly one takes it: the other's condition fails.
func TestReclaimIsTakenOnce(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	key := "run-reclaim-once/1"
	if ok, _, err := s.Claim(ctx, claimOf(key, time.Now().Add(-time.Second))); !ok || err != nil {
		t.Fatal(ok, err)
	}
	a := mustRecord(t, s, key)
	b := mustRecord(t, s, key)
	lease := time.Now().Add(time.Minute)
	okA, errA := s.Reclaim(ctx, a, lease)
	okB, errB := s.Reclaim(ctx, b, lease)
	if errA != nil || errB != nil || okA == okB {
		t.Fatalf("reclaims: %v %v / %v %v, want exactly one", okA, errA, okB, errB)
	}
	rec := mustRecord(t, s, key)
	if rec.Attempts != 2 || rec.Token != a.Token {
		t.Fatalf("record %+v: want attempt 2 with the winner's token %s", rec, a.Token)
	}
}

// mustRecord reads key's record, failing the test with the error when the
// read fails.
func mustRecord(t testing.TB, s *Store, key string) *Record {
	t.Helper()
	rec, err := s.Record(context.Background(), key)
	if err != nil {
		t.Fatalf("Record(%s): %v", key, err)
	}
	return rec
}
