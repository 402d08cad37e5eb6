package ledger

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

func claimOf(key string, lease time.Time) *Record {
	return &Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: "ts_00000000000000000000000000000000",
		InputDigest: "sha256:00", LeaseUntil: lease, ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1"}
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

// A finish must hold the current claim's token: a stale attempt's finish
// changes nothing, and the current one's completes the record.
func TestFinishNeedsTheCurrentToken(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	key := "run-finish-token/1"
	c := claimOf(key, time.Now().Add(time.Minute))
	if ok, _, err := s.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	row := func() *Row { return &Row{Attempt: 1, Status: StatusSucceeded, StartedAt: now, EndedAt: now} }
	// Refused: Finish reports false (and, since the token holds no
	// attempt of this call, that it could not record the row either).
	if ok, _ := s.Finish(ctx, key, "not-the-token", StateCompleted, json.RawMessage(`{"n":"stale"}`), row()); ok {
		t.Fatal("a stale token's finish was applied")
	}
	if rec := mustRecord(t, s, key); rec.State != StateInProgress || rec.Result != nil {
		t.Fatalf("after a stale finish: %+v", rec)
	}
	if ok, err := s.Finish(ctx, key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), row()); err != nil || !ok {
		t.Fatalf("the claim's own finish: %v %v", ok, err)
	}
	if rec := mustRecord(t, s, key); rec.State != StateCompleted || string(rec.Result) != `{"n":1}` {
		t.Fatalf("after the finish: %+v", rec)
	}
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
