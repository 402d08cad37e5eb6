package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/seal"
)

func keyOf(t *testing.T, b byte) seal.Key {
	t.Helper()
	k, err := seal.NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rowOf(c *Record, st Status, code string) *Row {
	now := time.Now()
	return &Row{Attempt: 1, Status: st, ErrorCode: code, Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID,
		InputDigest: c.InputDigest, IdempotencyKey: c.Key, StartedAt: now, EndedAt: now}
}

// Every state a sealed store writes on a call item carries its seal, in
// the same request: the record reads Valid with the writer's key, Forged
// with another function's, and Forged once another writer changes a
// sealed field (the result here) without the key.
func TestEveryStateWrittenIsSealedByItsWriter(t *testing.T) {
	plain, db := newStore(t)
	a, b := plain.WithMAC(keyOf(t, 1)), plain.WithMAC(keyOf(t, 2))
	ctx := context.Background()
	lease := time.Now().Add(time.Minute)
	check := func(what, key string, want seal.Status, s *Store) {
		t.Helper()
		r, err := s.Record(ctx, key)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.Seal != want {
			t.Fatalf("%s: seal %s, want %s", what, r.Seal, want)
		}
	}
	// claim, then finish COMPLETED
	c := claimOf("run-seal/1", lease)
	if ok, _, err := a.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("claimed", c.Key, seal.Valid, a)
	check("claimed, read by another function", c.Key, seal.Forged, b)
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"message_id":"m-1"}`), rowOf(c, StatusSucceeded, "")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("completed", c.Key, seal.Valid, a)
	check("completed, read by another function", c.Key, seal.Forged, b)
	check("completed, read by a store without a key", c.Key, seal.Forged, plain)
	// another writer changes the result
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a.Table()), Key: callKey("run-seal", "1"),
		UpdateExpression:          aws.String("SET #r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": "result"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: `{"message_id":"made-up"}`}}}); err != nil {
		t.Fatal(err)
	}
	check("result changed by another writer", c.Key, seal.Forged, a)

	// claim, finish FAILED, reclaim, MarkUnknown
	c2 := claimOf("run-seal/2", lease)
	if ok, _, err := a.Claim(ctx, c2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := a.Finish(ctx, c2.Key, c2.Token, StateFailed, nil, rowOf(c2, StatusFailed, "TOOL_TIMEOUT")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("failed", c2.Key, seal.Valid, a)
	old, _ := a.Record(ctx, c2.Key)
	if ok, err := a.Reclaim(ctx, old, lease); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("re-claimed", c2.Key, seal.Valid, a)
	if ok, err := a.MarkUnknown(ctx, old, "TOOL_RETRY_REQUIRES_IDEMPOTENCY"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("unknown", c2.Key, seal.Valid, a)

	// release
	c3 := claimOf("run-seal/3", lease)
	if ok, _, err := a.Claim(ctx, c3); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := a.Release(ctx, c3.Key, c3.Token, "TOOL_UPSTREAM_UNAVAILABLE", rowOf(c3, StatusRefused, "TOOL_UPSTREAM_UNAVAILABLE")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("released", c3.Key, seal.Valid, a)

	// a store without a key writes the previous layout
	c4 := claimOf("run-seal/4", lease)
	if ok, _, err := plain.Claim(ctx, c4); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("written without a key", c4.Key, seal.Absent, a)

	// a claim of an existing item keeps its seal (if_not_exists) and
	// answers with it checked
	if ok, existing, err := b.Claim(ctx, claimOf("run-seal/2", lease)); ok || err != nil || existing.Seal != seal.Forged {
		t.Fatalf("another function's claim of a sealed record: claimed %v, %v, existing %+v", ok, err, existing)
	}
	check("after another function's claim", c2.Key, seal.Valid, a)
}

// A finish whose answer was lost reads the record back; when another
// writer changed it meanwhile, the finish says so (ErrForged).
func TestAFinishReadBackRefusesAForgedRecord(t *testing.T) {
	plain, db := newStore(t)
	a := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	c := claimOf("run-seal-finish/1", time.Now().Add(time.Minute))
	if ok, _, err := a.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	row := rowOf(c, StatusSucceeded, "")
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), row); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// the same finish again (its answer lost): ours, valid
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), row); !ok || err != nil {
		t.Fatalf("finish sent again: %v %v", ok, err)
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a.Table()), Key: callKey("run-seal-finish", "1"),
		UpdateExpression: aws.String("REMOVE mac")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), row); err == nil || !errors.Is(err, ErrForged) {
		t.Fatalf("finish sent again after another writer removed the seal: %v, want ErrForged", err)
	}
}

// A claim of an item in the previous layout adds its own seal (the claim
// sets mac with if_not_exists); the record still reads Absent, not
// Forged, for that claim and every later read, so that the upgrade rule
// decides.
func TestAClaimOfAnUnsealedRecordLeavesItUnsealed(t *testing.T) {
	plain, _ := newStore(t)
	a := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	c := claimOf("run-seal-legacy/1", time.Now().Add(time.Minute))
	if ok, _, err := plain.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := plain.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), rowOf(c, StatusSucceeded, "")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	for i := range 2 {
		ok, existing, err := a.Claim(ctx, claimOf(c.Key, time.Now().Add(time.Minute)))
		if ok || err != nil || existing.Seal != seal.Absent || existing.State != StateCompleted {
			t.Fatalf("claim %d of a previous-layout record: claimed %v, %v, existing %+v, want it read Absent", i+1, ok, err, existing)
		}
	}
}
